"""Module methods made from one algorithm: the blocking, nonblocking and persistent forms.

A component writes each collective once, as a schedule (:mod:`.schedule`) and, for the
persistent form, as a plan recorder (:mod:`.persistent`); its module's methods are then one
line each::

    class MyModule(CollModule):
        bcast = blocking(rooted.bcast)          # run in the caller
        ibcast = nonblocking(rooted.bcast)      # started on the progress engine
        bcast_init = planned(plans.bcast)      # a plan recorded once, replayed by each start

Each method takes ``(comm, *args)`` as the coll interface names them and bears the
algorithm's name (with the form's ``i`` or ``_init``) and docstring, so a module's table reads
as the list of what it serves.  The methods hold no state: a module that keeps some per
communicator (a neighbourhood, a workspace) writes those methods itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .persistent import PlanCollective, plan_collective
from .schedule import Schedule, run_schedule, start_schedule

_Method = TypeVar("_Method", bound=Callable[..., Any])


def blocking(algorithm: Callable[..., Any]) -> Callable[..., None]:
    """The blocking method of ``algorithm``: the schedule run in the caller."""

    def operation(self: Any, comm: Any, *args: Any) -> None:
        run_schedule(comm, algorithm, *args)

    return _named(operation, algorithm, algorithm.__name__)


def nonblocking(algorithm: Callable[..., Any]) -> Callable[..., Schedule]:
    """The nonblocking method of ``algorithm``: the schedule started, its request returned."""

    def operation(self: Any, comm: Any, *args: Any) -> Schedule:
        return start_schedule(comm, algorithm, *args)

    return _named(operation, algorithm, "i" + algorithm.__name__)


def planned(recorder: Callable[..., None]) -> Callable[..., PlanCollective]:
    """The persistent (``x_init``) method of ``recorder``: its plan, recorded once."""

    def operation(self: Any, comm: Any, *args: Any) -> PlanCollective:
        return plan_collective(comm, recorder, *args)

    return _named(operation, recorder, recorder.__name__ + "_init")


def _named(operation: _Method, algorithm: Callable[..., Any], name: str) -> _Method:
    operation.__name__ = name
    operation.__doc__ = algorithm.__doc__
    return operation
