"""Point-to-point through ``ompy run`` with the real PML, as a user runs an mpi4py program.

One suite, one parameter per transport (``self,tcp``, ``self,sm``, ``^sm`` and the default
selection) and job sizes from 1 to 8 ranks: each case launches one job that runs every call
(``programs/p2p_suite.py``) and a set of hypothesis-generated schedules.  Each job also runs
verbose, and its output proves which transport carried the traffic: the PML lists the modules
that reach every peer, and each tcp module reports at finalize how many bytes it received.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(240)

#: Sizes on both sides of the eager limits of sm (4 KiB) and tcp (128 KiB), and a rendezvous.
message = st.tuples(
    st.integers(0, 7),
    st.integers(0, 7),
    st.integers(0, 3),
    st.sampled_from([0, 1, 100, 4090, 70_000, 140_000, 300_000]),
)
schedules = st.lists(st.lists(message, min_size=1, max_size=12), min_size=6, max_size=6)

#: Every section of the suite; each rank must report checks from all of them.
SECTIONS = {
    "sizes",
    "wildcards",
    "modes",
    "completions",
    "objects",
    "probes",
    "truncation",
    "proc_null",
    "cancel",
    "errors",
    "comms",
    "schedules",
}
#: The output facility's prefix of a rank's line; the group is the pid.
PREFIX = r"^\[rank \d+ pid (\d+)\] "
ENDPOINTS = re.compile(PREFIX + r"pml ob1: (.*)$", re.MULTILINE)
ENDPOINT = re.compile(r"<BmlEndpoint to rank (\d+): ([^>]*)>")
TCP_BYTES = re.compile(PREFIX + r"btl tcp: (\S+): received (\d+) bytes$", re.MULTILINE)


VERBOSE = ("--mca", "pml_base_verbose", "10", "--mca", "btl_base_verbose", "20")


@attrs.frozen
class Transport:
    """How a case selects its BTLs, and the modules every peer must then be reached through."""

    name: str
    args: tuple[str, ...]
    peer_modules: tuple[str, ...]  # modules of the PML's endpoint to any other rank

    def __str__(self) -> str:
        return self.name


def mca(**params: object) -> tuple[str, ...]:
    """``--mca NAME VALUE`` arguments for ``ompy run``."""
    return tuple(arg for name, value in params.items() for arg in ("--mca", name, str(value)))


TCP = Transport("self,tcp", mca(btl="self,tcp"), ("tcp:lo:0", "tcp:eth0:0"))
STRIPED = Transport(
    "self,tcp striped over two loopback links",
    mca(btl="self,tcp", btl_tcp_if_include="lo", btl_tcp_links=2),
    ("tcp:lo:0", "tcp:lo:1"),
)
NO_SM = Transport("^sm", mca(btl="^sm"), ("tcp:lo:0", "tcp:eth0:0"))
SM = Transport("self,sm", mca(btl="self,sm"), ("sm",))
DEFAULT = Transport("default", (), ("sm",))

CASES = [
    (TCP, 1),
    (STRIPED, 2),
    (TCP, 5),
    (TCP, 8),
    (NO_SM, 3),
    (SM, 2),
    (SM, 8),
    (DEFAULT, 1),
    (DEFAULT, 4),
]


def reports(stdout: str) -> dict[int, dict]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    return found


def endpoints(stderr: str) -> dict[int, dict[int, list[str]]]:
    """pid -> peer rank -> the modules the PML reaches that peer through."""
    return {
        int(pid): {int(r): modules.split(", ") for r, modules in ENDPOINT.findall(listing)}
        for pid, listing in ENDPOINTS.findall(stderr)
    }


def tcp_bytes(stderr: str) -> dict[int, dict[str, int]]:
    """pid -> tcp module -> bytes it received."""
    found: dict[int, dict[str, int]] = {}
    for pid, module, count in TCP_BYTES.findall(stderr):
        found.setdefault(int(pid), {})[module] = int(count)
    return found


def interfaces_present(modules: tuple[str, ...]) -> set[str]:
    """The expected tcp modules that exist on this machine (no eth0 in some containers)."""
    from ompy.opal.net.interfaces import discover_interfaces

    names = {i.name for i in discover_interfaces() if not i.bridge}  # bridges are skipped
    return {m for m in modules if not m.startswith("tcp:") or m.split(":")[1] in names}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("transport", "size"), CASES, ids=[f"{t.name}-n{n}".replace(" ", "_") for t, n in CASES]
)
# One job per case; no shrinking (each step would be another job): a failure prints its schedule.
@settings(
    max_examples=1,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(schedule_set=schedules)
def test_every_call_with_random_schedules(transport, size, schedule_set, ompy):
    """One job checks every call, 0 B to 64 MiB, and six random schedules, over one transport."""
    path = ompy.tmpdir / "schedules.json"
    path.write_text(json.dumps(schedule_set))
    program = [sys.executable, str(PROGRAMS / "p2p_suite.py"), str(path)]
    result = ompy.run(
        ["-n", str(size), "--oversubscribe", *transport.args, *VERBOSE, *program], timeout=200
    )
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == list(range(size)), result.stdout
    for report in found.values():
        sections = {name.split(":")[0] for name in report["checks"]}
        assert sections == SECTIONS, f"rank {report['rank']} ran only {sorted(sections)}"
        assert f"sizes:{64 << 20}" in report["checks"]

    # Which transport carried the traffic: the PML's endpoint to each peer names its modules.
    routes = endpoints(result.stderr)
    assert len(routes) == size, result.stderr
    expected = interfaces_present(transport.peer_modules)
    for peers in routes.values():
        assert sorted(peers) == list(range(size))
        own = [rank for rank, modules in peers.items() if modules == ["self"]]
        assert len(own) == 1, peers
        others = {rank: set(modules) for rank, modules in peers.items() if rank != own[0]}
        assert all(modules == expected for modules in others.values()), peers
    received = tcp_bytes(result.stderr)
    if "sm" in expected:
        # tcp was opened (default selection) or not at all (self,sm), but carried nothing.
        assert all(count == 0 for counts in received.values() for count in counts.values())
    if transport is STRIPED:
        # Each rank received a 64 MiB message from its neighbour: both links carried a share.
        assert sorted(received) == sorted(routes)
        for counts in received.values():
            assert sorted(counts) == ["tcp:lo:0", "tcp:lo:1"]
            assert all(count >= 16 << 20 for count in counts.values()), received
