"""Every point-to-point call of the API in one job of any size; prints one JSON report per rank.

Run as ``ompy run -n N python p2p_suite.py SCHEDULES.json [LARGEST]``.  The program adapts to
its size (a single rank talks to itself); every rank checks what it received and reports the
names of its checks (``section:detail``), so a failure names the call and a missing section shows
that part never ran.  Payloads are position-dependent patterns, so a lost, duplicated or
reordered fragment cannot go unnoticed.
"""

import json
import os
import sys

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
checked = []
LARGEST = int(sys.argv[2]) if len(sys.argv) > 2 else 64 << 20
#: 0 B to LARGEST, with both sides of the eager limits of sm (4 KiB and 64 KiB) and tcp (128 KiB
#: of data and 64 bytes of header room: 128 KiB + 48 is its longest eager message with ob1's
#: 16-byte MATCH header).
SIZES = sorted(
    {0, 1, 1000, 4095, 4096, 4097, 65535, 65536, 65537, 131120, 131121, 1 << 20, LARGEST}
)


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"rank {rank}: {name} failed {detail}")
    checked.append(name)


def pattern(nbytes, seed):
    """Bytes that differ at every offset modulo a prime: misplaced fragments show."""
    block = np.random.default_rng(seed).integers(0, 256, 4099, dtype=np.uint8)
    return np.resize(block, nbytes)


def raises(error_class, call, *args):
    try:
        call(*args)
    except MPI.Exception as error:
        return error.Get_error_class() == error_class
    return False


def sizes():
    for index, nbytes in enumerate(SIZES):
        out = pattern(nbytes, rank * 100 + index)
        got = np.empty(nbytes, dtype=np.uint8)
        status = MPI.Status()
        comm.Sendrecv(out, right, index, got, left, index, status)
        check(
            f"sizes:{nbytes}",
            np.array_equal(got, pattern(nbytes, left * 100 + index))
            and status.Get_count(MPI.BYTE) == nbytes
            and (status.Get_source(), status.Get_tag()) == (left, index),
        )
        del out, got


def wildcards():
    # Every rank (the root too) sends five to rank 0, which takes them in any order of sources
    # but must see each source's messages in the order they were sent.
    sends = [comm.Isend(np.array([rank, i], dtype="i"), 0, 100 + rank + i) for i in range(5)]
    if rank == 0:
        seen = {}
        for _ in range(size * 5):
            value = np.zeros(2, dtype="i")
            status = MPI.Status()
            comm.Recv(value, MPI.ANY_SOURCE, MPI.ANY_TAG, status)
            seen.setdefault(status.source, []).append((status.tag, value.tolist()))
        want = {p: [(100 + p + i, [p, i]) for i in range(5)] for p in range(size)}
        check("wildcards:any source and tag, in order per source", seen == want, str(seen))
    MPI.Request.Waitall(sends)
    comm.Barrier()  # rank 0's wildcard receives are done
    # A specific tag skips earlier messages; ANY_TAG then takes the rest in send order.
    sends = [comm.Isend(np.array([i], dtype="i"), right, tag) for i, tag in enumerate((7, 5, 3))]
    got = [np.zeros(1, dtype="i") for _ in range(3)]
    status = MPI.Status()
    comm.Recv(got[0], MPI.ANY_SOURCE, 5, status)
    check("wildcards:specific tag skips", got[0][0] == 1 and status.source == left)
    tags = []
    for buffer in got[1:]:
        comm.Recv(buffer, left, MPI.ANY_TAG, status)
        tags.append(status.tag)
    check("wildcards:any tag in order", tags == [7, 3] and [g[0] for g in got] == [1, 0, 2])
    MPI.Request.Waitall(sends)


