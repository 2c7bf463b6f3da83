"""The pml framework description and the base class its components derive from."""

import pytest

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
