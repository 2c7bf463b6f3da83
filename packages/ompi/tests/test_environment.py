"""Environment queries of mpi4py 4.1: vendor, versions, profiling control, hardware, ABI."""

import os
from pathlib import Path

import pytest

import ompy.ompi
from ompy.ompi.api import environment, rc
from ompy.ompi.api.hwinfo import parse_cpulist, resources

rc.initialize = False  # nothing here needs MPI initialized
from ompy import MPI  # noqa: E402


def test_get_vendor_names_ompy_and_its_version():
    name, version = MPI.get_vendor()
    assert name == "ompy"
    assert version == tuple(int(part) for part in ompy.ompi.__version__.split(".")[:3])
    assert all(type(part) is int for part in version) and len(version) == 3


@pytest.mark.parametrize(
    ("text", "triple"),
    [("1.2.3", (1, 2, 3)), ("1.2", (1, 2, 0)), ("2", (2, 0, 0)), ("0.4.1rc2", (0, 4, 1))],
)
def test_version_strings_read_as_three_numbers(text, triple):
    assert environment._version_triple(text) == triple


def test_a_version_without_a_number_is_an_error():
    with pytest.raises(ValueError, match="does not start with a number"):
        environment._version_triple("dev")


def test_the_standard_is_mpi_4_1_and_the_library_string_names_ompy():
    assert MPI.Get_version() == (MPI.VERSION, MPI.SUBVERSION) == (4, 1)
    text = MPI.Get_library_version()
    assert text.startswith(f"ompy {ompy.ompi.__version__}") and "MPI 4.1" in text
    assert len(text) <= MPI.MAX_LIBRARY_VERSION_STRING


def test_pcontrol_takes_the_three_levels_and_refuses_others():
    for level in (2, 1, 0, 1):
        assert MPI.Pcontrol(level) is None
    for bad in (-1, 3):
        with pytest.raises(MPI.Exception) as info:
            MPI.Pcontrol(bad)
        assert info.value.Get_error_class() == MPI.ERR_ARG
    with pytest.raises(TypeError, match="level"):
        MPI.Pcontrol("1")


def test_the_abi_calls_are_unavailable_as_in_mpi4py_without_the_abi():
    for call in (MPI.Get_abi_version, MPI.Get_abi_info, MPI.Get_abi_fortran_info):
        with pytest.raises(NotImplementedError, match="no C application binary interface"):
            call()


# -- hardware resources -------------------------------------------------------------------------


def test_hw_resource_info_of_this_process_uses_hwloc_uris_with_boolean_values():
    info = MPI.Get_hw_resource_info()
    assert type(info) is MPI.Info and info != MPI.INFO_NULL  # a new info, the caller's to free
    keys = list(info)
    assert keys[0] == "hwloc://Machine" and info.Get("hwloc://Machine") == "true"
    assert keys[-1] == "hwloc://PU"
    assert all(key.startswith("hwloc://") for key in keys)
    assert all(info.Get(key) in ("true", "false") for key in keys)
    pinned = len(os.sched_getaffinity(0)) == 1
    assert info.Get("hwloc://PU") == ("true" if pinned else "false")
    assert info.Get_nkeys() == len(keys)
    info.Free()


def _cpu(root: Path, cpu: int, package: str, core: str, caches: dict[int, str]) -> None:
    topology = root / "cpu" / f"cpu{cpu}" / "topology"
    topology.mkdir(parents=True)
    (topology / "package_cpus_list").write_text(package + "\n")
    (topology / "core_cpus_list").write_text(core + "\n")
    index = 0
    for level, shared in caches.items():
        kinds = ["Data", "Instruction"] if level == 1 else ["Unified"]
        for kind in kinds:
            entry = root / "cpu" / f"cpu{cpu}" / "cache" / f"index{index}"
            entry.mkdir(parents=True)
            (entry / "level").write_text(f"{level}\n")
            (entry / "type").write_text(kind + "\n")
            # an instruction cache shared differently must not count as the L1 data cache
            (entry / "shared_cpu_list").write_text("0-7" if kind == "Instruction" else shared)
            index += 1


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    """Two packages of two cores with two hardware threads each; one L3 per package, one
    L2 and L1 per core; NUMA node 0 = package 0, node 1 = package 1."""
    for cpu in range(8):
        package = "0-3" if cpu < 4 else "4-7"
        first = cpu - cpu % 2
        core = f"{first}-{first + 1}"
        _cpu(tmp_path, cpu, package, core, {1: core, 2: core, 3: package})
    for node, cpus in ((0, "0-3"), (1, "4-7")):
        directory = tmp_path / "node" / f"node{node}"
        directory.mkdir(parents=True)
        (directory / "cpulist").write_text(cpus + "\n")
    return tmp_path


@pytest.mark.parametrize(
    ("cpus", "confined"),
    [
        ({0}, {"Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core", "PU"}),
        ({0, 1}, {"Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core"}),
        ({0, 2}, {"Package", "NUMANode", "L3Cache"}),
        ({3, 4}, set()),
    ],
)
def test_a_resource_type_is_true_when_every_allowed_processor_is_in_one_of_them(
    machine, cpus, confined
):
    info = resources(cpus, root=machine)
    assert list(info) == [
        "hwloc://" + kind
        for kind in (
            "Machine",
            "Package",
            "NUMANode",
            "L3Cache",
            "L2Cache",
            "L1Cache",
            "Core",
            "PU",
        )
    ]
    for key, value in info.items():
        kind = key.removeprefix("hwloc://")
        expected = kind == "Machine" or kind in confined
        assert value == ("true" if expected else "false"), key


def test_types_the_system_does_not_describe_are_left_out(tmp_path):
    _cpu(tmp_path, 0, "0-1", "0", {})
    _cpu(tmp_path, 1, "0-1", "1", {})
    info = resources({0, 1}, root=tmp_path)
    assert info == {
        "hwloc://Machine": "true",
        "hwloc://Package": "true",
        "hwloc://Core": "false",
        "hwloc://PU": "false",
    }
    assert resources({0}, root=tmp_path / "missing") == {
        "hwloc://Machine": "true",
        "hwloc://PU": "true",
    }
    with pytest.raises(ValueError, match="no processor"):
        resources(set(), root=tmp_path)


def test_older_kernels_name_the_siblings_differently(tmp_path):
    for cpu in (0, 1):
        topology = tmp_path / "cpu" / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "core_siblings_list").write_text("0-1")
        (topology / "thread_siblings_list").write_text(str(cpu))
    info = resources({0, 1}, root=tmp_path)
    assert info["hwloc://Package"] == "true" and info["hwloc://Core"] == "false"


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0", [0]), ("0-3", [0, 1, 2, 3]), ("0-1,8,10-11", [0, 1, 8, 10, 11]), ("", [])],
)
def test_kernel_cpu_lists(text, cpus):
    assert parse_cpulist(text) == cpus
