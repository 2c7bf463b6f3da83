"""Glue of the coll framework: selection per communicator, the schedule engine, shared helpers.

For the API layer::

    comm.coll = comm_select(comm)          # on communicator creation (Communicator.create)
    comm_unselect(comm)                    # on Comm.Free / Finalize
    comm.instance.coll.finalize()          # at Finalize: what is left, then the components
    comm.coll.allreduce(comm, sendspec, recvspec, op)

For component authors, an algorithm written once as a schedule serves both forms::

    from ompy.ompi.mca.coll.base import run_schedule, start_schedule, send, recv, combine

    def linear_barrier(comm, tag):          # a generator of rounds (see .schedule)
        ...
        yield [recv(comm, empty, peer, tag) for peer in others]

    class MyModule(CollModule):
        def barrier(self, comm):
            run_schedule(comm, linear_barrier)
        def ibarrier(self, comm):
            return start_schedule(comm, linear_barrier)

A component that drives point-to-point itself (without schedules) takes one tag per call from
:func:`next_tag`.
"""

from __future__ import annotations

from .helpers import (
    binomial_children,
    binomial_parent,
    block_view,
    byte_spec,
    combine,
    copy,
    recv,
    region,
    scratch,
    send,
    subtree_size,
)
from .methods import blocking, nonblocking, planned
from .neighborhood import Neighborhood, neighborhood
from .objects import (
    Failure,
    Outcome,
    Sent,
    copy_object,
    encode_object,
    finish_recv,
    receive,
    recv_object,
    recv_stream,
    send_encoded,
    send_object,
    wait,
    wait_all,
)
from .persistent import Phase, Plan, PlanBuilder, PlanCollective, PlanRun, plan_collective
from .schedule import Algorithm, Schedule, in_flight, run_schedule, start_schedule, track
from .select import CollSelection, comm_select, comm_unselect
from .table import CollTable, Provider, build_table, unselected_table
from .tags import FIRST_TAG, LAST_TAG, TAGS, claim_tag, next_tag

__all__ = [
    "FIRST_TAG",
    "LAST_TAG",
    "TAGS",
    "Algorithm",
    "CollSelection",
    "CollTable",
    "Failure",
    "Neighborhood",
    "Outcome",
    "Phase",
    "Plan",
    "PlanBuilder",
    "PlanCollective",
    "PlanRun",
    "Provider",
    "Schedule",
    "Sent",
    "binomial_children",
    "binomial_parent",
    "block_view",
    "blocking",
    "build_table",
    "byte_spec",
    "claim_tag",
    "combine",
    "comm_select",
    "comm_unselect",
    "copy",
    "copy_object",
    "encode_object",
    "finish_recv",
    "in_flight",
    "neighborhood",
    "next_tag",
    "nonblocking",
    "plan_collective",
    "planned",
    "receive",
    "recv",
    "recv_object",
    "recv_stream",
    "region",
    "run_schedule",
    "scratch",
    "send",
    "send_encoded",
    "send_object",
    "start_schedule",
    "subtree_size",
    "track",
    "unselected_table",
    "wait",
    "wait_all",
]
