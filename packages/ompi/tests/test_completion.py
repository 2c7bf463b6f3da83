"""Completion records: a layer's callback added with ``chain`` runs after the engine's own."""

from __future__ import annotations

from ompy.ompi.completion import CoreRequest, chain


def test_chain_on_a_request_without_a_callback_runs_once_at_completion() -> None:
    request = CoreRequest()
    seen: list[CoreRequest] = []
    chain(request, seen.append)
    assert seen == []
    request.finish()
    request.finish()
    assert seen == [request]


def test_chain_keeps_the_earlier_callback_and_runs_it_first() -> None:
    request = CoreRequest()
    order: list[str] = []
    request.on_complete = lambda done: order.append("engine")
    chain(request, lambda done: order.append("first layer"))
    chain(request, lambda done: order.append("second layer"))
    request.finish()
    assert order == ["engine", "first layer", "second layer"]
