"""The services the jobs of one launcher share: universe ranks and cross-job modex, ports,
rendezvous between two jobs, published names, spawn requests handed to the launcher."""

from __future__ import annotations

import os
import queue
import secrets
import threading
import time

import pytest

from ompy.orte.control import ControlClient, ControlServer, ModexKeyError, protocol
from ompy.orte.control.errors import NameLookupError, PortError, ServiceError
from ompy.orte.control.events import SpawnRequested
from ompy.orte.control.universe import Universe

pytestmark = pytest.mark.timeout(60)

SECRET = secrets.token_bytes(32)


class Two:
    """Two jobs of one launcher (sizes 2 and 3), each with its own control server."""

    def __init__(self) -> None:
        self.universe = Universe()
        self.events: queue.Queue = queue.Queue()
        self.servers = {
            jobid: ControlServer(jobid, size, SECRET, self.events.put, universe=self.universe)
            for jobid, size in (("jparent", 2), ("jchild", 3))
        }
        for server in self.servers.values():
            server.start()
        self.clients: list[ControlClient] = []

    def connect(self, jobid: str, rank: int) -> ControlClient:
        client = ControlClient.connect(
            self.servers[jobid].address, SECRET, jobid, rank, pid=os.getpid(), host="h", timeout=5
        )
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for server in self.servers.values():
            server.close()


def settled(condition) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


@pytest.fixture
def two():
    jobs = Two()
    yield jobs
    jobs.close()


def test_jobs_get_consecutive_blocks_of_universe_ranks(two):
    assert (two.servers["jparent"].base, two.servers["jchild"].base) == (0, 2)
    assert two.universe.size == 5
    assert two.universe.job_of(3) == ("jchild", 1)
    with pytest.raises(protocol.RequestError, match="universe rank 5 belongs to no job"):
        two.universe.job_of(5)


def test_get_reaches_a_process_of_the_other_job_by_its_universe_rank(two):
    parent, child = two.connect("jparent", 1), two.connect("jchild", 2)
    parent.request(protocol.COMMIT, data={"card": b"parent-1"})
    child.request(protocol.COMMIT, data={"card": b"child-2"})
    assert child.request(protocol.GET, rank=1, key="card") == b"parent-1"
    assert parent.request(protocol.GET, rank=4, key="card") == b"child-2"
    assert child.request(protocol.GET, rank=4, key="card") == b"child-2"  # its own, by base
    with pytest.raises(ModexKeyError, match="rank 3 has not committed the modex key 'card'"):
        parent.request(protocol.GET, rank=3, key="card")


def test_an_accept_and_a_connect_on_one_port_exchange_their_values(two):
    parent, child = two.connect("jparent", 0), two.connect("jchild", 0)
    port = parent.request(protocol.OPEN_PORT)
    assert port.startswith("ompy-port:")
    got: dict[str, object] = {}
    waiter = threading.Thread(
        target=lambda: got.update(
            accept=parent.request(protocol.MEET, key=port, side="accept", value=[0, 1])
        )
    )
    waiter.start()
    got["connect"] = child.request(protocol.MEET, key=port, side="connect", value=[2, 3, 4])
    waiter.join(10)
    assert got == {"accept": [2, 3, 4], "connect": [0, 1]}
    parent.request(protocol.CLOSE_PORT, port=port)
    with pytest.raises(PortError, match="is not open"):
        child.request(protocol.MEET, key=port, side="connect", value=None)


def test_two_accepts_on_one_key_are_refused_and_close_port_releases_a_waiter(two):
    parent, other = two.connect("jparent", 0), two.connect("jparent", 1)
    port = parent.request(protocol.OPEN_PORT)
    failure: list[BaseException] = []

    def wait() -> None:
        try:
            parent.request(protocol.MEET, key=port, side="accept", value=1)
        except PortError as error:
            failure.append(error)

    waiter = threading.Thread(target=wait)
    waiter.start()
    settled(lambda: two.universe.waiting(port) == "accept")
    with pytest.raises(protocol.RequestError, match="two 'accept' calls met"):
        other.request(protocol.MEET, key=port, side="accept", value=2)
    other.request(protocol.CLOSE_PORT, port=port)
    waiter.join(10)
    assert [str(e) for e in failure] == [f"port {port!r} was closed while waiting on it"]


def test_names_are_published_looked_up_from_another_job_and_unpublished(two):
    parent, child = two.connect("jparent", 0), two.connect("jchild", 1)
    parent.request(protocol.PUBLISH, service="ocean", port="ompy-port:9:x")
    assert child.request(protocol.LOOKUP, service="ocean") == "ompy-port:9:x"
    with pytest.raises(ServiceError, match="'ocean' is already published"):
        child.request(protocol.PUBLISH, service="ocean", port="p")
    with pytest.raises(ServiceError, match="published for port 'ompy-port:9:x', not 'p'"):
        child.request(protocol.UNPUBLISH, service="ocean", port="p")
    child.request(protocol.UNPUBLISH, service="ocean", port="ompy-port:9:x")
    with pytest.raises(NameLookupError, match="'ocean' is not published"):
        parent.request(protocol.LOOKUP, service="ocean")


def test_a_spawn_request_goes_to_the_launcher_which_answers_it(two):
    parent = two.connect("jparent", 1)
    answered: list[object] = []
    thread = threading.Thread(
        target=lambda: answered.append(
            parent.request(protocol.SPAWN, apps=[{"argv": ["x"], "maxprocs": 2}], port="p")
        )
    )
    thread.start()
    while True:
        event = two.events.get(timeout=5)
        if isinstance(event, SpawnRequested):
            break
    assert (event.rank, event.apps, event.port) == (1, [{"argv": ["x"], "maxprocs": 2}], "p")
    event.answer("started", None)
    thread.join(10)
    assert answered == ["started"]
