"""A node daemon's control relay against a real control server, with in-process clients.

Ranks 0 and 1 sit "behind" a relay (one node), ranks 2 and 3 connect directly: the job must
behave as with direct connections, while each fence of the node crosses as one message.
"""

from __future__ import annotations

import os
import queue
import secrets
import socket
import threading

import pytest

from ompy.opal.eventloop import EventLoop
from ompy.orte.control import (
    AuthenticationError,
    ControlClient,
    ControlServer,
    FenceError,
    RankConnected,
    RankLost,
    auth,
    wire,
)
from ompy.orte.control import server as server_module
from ompy.orte.daemon.relay import ControlRelay, RelayError

pytestmark = pytest.mark.timeout(60)


class Node:
    """A relay served by its own thread, as in a daemon."""

    def __init__(self, job: Job, local_size: int, secret: bytes | None = None) -> None:
        self.loop = EventLoop()
        self.lost: queue.Queue[str] = queue.Queue()
        self.relay = ControlRelay(
            self.loop,
            node=1,
            jobid=job.jobid,
            secret=secret or job.secret,
            upstream=job.server.address,
            local_size=local_size,
            on_lost=self.lost.put,
        )
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            self.loop.run_once(0.1)
        self.relay.close()
        self.loop.close()

    def stop(self) -> None:
        self._stop = True
        self.loop.wake()
        self.thread.join(5)


class Job:
    def __init__(self, size: int) -> None:
        self.jobid, self.secret = "jrelay", secrets.token_bytes(32)
        self.events: queue.Queue = queue.Queue()
        self.server = ControlServer(self.jobid, size, self.secret, self.events.put)
        self.server.start()
        self.clients: list[ControlClient] = []
        self.nodes: list[Node] = []

    def node(self, local_size: int) -> Node:
        self.nodes.append(Node(self, local_size))
        return self.nodes[-1]

    def connect(self, rank: int, address=None, secret=None) -> ControlClient:
        client = ControlClient.connect(
            address or self.server.address,
            secret or self.secret,
            self.jobid,
            rank,
            pid=os.getpid(),
            host=f"host-of-{rank}",
            timeout=5,
        )
        self.clients.append(client)
        return client

    def next_event(self, kind: type, timeout: float = 5.0):
        while True:
            event = self.events.get(timeout=timeout)
            if isinstance(event, kind):
                return event

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for node in self.nodes:
            node.stop()
        self.server.close()


@pytest.fixture
def job():
    made = Job(4)
    yield made
    made.close()


def fence_all(clients, generation):
    results: queue.Queue = queue.Queue()

    def fence(client):
        try:
            results.put(client.request("fence", generation=generation, timeout=10))
        except Exception as error:
            results.put(error)

    threads = [threading.Thread(target=fence, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    return [results.get_nowait() for _ in clients]


def test_ranks_behind_a_relay_commit_fence_and_get_with_one_fence_message_per_node(
    job, monkeypatch
):
    node_fences = []
    original = server_module.ControlServer._on_fence_node

    def counting(self, daemon, message):
        node_fences.append(sorted(rank for rank, _id in message["requests"]))
        original(self, daemon, message)

    monkeypatch.setattr(server_module.ControlServer, "_on_fence_node", counting)
    node = job.node(local_size=2)
    clients = [job.connect(r, node.relay.address) for r in (0, 1)]
    clients += [job.connect(r) for r in (2, 3)]
    connected = {job.next_event(RankConnected).rank for _ in range(4)}
    assert connected == {0, 1, 2, 3}
    for generation in range(3):
        for client in clients:
            client.request("commit", data={"card": f"{client.rank}-{generation}"})
        assert fence_all(clients, generation) == [generation] * 4
        for client in clients:
            cards = [client.request("get", rank=r, key="card") for r in range(4)]
            assert cards == [f"{r}-{generation}" for r in range(4)]
    assert node_fences == [[0, 1]] * 3


def test_a_wrong_secret_is_refused_by_the_relay_itself(job):
    node = job.node(local_size=1)
    with pytest.raises(AuthenticationError, match="wrong job secret"):
        job.connect(0, node.relay.address, secret=secrets.token_bytes(32))
    assert job.server.connected_ranks() == frozenset()


def test_a_relay_with_a_wrong_secret_cannot_join_the_control_server(job):
    with pytest.raises(RelayError, match="refused"):
        Node(job, 1, secret=secrets.token_bytes(32))


def test_a_rank_lost_behind_the_relay_fails_the_others_fence(job):
    node = job.node(local_size=2)
    behind = [job.connect(r, node.relay.address) for r in (0, 1)]
    direct = [job.connect(r) for r in (2, 3)]
    behind[0].close()
    assert job.next_event(RankLost).rank == 0
    results = fence_all([behind[1], *direct], 0)
    assert all(isinstance(result, FenceError) for result in results), results
    assert "rank 0 was lost" in str(results[0])


def test_the_relay_notices_that_the_launcher_is_gone(job):
    node = job.node(local_size=1)
    job.server.close()
    assert "closed" in node.lost.get(timeout=5)


def daemon_connection(job: Job, node: int = 1) -> socket.socket:
    """A raw connection authenticated as the daemon of ``node``."""
    sock = socket.create_connection(job.server.address, timeout=5)
    challenge = wire.recv_message(sock)
    proof = auth.proof(job.secret, challenge["nonce"], auth.ROLE_DAEMON, node)
    claim = {"op": "auth", "role": auth.ROLE_DAEMON, "rank": node, "jobid": job.jobid}
    sock.sendall(wire.encode({**claim, "proof": proof}))
    assert wire.recv_message(sock)["op"] == "welcome"
    return sock


@pytest.mark.parametrize(
    "message",
    [
        {"op": "fence_node", "generation": 0, "requests": [[]]},
        {"op": "fence_node", "generation": 0, "requests": [[[0], 1]]},
        {"op": "fence_node", "generation": "0", "requests": []},
        {"op": "attach", "rank": "zero"},
        {"op": "no-such-op", "rank": 0},
    ],
)
def test_a_daemon_that_breaks_the_protocol_is_dropped_and_the_job_goes_on(job, message):
    sock = daemon_connection(job)
    sock.sendall(wire.encode(message))
    with pytest.raises(wire.ConnectionClosedError):
        wire.recv_message(sock)
    sock.close()
    job.connect(2)  # the server still serves
    assert job.next_event(RankConnected).rank == 2


def test_a_second_daemon_for_the_same_node_is_refused(job):
    first = daemon_connection(job, node=3)
    sock = socket.create_connection(job.server.address, timeout=5)
    challenge = wire.recv_message(sock)
    proof = auth.proof(job.secret, challenge["nonce"], auth.ROLE_DAEMON, 3)
    claim = {"op": "auth", "role": auth.ROLE_DAEMON, "rank": 3, "jobid": job.jobid}
    sock.sendall(wire.encode({**claim, "proof": proof}))
    answer = wire.recv_message(sock)
    assert answer["op"] == "denied" and "already connected" in answer["reason"]
    sock.close()
    first.close()
