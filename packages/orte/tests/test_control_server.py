"""The control server with in-process clients: handshake, modex rules, life-cycle events.

Clients here are :class:`ControlClient` objects on threads of the test process, which keeps
these tests fast; ``test_control_processes.py`` repeats the essentials with real processes.
"""

from __future__ import annotations

import os
import queue
import secrets
import socket
import struct
import threading
import time

import pytest

from ompy.orte.control import (
    AuthenticationError,
    BadClient,
    ConnectionLostError,
    ControlClient,
    ControlServer,
    FenceError,
    ModexKeyError,
    RankAborted,
    RankConnected,
    RankException,
    RankFinalized,
    RankLeaving,
    RankLost,
    RequestError,
    protocol,
    wire,
)

pytestmark = pytest.mark.timeout(60)


class Job:
    """A control server for a test job and the events it reported."""

    def __init__(
        self, size: int, auth_timeout: float = 5.0, event_delay: float = 0.0, **options
    ) -> None:
        self.jobid, self.secret = "jtest", secrets.token_bytes(32)
        self.events: queue.Queue = queue.Queue()
        self.event_delay = event_delay
        self.server = ControlServer(
            self.jobid, size, self.secret, self._on_event, auth_timeout=auth_timeout, **options
        )
        self.server.start()
        self.clients: list[ControlClient] = []

    def _on_event(self, event) -> None:
        time.sleep(self.event_delay)  # a launcher slow to take its events
        self.events.put(event)

    def connect(self, rank: int, secret: bytes | None = None, **handlers) -> ControlClient:
        client = ControlClient.connect(
            self.server.address,
            self.secret if secret is None else secret,
            self.jobid,
            rank,
            pid=os.getpid(),
            host="testhost",
            timeout=5,
            **handlers,
        )
        self.clients.append(client)
        return client

    def next_event(self, kind: type, timeout: float = 5.0):
        """The next event of ``kind``; other events on the way are kept in ``seen``."""
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            if isinstance(event, kind):
                return event

    def drain(self) -> list:
        found = []
        while True:
            try:
                found.append(self.events.get_nowait())
            except queue.Empty:
                return found

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.server.close()


@pytest.fixture
def job_of():
    jobs: list[Job] = []

    def make(size: int, **kw) -> Job:
        jobs.append(Job(size, **kw))
        return jobs[-1]

    yield make
    for job in jobs:
        job.close()


def in_thread(function, *args, **kwargs):
    """Run ``function`` on a thread; ``result()`` returns its value or raises its error."""
    box: dict = {}

    def run():
        try:
            box["value"] = function(*args, **kwargs)
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result(timeout: float = 10.0):
        thread.join(timeout)
        assert not thread.is_alive(), f"{function} did not return within {timeout} s"
        if "error" in box:
            raise box["error"]
        return box.get("value")

    return result


# -- handshake ----------------------------------------------------------------------------


def test_a_rank_that_knows_the_secret_is_connected(job_of):
    job = job_of(2)
    job.connect(1)
    assert job.next_event(RankConnected) == RankConnected(1, os.getpid(), "testhost")
    assert job.server.connected_ranks() == {1}


def test_a_wrong_secret_is_refused_and_changes_nothing(job_of):
    job = job_of(2)
    with pytest.raises(AuthenticationError, match="refused rank 0: wrong job secret"):
        job.connect(0, secret=secrets.token_bytes(32))
    bad = job.next_event(BadClient)
    assert "wrong job secret" in bad.reason and bad.peer.startswith("127.0.0.1:")
    assert job.server.connected_ranks() == frozenset()
    job.connect(0)  # the rank it claimed is still free for the real rank 0
    assert job.next_event(RankConnected).rank == 0


def test_a_silent_connection_is_timed_out(job_of):
    job = job_of(1, auth_timeout=0.3)
    with socket.create_connection(job.server.address, timeout=5) as sock:
        assert wire.recv_message(sock)["op"] == protocol.CHALLENGE
        started = time.monotonic()
        assert sock.recv(1) == b""  # the server hangs up
        assert time.monotonic() - started < 3
    assert "did not authenticate within 0.3 s" in job.next_event(BadClient).reason
    assert job.server.connected_ranks() == frozenset()