def modes():
    MPI.Attach_buffer(bytearray(1 << 20))
    buf = np.arange(1000, dtype="d") + rank
    recvs = [comm.Irecv(np.empty(1000), left, tag) for tag in range(10, 16)]
    comm.Barrier()  # every receive is posted: ready sends are allowed
    comm.Ssend(buf, right, 10)
    comm.Issend(buf, right, 11).Wait()
    comm.Rsend(buf, right, 12)
    comm.Irsend(buf, right, 13).Wait()
    comm.Bsend(buf, right, 14)
    comm.Ibsend(buf, right, 15).Wait()
    statuses = []
    MPI.Request.Waitall(recvs, statuses)
    check("modes:every send mode", [s.tag for s in statuses] == list(range(10, 16)))
    # Persistent requests of every mode, restarted with new contents each round.
    got = np.empty(1000)
    precv = comm.Recv_init(got, left, 20)
    for init in (comm.Send_init, comm.Ssend_init, comm.Bsend_init, comm.Rsend_init):
        psend = init(buf, right, 20)
        for round_ in range(2):
            buf[0] = round_
            precv.Start()
            comm.Barrier()  # the receive is posted (for Rsend_init)
            MPI.Prequest.Startall([psend])
            MPI.Request.Waitall([psend, precv])
            check(f"modes:persistent {init.__name__}", got[0] == round_ and got[1] == left + 1)
        psend.Free()
    precv.Free()
    MPI.Detach_buffer()
    data = pattern(70_000, rank)
    status = MPI.Status()
    comm.Sendrecv_replace(data, right, 21, left, 21, status)
    check("modes:Sendrecv_replace", np.array_equal(data, pattern(70_000, left)))


def completions():
    recvs = [comm.Irecv(np.zeros(1, dtype="i"), left, tag) for tag in range(70, 75)]
    check("completions:nothing sent yet", not MPI.Request.Testall(recvs))
    check("completions:Test false", not recvs[0].Test() and not recvs[0].Get_status())
    check("completions:Testany false", MPI.Request.Testany(recvs)[1] is False)
    check("completions:Testsome none", MPI.Request.Testsome(recvs) == [])
    comm.Barrier()
    sends = [comm.Isend(np.array([tag], dtype="i"), right, tag) for tag in range(70, 75)]
    done = set()
    status = MPI.Status()
    index = MPI.Request.Waitany(recvs, status)
    check("completions:Waitany", status.tag == 70 + index)
    done.add(index)
    statuses = [MPI.Status() for _ in recvs]
    while len(done) < len(recvs):
        indices = MPI.Request.Waitsome(recvs, statuses)
        # The statuses follow the order of the indices (MPI_Waitsome's array_of_statuses).
        tags = [statuses[k].tag for k in range(len(indices))]
        check("completions:Waitsome", tags == [70 + i for i in indices], f"{indices} {tags}")
        done.update(indices)
    check("completions:each once", done == set(range(5)))
    check("completions:all null", MPI.Request.Testall(recvs))
    MPI.Request.Waitall(sends)
    # Get_status looks without retiring; Test then retires.
    request = comm.Isend(np.zeros(1), MPI.PROC_NULL, 0)
    check("completions:Get_status", request.Get_status() and request.Test() and not request)


def objects():
    payload = {"rank": rank, "array": np.full(300_000, rank, dtype="f8"), "small": [rank]}
    request = comm.isend(payload, right, tag=30)
    obj = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
    request.wait()
    check("objects:out-of-band buffers", obj["rank"] == left and obj["array"].sum() == left * 3e5)
    comm.send(("probe me", rank), right, tag=31)
    status = MPI.Status()
    comm.probe(MPI.ANY_SOURCE, 31, status)
    check("objects:iprobe", comm.iprobe(status.source, 31))
    message = comm.mprobe(status.source, 31)
    check("objects:mprobe/recv", message.recv() == ("probe me", left))
    synchronous = comm.issend("thirty-two", right, tag=32)
    comm.probe(left, 32)
    check("objects:improbe/irecv", comm.improbe(left, 32).irecv().wait() == "thirty-two")
    synchronous.wait()
    MPI.Attach_buffer(bytearray(1 << 16))
    reqs = [comm.irecv(source=left, tag=t) for t in (40, 41, 42, 43)]
    comm.issend("forty", right, tag=40).wait()
    comm.bsend(np.arange(10), right, tag=41)
    comm.ibsend({"b": rank}, right, tag=42).wait()
    comm.send(None, right, tag=43)
    objs = MPI.Request.waitall(reqs)
    MPI.Detach_buffer()
    check(
        "objects:every lowercase send",
        objs[:3] == ["forty", objs[1], {"b": left}] and objs[1].tolist() == list(range(10)),
    )
    check("objects:None", objs[3] is None)
    check("objects:sendrecv", comm.sendrecv(rank, right, 44, None, left, 44) == left)
    long_stream = comm.sendrecv(bytes([rank]) * 300_000, right, 47, None, left, 47)
    check("objects:a long stream", long_stream == bytes([left]) * 300_000)
    for nbytes in (100, 100_000):  # eager and rendezvous
        # A pickled receive takes its place in matching when it is posted: a later Recv on the
        # same source and tag gets the later message, whatever arrives when.
        pickled = comm.irecv(source=left, tag=45)
        sends = [
            comm.isend(("first", rank, pattern(nbytes, rank)), right, tag=45),
            comm.Isend(pattern(nbytes, rank + 1), right, 45),
        ]
        got = np.empty(nbytes, dtype=np.uint8)
        comm.Recv(got, left, 45)
        first = pickled.wait()
        MPI.Request.Waitall(sends)
        check(
            f"objects:a pickled receive keeps its place ({nbytes} bytes)",
            first[:2] == ("first", left)
            and np.array_equal(first[2], pattern(nbytes, left))
            and np.array_equal(got, pattern(nbytes, left + 1)),
        )
        # and the other way round: a buffer receive posted first gets the first message
        buffered = comm.Irecv(got, left, 46)
        sends = [
            comm.Isend(pattern(nbytes, rank + 2), right, 46),
            comm.isend(("second", rank), right, tag=46),
        ]
        second = comm.recv(source=left, tag=46)
        buffered.Wait()
        MPI.Request.Waitall(sends)
        check(
            f"objects:a buffer receive keeps its place ({nbytes} bytes)",
            second == ("second", left) and np.array_equal(got, pattern(nbytes, left + 2)),
        )


