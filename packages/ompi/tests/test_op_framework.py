"""The op framework: components supply kernels per (operation, datatype), best priority first.

Throw-away components installed for each test (as ``pip install`` would leave them) stand in
for real ones, so these tests hold whether or not ompy-op-ufunc is installed.
"""

import sys
import textwrap

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api.testing import make_world, no_default_instance
from ompy.ompi.datatype import predefined as types
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.instance import adopted
from ompy.ompi.mca.op import INTERFACE_VERSION, Intrinsic, OpComponent, OpModule, framework
from ompy.ompi.mca.op.base import OpSelection
from ompy.ompi.op import BAND, PROD, REPLACE, SUM, Op
from ompy.opal.mca import Cardinality, ComponentVersionError
from ompy.opal.mca.discovery import check_component_class
from ompy.opal.mca.entry_points import forget as forget_entry_points
from ompy.opal.mca.params import Registry

COMPONENTS = """
import numpy as np

from ompy.ompi.mca.op import Intrinsic, OpComponent, OpModule
from ompy.opal.mca import Offer

ASKED = []


def tagged(kernel, origin):
    kernel.origin = origin
    return kernel


class DoubleSumModule(OpModule):
    def kernel(self, op, datatype):
        ASKED.append(("fast", op, datatype.Get_name()))
        if op is Intrinsic.SUM and datatype.Get_name() == "MPI_DOUBLE":
            def run(inmem, inoutmem, count):
                out = np.frombuffer(inoutmem, "d", count)
                np.add(np.frombuffer(inmem, "d", count), out, out=out)
            return tagged(run, "fast")
        return None


class AnySumModule(OpModule):
    def kernel(self, op, datatype):
        ASKED.append(("slow", op, datatype.Get_name()))
        dtype = datatype.dtype
        if op is Intrinsic.SUM:
            def run(inmem, inoutmem, count):
                out = np.frombuffer(inoutmem, dtype, count)
                np.add(np.frombuffer(inmem, dtype, count), out, out=out)
            return tagged(run, "slow")
        if op is Intrinsic.REPLACE:
            def run(inmem, inoutmem, count):
                np.copyto(np.frombuffer(inoutmem, dtype, count), np.frombuffer(inmem, dtype, count))
            return tagged(run, "slow")
        return None


class Fast(OpComponent):
    name = "fast"
    version = "1.0"
    default_priority = 50

    def query(self, context=None):
        return Offer(self.priority, DoubleSumModule())


class Slow(OpComponent):
    name = "slow"
    version = "1.0"
    default_priority = 5

    def close(self):
        ASKED.append(("closed", "slow"))

    def query(self, context=None):
        return Offer(self.priority, AnySumModule())


class Shy(OpComponent):
    name = "shy"
    version = "1.0"


class Grumpy(OpComponent):
    name = "grumpy"
    version = "1.0"

    def query(self, context=None):
        raise RuntimeError("no kernels today")
"""

