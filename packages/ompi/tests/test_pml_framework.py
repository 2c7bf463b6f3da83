"""The pml framework description and the base class its components derive from."""

import pytest

from ompy.ompi.api.testing import Fabric, LoopbackPml
from ompy.ompi.mca.pml import INTERFACE_VERSION, PmlComponent, PmlModule, SendMode, framework
from ompy.opal.mca import Cardinality, ComponentVersionError, Offer
from ompy.opal.mca.discovery import check_component_class
from ompy.opal.mca.params import Registry


def test_the_pml_framework_keeps_one_component():
    assert framework.name == "pml"
    assert framework.layer == "ompi"
    assert framework.group == "ompy.mca.pml"
    assert framework.cardinality is Cardinality.ONE
    assert framework.interface_version == INTERFACE_VERSION == (1, 0)


def test_a_pml_component_fits_the_framework():
    class Good(PmlComponent):
        name = "good"
        version = "1.0"

    check_component_class(framework, "good", Good)
    component = Good(Registry(environ={}, files=[]))
    component.register_params()
    assert component.query(None) is None
    assert component.priority == 0


def test_a_component_for_another_major_interface_version_is_refused():
    class Old(PmlComponent):
        name = "old"
        version = "1.0"
        interface_version = (2, 0)

    with pytest.raises(ComponentVersionError, match=r"interface version 2\.0"):
        check_component_class(framework, "old", Old)


def test_the_module_interface_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        PmlModule()
    assert {mode.name for mode in SendMode} == {"STANDARD", "BUFFERED", "SYNCHRONOUS", "READY"}
    assert Offer(1, None).priority == 1


def test_the_module_interface_declares_every_call_the_api_makes():
    # the API calls these on any PML, without probing: each one must be declared
    declared = {
        "add_procs",
        "del_procs",
        "add_comm",
        "del_comm",
        "isend",
        "isend_view",
        "irecv",
        "irecv_view",
        "iprobe",
        "improbe",
        "imrecv",
        "progress",
        "finalize",
    }
    assert PmlModule.__abstractmethods__ == declared
    # send_view is optional: its default makes a standard-mode request of the view
    assert "send_view" in vars(PmlModule)


def test_send_view_defaults_to_a_standard_isend_view():
    calls = []

    class Recording(LoopbackPml):
        def isend_view(self, data, dest, tag, comm, mode):
            calls.append((bytes(data), dest, tag, mode))
            return super().isend_view(data, dest, tag, comm, mode)

    pml = Recording(Fabric(), 0)
    comm = _OneRankComm()
    pml.add_comm(comm)
    request = PmlModule.send_view(pml, memoryview(b"abc"), 0, 5, comm)
    assert request is not None and request.complete and request.count == 3
    assert calls == [(b"abc", 0, 5, SendMode.STANDARD)]


def test_the_loopback_pml_implements_the_whole_interface():
    pml = LoopbackPml(Fabric(), 0)  # instantiable: no abstract method left
    assert isinstance(pml, PmlModule)
    pml.finalize()
    assert pml.finalized


class _OneRankComm:
    """The communicator shape the PML works with (PmlComm), for one process."""

    context_id = 7
    rank = 0
    size = 1
    world_ranks = (0,)
    remote_world_ranks = (0,)
    pml_state = None


def test_a_sized_receive_gets_a_buffer_of_the_message_length_in_matching_order():
    pml = LoopbackPml(Fabric(), 0)
    comm = _OneRankComm()
    pml.add_comm(comm)
    sized = pml.irecv_view(None, 0, 1, comm)  # posted first: takes the first message
    into = bytearray(8)
    later = pml.irecv_view(memoryview(into), 0, 1, comm)
    pml.isend_view(memoryview(b"first message"), 0, 1, comm, SendMode.STANDARD)
    pml.isend_view(memoryview(b"second"), 0, 1, comm, SendMode.STANDARD)
    assert sized.complete and sized.view is not None
    assert bytes(sized.view) == b"first message" and sized.count == 13
    assert later.complete and bytes(into[: later.count]) == b"second"


def test_imrecv_without_a_buffer_sizes_it_from_the_message():
    pml = LoopbackPml(Fabric(), 0)
    comm = _OneRankComm()
    pml.add_comm(comm)
    pml.isend_view(memoryview(b"probed"), 0, 2, comm, SendMode.STANDARD)
    message = pml.improbe(0, 2, comm)
    assert message is not None and (message.source, message.tag, message.count) == (0, 2, 6)
    request = pml.imrecv(None, message)
    assert request.complete and request.view is not None and bytes(request.view) == b"probed"
