"""Topology communicators through ``ompy run``: every size from 1 to 5, over sm and tcp.

``programs/topo_suite.py`` builds Cartesian (1 to 3 dimensions, periodic and not), graph and
distributed-graph communicators on COMM_WORLD, checks every query against expectations
computed by hand and sends along the neighbours it was given.  One more job runs it with a
third-party-style topo component that reverses the ranks (installed on ``PYTHONPATH`` for the
job, selected with ``--mca topo reverse``), so reordering through a component is checked in
real processes.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "topo_suite.py"
pytestmark = pytest.mark.timeout(300)

TRANSPORTS = {
    "sm": ["--mca", "btl", "self,sm"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}

EXPECTED = (
    "compute_dims 2",
    "cart rank 2 True",
    "cart coords 3 False",
    "cart sendrecv 2 False",
    "cart neighbours 3 True",
    "cart too big",
    "cart mismatch",
    "graph neighbours",
    "graph sendrecv",
    "graph bad edge",
    "dist adjacent sendrecv",
    "dist general out",
    "dist bad rank",
)

REVERSE = '''
"""A topo component as a third party would write it: new rank = size - 1 - old rank."""

from ompy.ompi.constants import UNDEFINED
from ompy.ompi.mca.topo import TopoComponent, TopoModule
from ompy.opal.mca import Offer


def reverse(size, members):
    return [size - 1 - r if size - 1 - r < members else UNDEFINED for r in range(size)]


class ReverseModule(TopoModule):
    def cart_map(self, request):
        members = 1
        for extent in request.dims:
            members *= extent
        return reverse(request.size, members)

    def graph_map(self, request):
        return reverse(request.size, len(request.index))

    def dist_graph_map(self, request):
        return reverse(request.size, request.size)


class ReverseComponent(TopoComponent):
    name = "reverse"
    version = "1.0"
    default_priority = 50

    def query(self, context):
        return Offer(self.priority, ReverseModule())
'''


def run_suite(ompy, ranks, mca, env=None):
    args = ["-n", str(ranks), "--oversubscribe", *mca, sys.executable, str(PROGRAM)]
    result = ompy.run(args, timeout=280, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(ranks)), result.stdout
    for report in reports:
        for expected in EXPECTED:
            assert expected in report["passed"], (report["rank"], expected)
    return reports


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_the_topology_suite_passes(ompy, transport, ranks):
    run_suite(ompy, ranks, TRANSPORTS[transport])


def test_a_third_party_topo_component_reorders_the_ranks(ompy, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "topo_reverse_fixture.py").write_text(textwrap.dedent(REVERSE))
    info = site / "ompy_topo_reverse_fixture-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ompy-topo-reverse-fixture\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[ompy.mca.topo]\nreverse = topo_reverse_fixture:ReverseComponent\n"
    )
    env = {"PYTHONPATH": str(site), "TOPO_SUITE_REVERSED": "1"}
    run_suite(ompy, 3, [*TRANSPORTS["sm"], "--mca", "topo", "reverse"], env=env)
