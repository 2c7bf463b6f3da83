"""The btl framework: tags, descriptors, module attributes and the selection of modules."""

from __future__ import annotations

import pytest

from ompy.opal.mca import Cardinality
from ompy.opal.mca.btl import (
    BtlComponent,
    BtlContext,
    BtlModule,
    BtlSizeError,
    BtlTagError,
    BtlUnsupportedError,
    Descriptor,
    DescriptorFlags,
    Endpoint,
    MemHandle,
    ModuleAttributes,
    framework,
)
from ompy.opal.mca.btl.base import TAG_MAX, TAG_PML, TAG_USR, check_tag, select_btls, tag_range
from ompy.opal.mca.params import Registry
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

ATTRIBUTES = ModuleAttributes(
    eager_limit=64,
    max_send_size=256,
    rdma_pipeline_send_length=0,
    rdma_pipeline_frag_size=0,
    min_rdma_pipeline_size=0,
    exclusivity=0,
    latency=0,
    bandwidth=0,
)


class PlainModule(BtlModule[Endpoint]):
    """The three methods every module must write; everything else is the interface's own."""

    def add_procs(self, procs):
        return [Endpoint(self, proc) for proc in procs]

    def del_procs(self, procs, endpoints):
        pass

    def send(self, endpoint, descriptor, tag):
        self.callbacks[tag](self, tag, descriptor.segments[0])
        return True


@pytest.fixture
def module():
    module = PlainModule(component=None, name="test", attributes=ATTRIBUTES)
    module.setup_free_lists(initial=2, maximum=4)
    return module


def test_a_module_must_implement_peers_and_send():
    class Incomplete(BtlModule[Endpoint]):
        def add_procs(self, procs):
            return []

    with pytest.raises(TypeError, match=r"abstract methods del_procs, send"):
        Incomplete(None, "incomplete", ATTRIBUTES)


def test_optional_capabilities_have_their_documented_defaults(module):
    assert module.sendi(None, b"", memoryview(b""), TAG_USR) is False, "sendi: not now"
    for call in (
        lambda: module.register_mem(memoryview(bytearray(1))),
        lambda: module.deregister_mem(MemHandle(1, 1)),
        lambda: module.get(None, memoryview(bytearray(1)), MemHandle(1, 1), 0),
    ):
        with pytest.raises(BtlUnsupportedError, match=r"does not offer (put/get|get)"):
            call()
    assert module.finalize() is None
    assert BtlComponent(Registry(environ={})).progress() == 0, "progress: nothing to poll"
    assert BtlComponent.needs_progress is True


def test_the_framework_is_many_of_many_at_interface_1():
    assert framework.name == "btl"
    assert framework.layer == "opal"
    assert framework.cardinality is Cardinality.MANY
    assert framework.interface_version == (1, 0)
    assert framework.group == "ompy.mca.btl"


def test_tags_are_one_byte_split_into_ranges():
    assert check_tag(0) == 0
    assert check_tag(TAG_MAX) == 255
    assert tag_range(TAG_PML + 3) == "pml"
    assert tag_range(TAG_USR) == "user"
    assert tag_range(1) == "btl"
    for bad in (-1, 256, "1", True):
        with pytest.raises(BtlTagError, match=r"0\.\.255"):
            check_tag(bad)


def test_a_tag_takes_one_callback(module):
    def callback(_module, _tag, _view):
        pass

    module.register(TAG_USR, callback)
    assert module.callbacks[TAG_USR] is callback
    with pytest.raises(BtlTagError, match="already has a receive callback"):
        module.register(TAG_USR, callback)
    module.unregister(TAG_USR)
    module.register(TAG_USR, callback)


def test_alloc_picks_the_pool_by_size_and_refuses_oversize(module):
    small = module.alloc(None, 10)
    large = module.alloc(None, 200)
    assert small.capacity == 64 and len(small.segments[0]) == 10
    assert large.capacity == 256 and len(large.segments[0]) == 200
    with pytest.raises(BtlSizeError, match="max_send_size = 256"):
        module.alloc(None, 257)


def test_freed_descriptors_are_reset_and_reused(module):
    descriptor = module.alloc(None, 10, DescriptorFlags.NONE)
    descriptor.cbdata = "request"
    module.free(descriptor)
    again = module.alloc(None, 5)
    assert again is descriptor
    assert again.cbdata is None and again.flags == DescriptorFlags.OWNERSHIP


def test_alloc_returns_none_when_the_pool_is_exhausted(module):
    taken = [module.alloc(None, 8) for _ in range(4)]
    assert all(isinstance(d, Descriptor) for d in taken)
    assert module.alloc(None, 8) is None


def test_prepare_src_copies_small_data_behind_the_reserved_header(module):
    data = bytearray(b"abcdef")
    descriptor = module.prepare_src(None, memoryview(data), reserve=4)
    data[:] = b"XXXXXX"  # the caller may reuse its buffer at once
    assert len(descriptor.segments) == 1
    assert bytes(descriptor.segments[0][4:]) == b"abcdef"
    assert descriptor.data_length == 6 and descriptor.length == 10


def test_prepare_src_references_large_data_and_caps_it_at_max_send_size(module):
    data = bytearray(range(250)) * 2
    descriptor = module.prepare_src(None, memoryview(data), reserve=6)
    header, payload = descriptor.segments
    assert len(header) == 6
    assert descriptor.data_length == 250 == len(payload)
    data[0] = 99
    assert payload[0] == 99  # referenced, not copied