ENTRY_POINTS = """
[ompy.mca.op]
fast = op_fixture_components:Fast
slow = op_fixture_components:Slow
shy = op_fixture_components:Shy
grumpy = op_fixture_components:Grumpy
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The fixture components on ``sys.path`` (each test opens its own op selection)."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "op_fixture_components.py").write_text(textwrap.dedent(COMPONENTS))
    info = root / "op_fixture-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: op-fixture\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS.lstrip())
    monkeypatch.syspath_prepend(str(root))
    forget_entry_points()
    yield
    forget_entry_points()
    sys.modules.pop("op_fixture_components", None)


def open_with(**settings: str) -> OpSelection:
    """An op framework opened with these MCA settings (``op="fast,slow"``) and nothing else."""
    environ = {f"OMPY_MCA_{name}": value for name, value in settings.items()}
    selection = OpSelection(Registry(environ=environ, files=[]))
    selection.modules()
    return selection


def asked():
    return sys.modules["op_fixture_components"].ASKED


# -- the framework description ------------------------------------------------------------------


def test_the_op_framework_keeps_every_component_that_offers():
    assert framework.name == "op"
    assert framework.layer == "ompi"
    assert framework.group == "ompy.mca.op"
    assert framework.cardinality is Cardinality.MANY
    assert framework.interface_version == INTERFACE_VERSION == (1, 0)


def test_an_op_component_fits_the_framework_and_another_major_version_does_not():
    class Good(OpComponent):
        name = "good"
        version = "1.0"

    class Old(OpComponent):
        name = "old"
        version = "1.0"
        interface_version = (2, 0)

    check_component_class(framework, "good", Good)
    assert Good(Registry(environ={}, files=[])).query() is None
    with pytest.raises(ComponentVersionError, match=r"interface version 2\.0"):
        check_component_class(framework, "old", Old)
    with pytest.raises(TypeError, match="abstract"):
        OpModule()


# -- selection ------------------------------------------------------------------------------


def test_modules_come_best_priority_first_and_silent_components_are_left_out(installed):
    chosen = open_with(op="fast,slow,shy").modules()
    assert [component.name for component, _ in chosen] == ["fast", "slow"]


def test_the_best_module_that_implements_a_pair_supplies_its_kernel(installed):
    sel = open_with(op="fast,slow")
    assert sel.kernel(SUM, types.DOUBLE).origin == "fast"
    assert sel.kernel(SUM, types.INT).origin == "slow"  # fast passes on INT
    assert asked() == [
        ("fast", Intrinsic.SUM, "MPI_DOUBLE"),
        ("fast", Intrinsic.SUM, "MPI_INT"),
        ("slow", Intrinsic.SUM, "MPI_INT"),
    ]


def test_a_priority_parameter_changes_which_module_wins(installed):
    sel = open_with(op="fast,slow", op_slow_priority="100")
    assert sel.kernel(SUM, types.DOUBLE).origin == "slow"


def test_kernels_are_chosen_once_per_pair_and_shared_by_handles_and_aliases(installed):
    sel = open_with(op="fast,slow")
    first = sel.kernel(SUM, types.INT)
    count = len(asked())
    assert sel.kernel(Op(SUM), types.SIGNED_INT) is first
    assert sel.intrinsic_kernel(Intrinsic.SUM, types.INT) is first
    assert len(asked()) == count


def test_no_module_for_a_pair_is_an_op_error_that_says_what_to_install(installed):
    sel = open_with(op="fast,slow")
    with pytest.raises(MPIException) as info:
        sel.kernel(PROD, types.INT)
    assert info.value.Get_error_class() == errors.ERR_OP
    message = str(info.value)
    assert "no op component implements MPI.PROD on MPI_INT" in message
    assert "op components running: fast, slow" in message
    assert "'op' = 'fast,slow' comes from" in message
    assert "install ompy-op-ufunc" in message


def test_a_component_failing_its_query_is_skipped_and_reported(installed):
    sel = open_with(op="^ufunc")
    assert [component.name for component, _ in sel.modules()] == ["fast", "slow"]
    failures = sel.opened().failures
    assert [(f.name, f.reason) for f in failures] == [("grumpy", "query failed: no kernels today")]
    with pytest.raises(MPIException, match="failed: grumpy: query failed: no kernels today"):
        sel.kernel(PROD, types.INT)


def test_forbidden_combinations_and_user_operations_never_ask_the_modules(installed):
    sel = open_with(op="fast,slow")
    with pytest.raises(MPIException, match=r"MPI\.BAND is not defined on MPI_DOUBLE"):
        sel.kernel(BAND, types.DOUBLE)
    op = Op.Create(lambda a, b, t: None)
    try:
        sel.kernel(op, types.DOUBLE)(bytes(8), bytearray(8), 1)
    finally:
        op.Free()
    assert asked() == []


def test_two_selections_in_one_interpreter_are_independent(installed):
    fast, slow = open_with(op="fast"), open_with(op="slow")
    assert fast.kernel(SUM, types.DOUBLE).origin == "fast"
    assert slow.kernel(SUM, types.DOUBLE).origin == "slow"


# -- reductions through the framework -----------------------------------------------------------


def test_reduce_local_with_a_predefined_operation_runs_the_selected_kernel(installed):
    (world,) = make_world(1, registry=Registry(environ={"OMPY_MCA_op": "fast,slow"}, files=[]))
    with adopted(world._c.instance):  # Reduce_local runs on the default instance's op framework
        inout = np.array([10.0, 20.0, 30.0])
        SUM.Reduce_local(np.array([1.0, 2.0, 3.0]), inout)
        assert inout.tolist() == [11.0, 22.0, 33.0]
        SUM.Reduce_local(inout, inout)  # MPI.IN_PLACE-like aliasing
        assert inout.tolist() == [22.0, 44.0, 66.0]
        empty = np.zeros(0, "i")
        SUM.Reduce_local(np.zeros(0, "i"), empty)
        assert empty.size == 0
        assert world._c.instance.op.kernel(SUM, types.DOUBLE).origin == "fast"


def test_reduce_local_needs_mpi():
    with (
        no_default_instance(),
        pytest.raises(MPIException, match=r"Op\.Reduce_local: MPI is not initialized"),
    ):
        SUM.Reduce_local(np.zeros(1), np.zeros(1))


def test_accumulates_admit_replace_but_reductions_and_user_operations_do_not(installed):
    sel = open_with(op="fast,slow")
    target = np.array([1, 2], "i")
    sel.accumulate_kernel(REPLACE, types.INT)(np.array([7, 8], "i"), target, 2)
    assert target.tolist() == [7, 8]
    with pytest.raises(MPIException, match="one-sided accumulate operations only"):
        sel.kernel(REPLACE, types.INT)
    op = Op.Create(lambda a, b, t: None)
    try:
        with pytest.raises(MPIException, match="cannot be used in one-sided accumulate") as info:
            sel.accumulate_kernel(op, types.INT)
        assert info.value.Get_error_class() == errors.ERR_OP
    finally:
        op.Free()


def test_a_non_op_is_refused_with_a_type_error():
    sel = OpSelection(Registry(environ={}, files=[]))
    with pytest.raises(TypeError, match=r"expecting an MPI\.Op"):
        sel.kernel("SUM", types.INT)
    with pytest.raises(TypeError, match=r"expecting an MPI\.Datatype"):
        sel.kernel(SUM, "d")


def test_finalize_closes_the_components_and_forgets_the_kernels(installed):
    sel = open_with(op="fast,slow")
    fast = sel.kernel(SUM, types.DOUBLE)
    assert fast.origin == "fast"
    sel.finalize()
    assert ("closed", "slow") in asked()
    assert sel.opened() is None
    sel.finalize()  # nothing left to close
    assert asked().count(("closed", "slow")) == 1
    sel = open_with(op="slow")  # a new selection starts from scratch, no stale kernel
    assert sel.kernel(SUM, types.DOUBLE).origin == "slow"