def test_an_oversized_frame_before_authentication_is_refused(job_of):
    job = job_of(1)
    with socket.create_connection(job.server.address, timeout=5) as sock:
        wire.recv_message(sock)
        sock.sendall(struct.pack(">I", 10_000_000))
        assert sock.recv(1) == b""
    assert "exceeds the limit of 4096" in job.next_event(BadClient).reason


@pytest.mark.parametrize(
    ("rank", "jobid", "complaint"),
    [
        (5, "jtest", "claimed rank 5, outside this job of size 2"),
        (0, "jother", "belongs to job 'jother'"),
    ],
)
def test_impossible_claims_are_refused(job_of, rank, jobid, complaint):
    job = job_of(2)
    with pytest.raises(AuthenticationError, match=complaint):
        ControlClient.connect(
            job.server.address, job.secret, jobid, rank, pid=1, host="h", timeout=5
        )
    assert complaint in job.next_event(BadClient).reason


def test_a_rank_cannot_connect_twice(job_of):
    job = job_of(2)
    job.connect(0)
    with pytest.raises(AuthenticationError, match="rank 0, which already connected"):
        job.connect(0)


def test_requests_before_hello_are_refused(job_of):
    job = job_of(1)
    with socket.create_connection(job.server.address, timeout=5) as sock:
        nonce = wire.recv_message(sock)["nonce"]
        proof = auth_proof(job.secret, nonce, 0)
        sock.sendall(
            wire.encode({"op": "auth", "role": "rank", "rank": 0, "jobid": "jtest", "proof": proof})
        )
        assert wire.recv_message(sock)["op"] == protocol.WELCOME
        sock.sendall(wire.encode({"op": "get", "id": 7, "rank": 0, "key": "k"}))
        reply = wire.recv_message(sock)
    assert reply["id"] == 7 and not reply["ok"]
    assert "'get' before 'hello'" in reply["error"]["message"]


def auth_proof(secret: bytes, nonce: bytes, rank: int) -> bytes:
    from ompy.orte.control import auth

    return auth.proof(secret, nonce, auth.ROLE_RANK, rank)


# -- modex --------------------------------------------------------------------------------


def test_committed_data_is_visible_to_every_rank_after_a_fence(job_of):
    job = job_of(3)
    clients = [job.connect(rank) for rank in range(3)]
    for rank, client in enumerate(clients):
        client.request("commit", data={"addr": f"host:{1000 + rank}", "blob": bytes([rank])})
    waits = [in_thread(client.request, "fence", generation=0) for client in clients]
    assert [wait() for wait in waits] == [0, 0, 0]
    for client in clients:
        assert [client.request("get", rank=r, key="addr") for r in range(3)] == [
            "host:1000",
            "host:1001",
            "host:1002",
        ]
        assert client.request("get", rank=2, key="blob") == b"\x02"


def test_a_fence_waits_for_every_rank_and_generations_count_up(job_of):
    job = job_of(2)
    first, second = job.connect(0), job.connect(1)
    waiting = in_thread(first.request, "fence", generation=0)
    with pytest.raises(AssertionError, match="did not return"):
        waiting(timeout=0.2)  # rank 1 has not entered yet
    second.request("fence", generation=0)
    assert waiting() == 0
    second.request("commit", data={"round": 2})
    waiting = in_thread(first.request, "fence", generation=1)
    assert second.request("fence", generation=1) == 1
    assert waiting() == 1
    assert first.request("get", rank=1, key="round") == 2


def test_entering_the_wrong_fence_generation_is_an_error(job_of):
    job = job_of(2)
    client = job.connect(0)
    with pytest.raises(FenceError, match="entered fence 3, but the job is at fence 0"):
        client.request("fence", generation=3)


def test_getting_a_key_that_was_never_committed_names_rank_and_key(job_of):
    job = job_of(2)
    client = job.connect(0)
    client.request("commit", data={"present": 1})
    with pytest.raises(ModexKeyError, match="rank 0 has not committed the modex key 'absent'"):
        client.request("get", rank=0, key="absent")
    with pytest.raises(RequestError, match="requested rank 9 is not a rank of this job"):
        client.request("get", rank=9, key="present")