def test_prepare_src_accepts_typed_memory(module):
    import numpy as np

    values = np.arange(4, dtype=np.float64)
    descriptor = module.prepare_src(None, memoryview(values), reserve=0)
    assert bytes(descriptor.segments[0]) == values.tobytes()


def test_modules_without_rdma_say_so(module):
    with pytest.raises(BtlUnsupportedError, match="does not offer put"):
        module.put(None, memoryview(b""), MemHandle(1, 0), 0)
    assert module.sendi(None, b"", memoryview(b""), TAG_USR) is False


def test_memory_handles_round_trip_through_bytes():
    handle = MemHandle(key=7, length=1 << 40)
    assert MemHandle.unpack(handle.pack()) == handle
    with pytest.raises(ValueError, match="16 bytes"):
        MemHandle.unpack(b"short")


def test_errors_without_a_callback_are_raised_not_lost(module):
    with pytest.raises(ConnectionError, match="gone"):
        module.report_error(None, ConnectionError("gone"))
    seen = []
    module.register_error(lambda m, endpoint, error: seen.append(str(error)))
    module.report_error(None, ConnectionError("gone"))
    assert seen == ["gone"]


def test_job_secret_decoding_names_the_source():
    assert BtlContext.secret_from_hex("00" * 16) == bytes(16)
    with pytest.raises(ValueError, match="OMPY_SECRET is not hexadecimal"):
        BtlContext.secret_from_hex("zz")
    with pytest.raises(ValueError, match="at least 16"):
        BtlContext.secret_from_hex("abcd")


FAKE_COMPONENTS = """
from ompy.opal.mca import Offer
from ompy.opal.mca.btl import BtlComponent, BtlModule, Endpoint, ModuleDefaults

DEFAULTS = ModuleDefaults(1024, 4096, 0, 0, 0, 0, 10, 10)


class Module(BtlModule[Endpoint]):
    def add_procs(self, procs):
        return [None for _ in procs]

    def del_procs(self, procs, endpoints):
        pass

    def send(self, endpoint, descriptor, tag):
        return True


class Two(BtlComponent):
    name = "two"
    version = "1.0"
    default_priority = 20
    module_defaults = DEFAULTS
    calls = 0

    def query(self, context):
        attributes = self.module_attributes()
        return Offer(self.priority, [Module(self, "two:a", attributes),
                                     Module(self, "two:b", attributes)])

    def progress(self):
        Two.calls += 1
        return 0


class One(BtlComponent):
    name = "one"
    version = "1.0"
    default_priority = 50
    module_defaults = DEFAULTS
    needs_progress = False

    def query(self, context):
        return Offer(self.priority, [Module(self, "one", self.module_attributes())])


class Absent(BtlComponent):
    name = "absent"
    version = "1.0"
    module_defaults = DEFAULTS


class Wrong(BtlComponent):
    name = "wrong"
    version = "1.0"
    module_defaults = DEFAULTS

    def query(self, context):
        return Offer(1, "not a list")
"""


@pytest.fixture
def fake_btls(distributions):
    distributions.add(
        "fake-btls",
        {
            "ompy.mca.btl": {
                "one": "fakebtls:One",
                "two": "fakebtls:Two",
                "absent": "fakebtls:Absent",
                "wrong": "fakebtls:Wrong",
            }
        },
        {"fakebtls.py": FAKE_COMPONENTS},
    )


@pytest.fixture
def context():
    engine = ProgressEngine()
    yield BtlContext(Proc("job", 0), InMemoryModex(), bytes(16), engine)
    engine.close()


def test_selection_flattens_module_lists_in_priority_order(fake_btls, context):
    registry = Registry(environ={"OMPY_MCA_btl": "one,two,absent"})
    selected = select_btls(context, registry)
    try:
        assert [module.name for module in selected.modules] == ["one", "two:a", "two:b"]
        assert [component.name for component in selected.components] == ["one", "two"]
        assert len(context.progress.callbacks) == 1  # only 'two' asked to be progressed
        context.progress.progress()
        assert type(selected.components[1]).calls == 1
    finally:
        selected.close()
    assert context.progress.callbacks == ()


def test_selection_honours_exclusion_and_module_parameters(fake_btls, context):
    registry = Registry(
        environ={"OMPY_MCA_btl": "^two,wrong,self,tcp", "OMPY_MCA_btl_one_eager_limit": "512"}
    )
    selected = select_btls(context, registry)
    try:
        assert [module.name for module in selected.modules] == ["one"]
        assert selected.modules[0].eager_limit == 512
        assert selected.modules[0].max_send_size == 4096
    finally:
        selected.close()


def test_an_offer_that_is_not_a_module_list_is_a_clear_error(fake_btls, context):
    registry = Registry(environ={"OMPY_MCA_btl": "wrong"})
    with pytest.raises(TypeError, match="must be a list of BtlModule"):
        select_btls(context, registry)


def test_an_eager_limit_above_the_fragment_size_is_refused(fake_btls, context):
    registry = Registry(environ={"OMPY_MCA_btl": "one", "OMPY_MCA_btl_one_eager_limit": "9999"})
    with pytest.raises(Exception, match="btl_one_eager_limit"):
        select_btls(context, registry)