def matched_probes():
    sends = [
        comm.Isend(pattern(1000, rank), right, 80),
        comm.Isend(pattern(100_000, rank), right, 81),
    ]
    status = MPI.Status()
    message = comm.Mprobe(left, 80, status)
    got = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
    message.Recv(got, status)
    check("probes:Mprobe/Recv", np.array_equal(got, pattern(1000, left)) and not message)
    comm.Probe(left, 81, status)
    check("probes:Iprobe", comm.Iprobe(left, 81))
    message = comm.Improbe(left, 81)
    got = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
    message.Irecv(got).Wait(status)
    check("probes:Improbe/Irecv", np.array_equal(got, pattern(100_000, left)))
    check("probes:nothing left", comm.Improbe(left, 81) is None and not comm.Iprobe(left, 81))
    MPI.Request.Waitall(sends)


def truncation():
    comm.Send(np.zeros(10), right, 50)
    check("truncation:Recv", raises(MPI.ERR_TRUNCATE, comm.Recv, np.zeros(5), left, 50))
    request = comm.Isend(pattern(200_000, rank), right, 51)  # a rendezvous
    pending = comm.Irecv(np.zeros(1000, dtype=np.uint8), left, 51)
    check("truncation:Irecv Wait", raises(MPI.ERR_TRUNCATE, pending.Wait))
    request.Wait()
    comm.Send(np.arange(3, dtype="i"), right, 52)
    got = np.zeros(3, dtype="i")
    comm.Recv(got, left, 52)
    check("truncation:then the link still works", got.tolist() == [0, 1, 2])


def proc_null():
    status = MPI.Status()
    comm.Send(np.zeros(1), MPI.PROC_NULL, 0)
    comm.Isend(np.zeros(1), MPI.PROC_NULL, 0).Wait()
    comm.Recv(np.zeros(1), MPI.PROC_NULL, 0, status)
    check(
        "proc_null:Recv",
        (status.source, status.tag, status.Get_count(MPI.BYTE)) == (MPI.PROC_NULL, MPI.ANY_TAG, 0),
    )
    comm.Irecv(np.zeros(1), MPI.PROC_NULL, 5).Wait(status)
    check("proc_null:Irecv", status.source == MPI.PROC_NULL and status.Get_count(MPI.BYTE) == 0)
    comm.Sendrecv(np.ones(1), MPI.PROC_NULL, 0, np.zeros(1), MPI.PROC_NULL, 0, status)
    check("proc_null:Sendrecv", status.source == MPI.PROC_NULL)
    comm.Probe(MPI.PROC_NULL, 0, status)
    check("proc_null:probes", comm.Iprobe(MPI.PROC_NULL) and status.source == MPI.PROC_NULL)
    message = comm.Mprobe(MPI.PROC_NULL)
    check("proc_null:Mprobe", message == MPI.MESSAGE_NO_PROC)
    check("proc_null:objects", comm.recv(None, MPI.PROC_NULL) is None)