# -- life cycle ---------------------------------------------------------------------------


def test_finalize_is_reported_and_the_close_that_follows_is_not_a_loss(job_of):
    job = job_of(1)
    client = job.connect(0)
    client.request("finalize")
    assert job.next_event(RankFinalized) == RankFinalized(0)
    client.close()
    time.sleep(0.2)
    assert not [e for e in job.drain() if isinstance(e, RankLost)]
    assert job.server.finalized_ranks() == {0}


def test_abort_and_exception_reach_the_launcher(job_of):
    job = job_of(2)
    first, second = job.connect(0), job.connect(1)
    first.request(
        "exception",
        traceback="Traceback ...\nZeroDivisionError: division by zero",
        consequential=False,
    )
    event = job.next_event(RankException)
    assert event.rank == 0 and "ZeroDivisionError" in event.traceback
    assert not event.consequential
    second.request("abort", code=7, message="giving up")
    assert job.next_event(RankAborted) == RankAborted(1, 7, "giving up")


@pytest.mark.parametrize(
    ("kind", "fields", "event_type"),
    [
        ("abort", {"code": 3, "message": "bye"}, RankAborted),
        ("finalize", {}, RankFinalized),
        (
            "exception",
            {"traceback": "Traceback ...\nValueError", "consequential": True},
            RankException,
        ),
    ],
)
def test_the_launcher_hears_of_a_life_cycle_request_before_the_rank_has_its_reply(
    job_of, kind, fields, event_type
):
    """A rank exits as soon as it has the reply: the launcher must know why before the exit."""
    job = job_of(1, event_delay=0.2)
    client = job.connect(0)
    client.request(kind, **fields)
    assert isinstance(job.events.get_nowait(), RankConnected)
    assert isinstance(job.events.get_nowait(), event_type), "reported only after the reply"


def test_a_connection_closed_before_finalize_is_a_lost_rank_and_fails_the_fence(job_of):
    job = job_of(2)
    survivor, doomed = job.connect(0), job.connect(1)
    waiting = in_thread(survivor.request, "fence", generation=0)
    time.sleep(0.1)
    doomed.close()
    assert job.next_event(RankLost).rank == 1
    with pytest.raises(FenceError, match="fence 0 can never complete: rank 1 was lost"):
        waiting()


def test_a_fence_after_a_rank_finalized_fails_at_once(job_of):
    job = job_of(2)
    first, second = job.connect(0), job.connect(1)
    second.request("finalize")
    with pytest.raises(FenceError, match="rank 1 finalized without entering it"):
        first.request("fence", generation=0)


def test_terminate_is_pushed_to_the_ranks(job_of):
    job = job_of(2)
    told: queue.Queue = queue.Queue()
    job.connect(0, on_terminate=told.put)
    job.connect(1, on_terminate=told.put)
    job.next_event(RankConnected)
    job.next_event(RankConnected)
    job.server.terminate("rank 3 failed", ranks=frozenset({1}))
    assert told.get(timeout=5) == "rank 3 failed"
    time.sleep(0.2)
    assert told.empty()


def test_closing_the_server_fails_a_waiting_request_and_tells_on_lost(job_of):
    job = job_of(2)
    lost: queue.Queue = queue.Queue()
    client = job.connect(0, on_lost=lost.put)
    waiting = in_thread(client.request, "fence", generation=0)
    time.sleep(0.1)
    job.server.close()
    with pytest.raises(ConnectionLostError, match="lost the connection to the launcher"):
        waiting()
    assert "lost the connection" in lost.get(timeout=5)
    with pytest.raises(ConnectionLostError):
        client.request("get", rank=0, key="k")


def test_stacks_of_in_process_clients_name_the_waiting_function(job_of):
    job = job_of(1)
    job.connect(0)
    job.next_event(RankConnected)
    stacks = job.server.request_stacks(timeout=5)
    assert list(stacks) == [0]
    assert "test_stacks_of_in_process_clients_name_the_waiting_function" in stacks[0]


