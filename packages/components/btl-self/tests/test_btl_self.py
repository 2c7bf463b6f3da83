"""btl/self: a process sends to itself; delivery happens inside send, with at most one copy."""

from __future__ import annotations

import pytest

from ompy.mca.btl.self import SelfBtlComponent
from ompy.opal.mca.btl import BtlContext, BtlFlags, DescriptorFlags
from ompy.opal.mca.btl.base import TAG_PML, TAG_USR, select_btls
from ompy.opal.mca.params import Registry
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

ME = Proc("job", 3, node_id=0)


@pytest.fixture
def context():
    engine = ProgressEngine()
    yield BtlContext(ME, InMemoryModex(rank=3), bytes(16), engine)
    engine.close()


@pytest.fixture
def module(context):
    component = SelfBtlComponent(Registry(environ={}))
    component.register_params()
    component.open()
    offer = component.query(context)
    (module,) = offer.module
    yield module
    module.finalize()


@pytest.fixture
def inbox(module):
    received = []

    def callback(btl, tag, view):
        received.append((btl, tag, bytes(view)))

    module.register(TAG_USR, callback)
    return received


def test_self_reaches_only_the_calling_process(module):
    endpoints = module.add_procs([Proc("job", 2), ME, Proc("other-job", 3)])
    assert endpoints[0] is None and endpoints[2] is None
    assert endpoints[1].proc is ME and endpoints[1].module is module


def test_self_is_exclusive_and_offers_everything(module):
    assert module.exclusivity == 65535
    assert module.flags == BtlFlags.SEND | BtlFlags.SENDI | BtlFlags.PUT | BtlFlags.GET


def test_an_allocated_descriptor_is_delivered_without_a_copy(module):
    (endpoint,) = module.add_procs([ME])
    descriptor = module.alloc(endpoint, 5)
    descriptor.segments[0][:] = b"hello"
    seen = []

    def callback(btl, tag, view):
        seen.append((bytes(view), view.obj is descriptor.buffer))

    module.register(TAG_PML, callback)
    assert module.send(endpoint, descriptor, TAG_PML) is True
    assert seen == [(b"hello", True)]


def test_prepared_large_data_arrives_whole_after_one_copy(module, inbox):
    (endpoint,) = module.add_procs([ME])
    data = bytes(range(256)) * 1024  # larger than the eager limit: referenced, then joined
    descriptor = module.prepare_src(endpoint, memoryview(data), reserve=8)
    descriptor.segments[0][:8] = b"HEADER!!"
    assert len(descriptor.segments) == 2
    carried = descriptor.data_length
    assert carried == module.max_send_size - 8
    module.send(endpoint, descriptor, TAG_USR)
    ((btl, tag, payload),) = inbox
    assert (btl, tag) == (module, TAG_USR)
    assert payload == b"HEADER!!" + data[:carried]


def test_sendi_delivers_header_and_payload_together(module, inbox):
    (endpoint,) = module.add_procs([ME])
    assert module.sendi(endpoint, b"HDR", memoryview(b"payload"), TAG_USR) is True
    assert inbox == [(module, TAG_USR, b"HDRpayload")]


def test_owned_descriptors_return_to_the_pool_and_callbacks_run_on_request(module, inbox):
    (endpoint,) = module.add_procs([ME])
    completed = []
    descriptor = module.alloc(
        endpoint, 3, DescriptorFlags.OWNERSHIP | DescriptorFlags.ALWAYS_CALLBACK
    )
    descriptor.segments[0][:] = b"abc"
    descriptor.completion = lambda btl, ep, des, error: completed.append((ep, error))
    available = module.eager_descriptors.available
    module.send(endpoint, descriptor, TAG_USR)
    assert completed == [(endpoint, None)]
    assert module.eager_descriptors.available == available + 1


def test_a_callback_may_send_to_self_again(module):
    (endpoint,) = module.add_procs([ME])
    seen = []

    def echo(btl, tag, view):
        seen.append(bytes(view))
        if len(seen) == 1:
            btl.sendi(endpoint, b"re:", view, TAG_USR)
            assert bytes(view) == b"ping"  # the nested delivery did not overwrite this view

    module.register(TAG_USR, echo)
    module.sendi(endpoint, b"", memoryview(b"ping"), TAG_USR)
    assert seen == [b"ping", b"re:ping"]


def test_an_unregistered_tag_is_a_clear_error(module):
    (endpoint,) = module.add_procs([ME])
    with pytest.raises(ValueError, match="no receive callback is registered"):
        module.sendi(endpoint, b"", memoryview(b"x"), TAG_USR + 1)


def test_put_and_get_copy_between_registered_regions(module):
    (endpoint,) = module.add_procs([ME])
    target = bytearray(10)
    handle = module.register_mem(memoryview(target))
    done = []
    module.put(endpoint, memoryview(b"abc"), handle, 2, done.append)
    assert target == b"\0\0abc\0\0\0\0\0" and done == [None]
    back = bytearray(3)
    module.get(endpoint, memoryview(back), handle, 2)
    assert back == b"abc"
    with pytest.raises(IndexError, match="outside the registered region of 10 bytes"):
        module.put(endpoint, memoryview(b"abc"), handle, 8)
    module.deregister_mem(handle)
    with pytest.raises(KeyError, match="not registered"):
        module.get(endpoint, memoryview(back), handle, 0)


def test_self_is_found_through_its_entry_point(context):
    selected = select_btls(context, Registry(environ={"OMPY_MCA_btl": "self"}))
    try:
        assert [module.name for module in selected.modules] == ["self"]
        assert context.progress.callbacks == ()  # nothing to poll
    finally:
        selected.close()