def cancel():
    status = MPI.Status()
    pending = comm.Irecv(np.zeros(1), left, 60)
    pending.Cancel()
    pending.Wait(status)
    check("cancel:unmatched receive", status.Is_cancelled())
    matched = comm.Irecv(got := np.zeros(1), left, 61)
    comm.Barrier()  # every cancel happened before any tag-60 message leaves
    comm.Send(np.array([60.0]), right, 60)
    comm.Send(np.array([61.0]), right, 61)
    comm.Send(np.array([62.0]), right, 62)
    comm.Recv(np.zeros(1), left, 62)  # so tag 61, sent before it, has matched and arrived
    matched_status = MPI.Status()
    matched.Cancel()
    matched.Wait(matched_status)
    check("cancel:a completed receive stays", got[0] == 61.0)
    check("cancel:not cancelled", not matched_status.Is_cancelled())
    comm.Recv(got, left, 60, status)
    check("cancel:the message goes to the next receive", got[0] == 60.0)
    check("cancel:exactly once", not comm.Iprobe(left, 60))


def argument_errors():
    for name, call, args, error_class in (
        ("dest out of range", comm.Send, (np.zeros(1), size), MPI.ERR_RANK),
        ("negative tag", comm.Send, (np.zeros(1), 0, -5), MPI.ERR_TAG),
        ("receive tag", comm.Recv, (np.zeros(1), 0, -5), MPI.ERR_TAG),
        ("source out of range", comm.Irecv, (np.zeros(1), size + 3), MPI.ERR_RANK),
    ):
        check(f"errors:{name}", raises(error_class, call, *args))
    check("errors:TAG_UB", comm.Get_attr(MPI.TAG_UB) >= 32767)


def communicators():
    dup = comm.Dup()
    half = comm.Split(rank % 2, -rank)
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    check("comms:Split", half.size == len(range(rank % 2, size, 2)))
    check("comms:Split compare", half.Compare(comm) == (MPI.UNEQUAL if size > 1 else MPI.CONGRUENT))
    # One host under ompy run; a multi-node launcher (srun) says how many ranks share a node.
    check("comms:Split_type", node.size == int(os.environ.get("P2P_SUITE_NODE_SIZE", size)))
    check("comms:Dup", dup.Compare(comm) == MPI.CONGRUENT)
    value = half.sendrecv(half.rank, (half.rank + 1) % half.size, 0, None, MPI.ANY_SOURCE, 0)
    check("comms:traffic on a split", value == (half.rank - 1) % half.size)
    # The same tag on two communicators never matches across them.
    request = dup.Isend(np.array([1], dtype="i"), right, 90)
    comm.Send(np.array([2], dtype="i"), right, 90)
    got = np.zeros(1, dtype="i")
    comm.Recv(got, left, 90)
    check("comms:contexts separate", got[0] == 2)
    dup.Recv(got, left, 90)
    check("comms:contexts separate", got[0] == 1)
    request.Wait()
    for c in (half, dup, node):
        c.Free()


def schedules():
    """Hypothesis-made schedules: exactly once, intact, in MPI order per (source, tag)."""
    with open(sys.argv[1]) as handle:
        all_schedules = json.load(handle)
    for number, schedule in enumerate(all_schedules):
        expected = [s for s in schedule if s[1] % size == rank]
        requests = []
        for index, (src, dst, tag, nbytes) in enumerate(schedule):
            if src % size == rank:
                requests.append(comm.Isend(pattern(nbytes, index), dst % size, tag))
        got = {}
        for _ in expected:
            status = MPI.Status()
            comm.Probe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
            data = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
            comm.Recv(data, status.source, status.tag)
            got.setdefault((status.source, status.tag), []).append(data)
        MPI.Request.Waitall(requests)
        want = {}
        for index, (src, dst, tag, nbytes) in enumerate(schedule):
            if dst % size == rank:
                want.setdefault((src % size, tag), []).append(pattern(nbytes, index))
        same = want.keys() == got.keys() and all(
            len(want[k]) == len(got[k])
            and all(np.array_equal(a, b) for a, b in zip(want[k], got[k], strict=True))
            for k in want
        )
        check(f"schedules:{number}", same, f"schedule {schedule}")
        comm.Barrier()  # every rank has received all it expected ...
        check(f"schedules:{number} nothing extra", not comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG))
        comm.Barrier()  # ... and looked for extras before anyone sends the next schedule


for section in (
    sizes,
    wildcards,
    modes,
    completions,
    objects,
    matched_probes,
    truncation,
    proc_null,
    cancel,
    argument_errors,
    communicators,
    schedules,
):
    section()
    comm.Barrier()

print(json.dumps({"rank": rank, "size": size, "checks": sorted(set(checked))}), flush=True)
