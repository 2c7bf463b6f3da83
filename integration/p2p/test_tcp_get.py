"""Long messages over tcp travel by RDMA get: many at once, striped, and with a sender that dies.

The tcp BTL offers ``get``, so the PML sends a long message as RGET and the receiver pulls the
data (GET frames answered straight from the sender's buffer).  These jobs run that path through
``ompy run`` on one link and striped over two, and through the PML directly for a sender that
dies in the middle of a get (``ompy run`` would tear the whole job down instead).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(240)
TCP_BYTES = "btl tcp: tcp:lo:{link}: received"


@pytest.mark.slow
@pytest.mark.parametrize(("links", "size"), [(1, 2), (2, 3)], ids=["one-link-n2", "two-links-n3"])
def test_many_long_messages_in_flight_at_once_arrive_intact(links, size, ompy):
    result = ompy.run(
        [
            "-n",
            str(size),
            "--oversubscribe",
            *("--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"),
            *("--mca", "btl_tcp_links", str(links), "--mca", "btl_base_verbose", "20"),
            sys.executable,
            str(PROGRAMS / "tcp_gets.py"),
        ],
        timeout=200,
    )
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(r["rank"] for r in reports) == list(range(size)), result.stdout
    for link in range(links):  # every link carried its share of the gets, on every rank
        counts = [
            int(line.rsplit(" ", 2)[1])
            for line in result.stderr.splitlines()
            if TCP_BYTES.format(link=link) in line
        ]
        assert len(counts) == size, result.stderr
        assert all(count >= 16 << 20 for count in counts), (link, counts)


#: Two ranks through the PML directly (directory modex, no launcher): rank 1 sends 64 MiB and
#: exits while its reply to rank 0's get is only partly on the wire.
DYING_SENDER = textwrap.dedent(
    """
    import json, os, sys, time
    import numpy as np
    from ompy.ompi.datatype.buffer import parse_buffer
    from ompy.ompi.mca.pml import SendMode, framework
    from ompy.ompi.mca.pml.context import PmlContext
    from ompy.opal.mca import open_framework
    from ompy.opal.mca.btl import BtlContext
    from ompy.opal.mca.params import Registry
    from ompy.opal.modex import DirectoryModex
    from ompy.opal.proc import Proc
    from ompy.opal.progress import ProgressEngine

    class Comm:
        context_id, size, world_ranks, pml_state = 0, 2, (0, 1), None
        remote_world_ranks = (0, 1)

    rank, directory = int(sys.argv[1]), sys.argv[2]
    environ = {"OMPY_MCA_btl": "self,tcp", "OMPY_MCA_btl_tcp_if_include": "lo"}
    engine = ProgressEngine(spin_count=100)
    procs = [Proc("job", r) for r in range(2)]
    modex = DirectoryModex(directory, rank, 2, timeout=60)
    btl_context = BtlContext(procs[rank], modex, b"k" * 32, engine)
    opened = open_framework(framework, Registry(environ=environ, files=[]))
    context = PmlContext(procs[rank], procs, btl_context, Registry(environ=environ, files=[]))
    pml = opened.select_one(context)[1].module
    modex.fence()
    pml.add_procs(procs, range(2))
    comm = Comm()
    comm.rank = rank
    pml.add_comm(comm)
    size = 64 << 20
    if rank == 1:
        data = np.ones(size, np.uint8)
        pml.isend(parse_buffer(data), 0, 5, comm, SendMode.STANDARD)
        tcp = [m for m in pml.bml.btls if m.name.startswith("tcp")]
        def queued(ep):
            return sum(len(b) for entry in ep.queue for b in entry[0])
        def answering():
            return any(
                ep.conn is not None and queued(ep) > size // 2
                for m in tcp for ep in m.endpoints.values()
            )
        if not engine.wait_until(answering, timeout=60):
            sys.exit("rank 1 never started answering the get")
        os._exit(0)
    out = np.zeros(size, np.uint8)
    request = pml.irecv(parse_buffer(out, readonly=False), 1, 5, comm)
    start = time.monotonic()
    completed = engine.wait_until(lambda: request.complete, timeout=60)
    seconds = time.monotonic() - start
    report = {"completed": completed, "seconds": seconds, "error": request.error}
    print(json.dumps({**report, "exception": str(request.exception)}), flush=True)
    """
)


def test_a_receive_whose_sender_dies_during_the_get_fails_clearly_and_does_not_hang(tmp_path):
    program = tmp_path / "dying_sender.py"
    program.write_text(DYING_SENDER)
    ranks = [
        subprocess.Popen(
            [sys.executable, str(program), str(rank), str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    try:
        outputs = [process.communicate(timeout=120) for process in ranks]
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert ranks[1].returncode == 0, outputs[1][1]
    assert ranks[0].returncode == 0, outputs[0][1]
    report = json.loads(outputs[0][0])
    assert report["completed"], f"the receive never ended: {report}"
    assert report["seconds"] < 30, report
    assert report["error"] != 0, "the receive must fail: its data never fully arrived"
    message = report["exception"]
    assert "reading a 67108864-byte message from rank 1 over tcp:lo:0 failed" in message, message
    assert "without finalizing (did the process die?)" in message, message
