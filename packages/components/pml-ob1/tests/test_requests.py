"""ob1's request classes start exactly as the request core does (they set its fields inline)."""

from ompy.mca.pml.ob1.requests import RecvRequest, SendRequest
from ompy.ompi.completion import CoreRequest

CORE_FIELDS = CoreRequest.__slots__


def _core_state(request):
    return {name: getattr(request, name) for name in CORE_FIELDS}


def test_a_new_send_request_is_a_fresh_core_request():
    assert _core_state(SendRequest(memoryview(b"x"), None)) == _core_state(CoreRequest())


def test_a_new_receive_request_is_a_fresh_core_request():
    request = RecvRequest(memoryview(bytearray(1)), None, 3)
    assert _core_state(request) == _core_state(CoreRequest())
    assert request.want_source == 3


def test_requests_finish_like_core_requests():
    seen = []
    request = SendRequest(memoryview(b"x"), None)
    request.on_complete = seen.append
    request.finish()
    request.finish()
    assert request.complete and seen == [request]
