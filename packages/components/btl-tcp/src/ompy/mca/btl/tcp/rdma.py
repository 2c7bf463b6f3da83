"""RDMA get over TCP: the regions a process registered, and the gets it has in flight.

A TCP socket cannot read the peer's memory, but it can avoid the copies that make a stream slow
in Python: the owner answers a GET by handing a view of the registered buffer to ``sendmsg``
(no copy on the way out), and the requester reads the reply with ``recv_into`` straight into the
destination of the get (no copy on the way in).

Registrations belong to the component, not to one module: a key names a region for every link of
this process, so a get striped over several links (modules) is served by each of them.  Keys are
never reused within a process, so a stale key is an error, not another buffer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ompy.opal.mca.btl import BtlError, MemHandle

GetCompletion = Callable[[BaseException | None], None]


class Registrations:
    """The regions this process offers to its peers' gets, by key."""

    def __init__(self) -> None:
        self.regions: dict[int, memoryview] = {}
        self._keys = itertools.count(1)

    def register(self, buffer: memoryview | bytes | bytearray) -> MemHandle:
        """A handle for ``buffer`` (which must stay unchanged until it is deregistered)."""
        view = memoryview(buffer)
        if not view.c_contiguous:
            raise BtlError("tcp: only contiguous buffers can be registered for get")
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        key = next(self._keys)
        self.regions[key] = view
        return MemHandle(key, len(view))

    def deregister(self, handle: MemHandle) -> None:
        if self.regions.pop(handle.key, None) is None:
            raise BtlError(
                f"tcp: memory handle {handle.key} is not registered (deregistered twice, or "
                "registered with another component)"
            )

    def region(self, key: int, offset: int, length: int) -> memoryview:
        """The registered bytes a peer asked for; ``BtlError`` (sent back to it) when invalid."""
        view = self.regions.get(key)
        if view is None:
            raise BtlError(
                f"no region is registered under key {key} (it was deregistered before the get, "
                "or the key is not from this process)"
            )
        if offset < 0 or length < 0 or offset + length > len(view):
            raise BtlError(
                f"bytes {offset}..{offset + length} are outside the {len(view)}-byte region "
                f"registered under key {key}"
            )
        return view[offset : offset + length]


class Get:
    """One ``get`` call: its completion runs once every part (one per link used) has finished."""

    __slots__ = ("completion", "error", "remaining")

    def __init__(self, parts: int, completion: GetCompletion | None) -> None:
        self.remaining = parts
        self.completion = completion
        self.error: BaseException | None = None

    def part_done(self, error: BaseException | None) -> None:
        if error is not None and self.error is None:
            self.error = error
        self.remaining -= 1
        if not self.remaining and self.completion is not None:
            self.completion(self.error)


class GetPart:
    """The share of a get one connection carries: where the reply lands, how much has arrived."""

    __slots__ = ("filled", "get", "id", "view")

    def __init__(self, get_id: int, view: memoryview, get: Get) -> None:
        self.id = get_id
        self.view = view
        self.filled = 0
        self.get = get


def split(length: int, weights: list[int], minimum: int) -> list[tuple[int, int]]:
    """``(offset, size)`` shares of ``length`` bytes over links weighted by ``weights``.

    Each share is at least ``minimum`` bytes (fewer links are used when ``length`` is short);
    the shares cover ``length`` exactly, in order.
    """
    count = max(1, min(len(weights), length // max(minimum, 1)))
    weights = [weight if weight > 0 else 1 for weight in weights[:count]]
    total = sum(weights)
    shares = []
    offset = 0
    for index, weight in enumerate(weights):
        size = length - offset if index == count - 1 else length * weight // total
        shares.append((offset, size))
        offset += size
    return shares