def test_the_server_can_be_closed_from_its_own_event_callback():
    lost: queue.Queue = queue.Queue()
    holder: list[ControlServer] = []

    def on_event(event):
        if isinstance(event, RankConnected):
            holder[0].close()

    server = ControlServer("jcb", 1, secrets.token_bytes(32), on_event)
    holder.append(server)
    server.start()
    client = ControlClient.connect(
        server.address, server._secret, "jcb", 0, pid=1, host="h", on_lost=lost.put
    )
    try:
        assert "lost the connection" in lost.get(timeout=5)
        server._thread.join(timeout=5)
        assert not server._thread.is_alive()
        with pytest.raises(OSError):
            socket.create_connection(server.address, timeout=1).close()
    finally:
        client.close()
        server.close()


# -- leaving without finalizing (sys.exit, a failed finalize) -------------------------------


def test_sys_exit_while_others_are_not_in_finalize_leaves_after_the_grace(job_of):
    job = job_of(3, exit_grace=0.3)
    first, leaver, _third = job.connect(0), job.connect(1), job.connect(2)
    first.request("finalizing")
    started = time.monotonic()
    assert leaver.request("leaving", code=3, how="called sys.exit(3)") is False
    assert 0.25 <= time.monotonic() - started < 3
    assert job.next_event(RankLeaving) == RankLeaving(1, 3, "called sys.exit(3)", (2,))
    leaver.close()
    time.sleep(0.1)
    assert not [e for e in job.drain() if isinstance(e, RankLost)], "an expected close"
    with pytest.raises(FenceError, match="rank 1 exited without finalizing"):
        first.request("fence", generation=0)


def test_sys_exit_once_every_other_rank_is_in_finalize_finalizes_with_them(job_of):
    job = job_of(3, exit_grace=30)
    first, leaver, third = job.connect(0), job.connect(1), job.connect(2)
    first.request("finalizing")
    third.request("finalize")
    started = time.monotonic()
    assert leaver.request("leaving", code=0, how="called sys.exit(0)") is True
    assert time.monotonic() - started < 1, "no grace needed"
    assert not [e for e in job.drain() if isinstance(e, RankLeaving)]


def test_ranks_that_all_call_sys_exit_within_the_grace_finalize_together(job_of):
    """``sys.exit(main())`` on every rank: a normal end, not a failure."""
    job = job_of(3, exit_grace=30)
    clients = [job.connect(rank) for rank in range(3)]
    waiting = [
        in_thread(client.request, "leaving", code=0, how="called sys.exit(0)")
        for client in clients[:2]
    ]
    time.sleep(0.2)
    assert clients[2].request("leaving", code=4, how="called sys.exit(4)") is True
    assert [result() for result in waiting] == [True, True]
    assert not [e for e in job.drain() if isinstance(e, RankLeaving)]


def test_a_rank_failing_ends_the_grace_of_the_ranks_that_wait_to_leave(job_of):
    job = job_of(3, exit_grace=30)
    leaver, doomed, _third = job.connect(0), job.connect(1), job.connect(2)
    waiting = in_thread(leaver.request, "leaving", code=2, how="called sys.exit(2)")
    time.sleep(0.2)
    doomed.close()  # lost: the job is failing, nobody waits for it any more
    assert waiting(timeout=5) is False
    assert job.next_event(RankLeaving).rank == 0


def test_a_failed_finalize_leaves_at_once_even_when_the_others_are_done(job_of):
    job = job_of(2, exit_grace=30)
    first, second = job.connect(0), job.connect(1)
    first.request("finalize")
    how = "exited without finalizing (Finalize raised)"
    assert second.request("leaving", code=None, how=how) is False
    assert job.next_event(RankLeaving) == RankLeaving(1, None, how, ())


def test_leaving_needs_an_integer_or_nil_code(job_of):
    job = job_of(1)
    client = job.connect(0)
    with pytest.raises(RequestError, match="bad 'code'"):
        client.request("leaving", code="3", how="called sys.exit('3')")
