"""Network utilities shared by the layers and components: this host's interfaces, reachability.

As Open MPI's ``opal/util/if`` and ``reachable`` framework: the tcp BTL pairs and probes with
them, and ``ompy doctor`` uses the same code on every host it checks, so what the doctor reports
is what a job will see.
"""

from __future__ import annotations

from .interfaces import (
    Interface,
    discover_interfaces,
    matches,
    parse_entry,
    select_interfaces,
    unmatched,
)
from .reach import Probe, Reachability, Verdict, bind_device
from .stack import same_stack, stack_identity

__all__ = [
    "Interface",
    "Probe",
    "Reachability",
    "Verdict",
    "bind_device",
    "discover_interfaces",
    "matches",
    "parse_entry",
    "same_stack",
    "select_interfaces",
    "stack_identity",
    "unmatched",
]
