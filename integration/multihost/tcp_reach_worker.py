"""One of two ranks on two namespace hosts, talking through the BML and the tcp BTL.

``python tcp_reach_worker.py RANK DIR VOLUME PARAMS_JSON``: the two ranks meet through a
:class:`~ompy.opal.modex.DirectoryModex` in DIR (the hosts share the file system), say they run
on different nodes, select the BML (``btl=self,tcp``) as MPI's start does and add each other.
Each rank then sends VOLUME bytes through every module of its ``send`` array to the peer, waits
for all the peer's bytes, and prints one JSON line: which module pairs with which peer address
and with what weight, why the others do not reach the peer, and how many bytes each module
received.  A rank that cannot reach its peer prints the BML's error instead, and its peer says
so (both exit 0).
"""

from __future__ import annotations

import json
import struct
import sys
import time
from pathlib import Path

from ompy.ompi.mca.bml import BmlContext, BmlUnreachableError
from ompy.ompi.mca.bml.base import select_bml
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.mca.params import Registry
from ompy.opal.modex import DirectoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

DATA, TOTAL = TAG_USR, TAG_USR + 1
DEADLINE = 60.0


def main() -> None:
    rank, directory, volume = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    params = json.loads(sys.argv[4])
    environ = {"OMPY_MCA_btl": "self,tcp", "OMPY_MCA_btl_tcp_finalize_timeout": "5"}
    environ.update({f"OMPY_MCA_{k}": str(v) for k, v in params.items()})
    procs = [Proc("job", r, node_id=r, node_name=f"node{r}") for r in range(2)]
    engine = ProgressEngine(spin_count=50)
    modex = DirectoryModex(directory, rank, 2, timeout=DEADLINE)
    context = BtlContext(procs[rank], modex, b"m" * 32, engine, local_size=1, job_size=2)
    selected = select_bml(BmlContext(context, Registry(environ=environ, files=[])))
    bml = selected.module
    received: dict[str, int] = {}
    expected: list[int] = []

    def on_data(module, tag, view) -> None:
        received[module.name] = received.get(module.name, 0) + len(view)

    bml.register(DATA, on_data)
    bml.register(TOTAL, lambda module, tag, view: expected.append(struct.unpack("!Q", view)[0]))
    modex.commit()
    modex.fence()
    peer_proc = procs[1 - rank]
    try:
        peer = bml.add_procs(procs)[1 - rank]
    except BmlUnreachableError as error:
        outcome = {"rank": rank, "unreachable": str(error)}
    else:
        outcome = {}
    # Reachability need not be symmetric (a host may answer ARP for all its addresses on every
    # NIC): as MPI's start would, a rank that cannot reach its peer ends the run for both.
    (directory / f"added-{rank}-{'no' if outcome else 'ok'}").touch()
    deadline = time.monotonic() + DEADLINE
    while not any(directory.glob(f"added-{1 - rank}-*")):
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank {rank}: the peer never finished add_procs")
        time.sleep(0.01)
    if not outcome and (directory / f"added-{1 - rank}-no").exists():
        outcome = {"rank": rank, "peer_unreachable": True}
    if outcome:
        print(json.dumps(outcome), flush=True)
        selected.close()
        engine.close()
        return
    report = {
        "rank": rank,
        "send": [[b.module.name, b.weight, list(b.endpoint.address)] for b in peer.send],
        "reasons": {
            m.name: reason for m in bml.btls if (reason := m.unreachable_reason(peer_proc))
        },
    }
    chunk = memoryview(bytes(min(volume, 64 * 1024)))
    eager = peer.send[0]
    total = struct.pack("!Q", volume * len(peer.send))
    eager.send(eager.endpoint, eager.prepare_src(eager.endpoint, memoryview(total), 0), TOTAL)
    for btl in peer.send:
        left = volume
        while left:
            piece = chunk[: min(left, len(chunk))]
            descriptor = btl.prepare_src(btl.endpoint, piece, 0)
            while descriptor is None:  # free list empty: let queued sends finish
                engine.progress()
                descriptor = btl.prepare_src(btl.endpoint, piece, 0)
            btl.send(btl.endpoint, descriptor, DATA)
            left -= len(piece)
    done = engine.wait_until(
        lambda: bool(expected) and sum(received.values()) >= expected[0], timeout=DEADLINE
    )
    if not done:
        raise TimeoutError(f"rank {rank}: got {received} of {expected or '?'} bytes")
    report["received"] = received
    # Both ranks must have everything before either finalizes (a directory barrier).
    (directory / f"done-{rank}").touch()
    engine.wait_until((directory / f"done-{1 - rank}").exists, timeout=DEADLINE)
    time.sleep(0.1)
    selected.close()
    engine.close()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
