"""Every rank publishes its architecture in the modex, and every rank sees every other's.

Two 3-rank jobs, one simulated big-endian rank each: chosen with
``--mca opal_arch_byteorder big --mca opal_arch_byteorder_ranks 1`` (the launcher's way), and
with ``OMPY_MCA_opal_arch_byteorder`` set by rank 2's program itself before MPI initializes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ompy.opal.datatype.arch import Arch

PROGRAM = Path(__file__).parent / "programs" / "arch_report.py"
pytestmark = pytest.mark.timeout(240)

LOCAL = Arch.local()
BIG = LOCAL.with_byteorder("big")


def _reports(result) -> dict[int, dict]:
    assert result.returncode == 0, result.stderr
    reports = {}
    for line in result.stdout.splitlines():
        report = json.loads(line)
        reports[report["rank"]] = report
    assert sorted(reports) == [0, 1, 2], result.stdout + result.stderr
    return reports


def _check(reports: dict[int, dict], simulated: int) -> None:
    published = [BIG if rank == simulated else LOCAL for rank in range(3)]
    for rank, report in reports.items():
        assert [Arch.decode(bytes.fromhex(r)) for r in report["records"]] == published
        assert report["agree"] is True
        assert Arch.decode(bytes.fromhex(report["memory"])) == LOCAL
        # Receiver makes right: data from the big-endian rank needs converting, everywhere;
        # the simulated rank sends big-endian data, so it converts on the way out as well.
        foreign = ["big" if peer == simulated and BIG != LOCAL else None for peer in range(3)]
        assert report["foreign"] == foreign, rank
        big_out = rank == simulated and BIG != LOCAL
        assert report["outgoing"] == ("big" if big_out else None), rank


def test_the_launcher_makes_one_rank_big_endian(ompy):
    args = ["-n", "3", "--oversubscribe", "--mca", "opal_arch_byteorder", "big"]
    args += ["--mca", "opal_arch_byteorder_ranks", "1", sys.executable, str(PROGRAM)]
    _check(_reports(ompy.run(args, timeout=200)), simulated=1)


def test_a_program_sets_the_parameter_for_one_rank(ompy):
    args = ["-n", "3", "--oversubscribe", sys.executable, str(PROGRAM), "--env-rank", "2"]
    _check(_reports(ompy.run(args, timeout=200)), simulated=2)
