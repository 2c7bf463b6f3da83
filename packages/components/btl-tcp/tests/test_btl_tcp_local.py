"""btl/tcp inside one process: two simulated ranks share a progress engine and a modex.

These cover what needs a hand inside the protocol (a stranger at the listening port, several
links on one interface, the module attributes) without the cost of starting processes.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import pytest

from ompy.mca.btl.tcp import wire
from ompy.opal.mca.btl import BtlFlags
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.proc import Proc

PROCS = [Proc("job", 0), Proc("job", 1)]  # the ranks the pair fixture (conftest) simulates


def test_modules_carry_the_configured_attributes(pair):
    (module,) = pair.modules[0]
    # 128 KiB of data and the PML's header go eagerly (component.EAGER_DATA, HEADER_ROOM).
    assert module.eager_limit == module.max_send_size == 128 * 1024 + 64
    assert module.flags == BtlFlags.SEND | BtlFlags.SENDI | BtlFlags.GET
    assert module.exclusivity == 100 and module.name == "tcp:lo:0"


def test_a_module_does_not_reach_its_own_process_or_other_nodes(pair):
    (module,) = pair.modules[0]
    endpoints = module.add_procs([PROCS[0], PROCS[1], Proc("job", 1, node_id=5)])
    assert endpoints[0] is None  # btl/self's job
    assert endpoints[1] is not None
    assert endpoints[2] is None  # loopback cannot reach another node


@pytest.mark.parametrize("pair", [{"links": 2}], indirect=True)
def test_two_links_on_loopback_are_two_modules_with_their_own_connections(pair):
    zero, one = pair.modules
    assert [m.name for m in zero] == ["tcp:lo:0", "tcp:lo:1"]
    for module in one:
        module.add_procs(PROCS)
    for module in zero:
        (_, endpoint) = module.add_procs(PROCS)
        assert module.sendi(endpoint, b"", memoryview(b""), TAG_USR) is False  # not connected yet
        descriptor = module.alloc(endpoint, len(module.name))
        descriptor.segments[0][:] = module.name.encode()
        module.send(endpoint, descriptor, TAG_USR)
    assert pair.engine.wait_until(lambda: len(pair.inboxes[1]) == 2, timeout=10)
    # Each link of rank 0 reached the matching link of rank 1.
    assert sorted(pair.inboxes[1]) == [("tcp:lo:0", b"tcp:lo:0"), ("tcp:lo:1", b"tcp:lo:1")]
    ports = {m.port for m in zero}
    assert len(ports) == 2


def test_a_stranger_without_the_secret_is_refused_and_delivers_nothing(pair):
    (module,) = pair.modules[0]
    result = {}

    def stranger():
        with socket.create_connection(("127.0.0.1", module.port), timeout=10) as sock:
            sock.sendall(wire.HELLO.pack(wire.MAGIC, bytes(16), 1, 0))
            challenge = sock.recv(wire.CHALLENGE_SIZE, socket.MSG_WAITALL)
            result["challenge"] = len(challenge)
            sock.sendall(bytes(wire.RESPONSE_SIZE))  # a guess at the MAC
            sock.sendall(wire.FRAME.pack(3, wire.KIND_DATA, TAG_USR) + b"bad")
            result["after"] = sock.recv(16)  # the module closes: EOF

    thread = threading.Thread(target=stranger)
    thread.start()
    assert pair.engine.wait_until(lambda: module.rejected == 1, timeout=10)
    thread.join(10)
    assert result == {"challenge": wire.CHALLENGE_SIZE, "after": b""}
    assert pair.inboxes[0] == []


def test_a_client_that_is_not_ompy_is_dropped(pair):
    (module,) = pair.modules[0]
    with socket.create_connection(("127.0.0.1", module.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: example.org\r\n\r\n")  # > 32 bytes
        assert pair.engine.wait_until(lambda: module.rejected == 1, timeout=10)
        sock.settimeout(10)
        # Closed, or reset since the rest of the request was never read.
        with contextlib.suppress(ConnectionResetError):
            assert sock.recv(16) == b""
    assert pair.inboxes[0] == []


def test_sendi_sends_header_and_payload_as_one_frame_once_connected(pair):
    (zero,), (one,) = pair.modules
    one.add_procs(PROCS)
    (_, endpoint) = zero.add_procs(PROCS)
    descriptor = zero.prepare_src(endpoint, memoryview(b"first"), reserve=2)
    descriptor.segments[0][:2] = b"h:"
    zero.send(endpoint, descriptor, TAG_USR)
    assert pair.engine.wait_until(lambda: endpoint.conn is not None and not endpoint.queue, 10)
    assert zero.sendi(endpoint, b"H:", memoryview(b"second"), TAG_USR) is True
    assert pair.engine.wait_until(lambda: len(pair.inboxes[1]) == 2, timeout=10)
    assert [data for _name, data in pair.inboxes[1]] == [b"h:first", b"H:second"]


def test_a_missing_callback_for_a_received_tag_is_a_clear_error(pair):
    (zero,), (one,) = pair.modules
    one.add_procs(PROCS)
    (_, endpoint) = zero.add_procs(PROCS)
    descriptor = zero.alloc(endpoint, 1)
    zero.send(endpoint, descriptor, TAG_USR + 1)
    with pytest.raises(ValueError, match=f"tag {TAG_USR + 1}, but no receive callback"):
        pair.engine.wait_until(lambda: False, timeout=5)


@pytest.mark.parametrize("pair", [{"links": 2, "max_send_size": 1 << 20}], indirect=True)
def test_each_module_counts_the_bytes_its_sockets_received(pair):
    zero, one = pair.modules
    for module in one:
        module.add_procs(PROCS)
    # The second frame is larger than a connection's receive buffer: it is read on its own.
    sizes = {"tcp:lo:0": 10, "tcp:lo:1": 600_000}
    for module in zero:
        (_, endpoint) = module.add_procs(PROCS)
        descriptor = module.prepare_src(endpoint, memoryview(bytes(sizes[module.name])), 0)
        module.send(endpoint, descriptor, TAG_USR)
    assert pair.engine.wait_until(lambda: len(pair.inboxes[1]) == 2, timeout=10)
    assert {m.name: m.bytes_received for m in one} == {
        name: wire.FRAME_SIZE + size for name, size in sizes.items()
    }
    assert [m.bytes_received for m in zero] == [0, 0]  # nothing was sent to rank 0


@pytest.mark.parametrize("pair", [{"sndbuf": 4096, "rcvbuf": 4096}], indirect=True)
def test_a_sendi_the_socket_takes_only_partly_still_arrives_whole_after_its_memory_is_reused(pair):
    (zero,), (one,) = pair.modules
    one.add_procs(PROCS)
    (_, endpoint) = zero.add_procs(PROCS)
    descriptor = zero.alloc(endpoint, 1)
    zero.send(endpoint, descriptor, TAG_USR)
    assert pair.engine.wait_until(lambda: endpoint.conn is not None and not endpoint.queue, 10)
    payload = bytearray(bytes(range(256)) * 400)  # 100 KiB: more than the small socket buffers
    expected = b"hdr" + bytes(payload)
    assert zero.sendi(endpoint, b"hdr", memoryview(payload), TAG_USR) is True
    assert endpoint.queue, "the socket should have taken only part of the frame"
    payload[:] = bytes(len(payload))  # the caller reuses its memory at once
    assert pair.engine.wait_until(lambda: len(pair.inboxes[1]) == 2, timeout=10)
    assert pair.inboxes[1][1][1] == expected
