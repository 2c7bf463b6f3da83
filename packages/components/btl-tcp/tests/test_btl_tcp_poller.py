"""The poller skips its system call while only idle sockets (listeners) are registered."""

import socket

from ompy.mca.btl.tcp.poller import IDLE_POLL_EVERY, READ, Poller
from ompy.opal.progress import ProgressEngine


def test_a_listener_alone_is_polled_once_in_a_while_and_a_connection_every_pass():
    engine = ProgressEngine()
    poller = Poller(engine)
    calls = []
    real_poll = poller._poll

    def counting_poll(timeout):
        calls.append(timeout)
        return real_poll(timeout)

    poller._poll = counting_poll
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted = []
    poller.add(listener.fileno(), READ, lambda mask: accepted.append(mask) or 1, idle=True)
    try:
        for _ in range(IDLE_POLL_EVERY * 3):
            poller.poll()
        assert len(calls) == 3
        client = socket.create_connection(listener.getsockname())
        events = sum(poller.poll() for _ in range(IDLE_POLL_EVERY))
        assert events == 1 and accepted, "a pending connection is seen within one round"
        a, b = socket.socketpair()
        poller.add(a.fileno(), READ, lambda mask: 1)
        calls.clear()
        for _ in range(10):
            poller.poll()
        assert len(calls) == 10, "with a connection registered, every pass polls"
        poller.remove(a.fileno())
        a.close()
        b.close()
        client.close()
    finally:
        poller.close()
        listener.close()
        engine.close()
