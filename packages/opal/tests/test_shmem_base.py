"""The shmem framework picks one component per process and routes descriptors to their maker.

Throw-away components (installed for one test by the ``distributions`` fixture) stand in for
real ones, so these tests hold whichever shmem components happen to be installed: every test
names the components it admits through the ``shmem`` selection parameter.
"""

from __future__ import annotations

import importlib.metadata
import os
import uuid

import pytest

from ompy.opal.mca import Cardinality, ComponentLoadError, NoComponentError
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import SegmentDescriptor, ShmemError, framework
from ompy.opal.mca.shmem.base import attach, reset_selection, select_module, selection

FAKE_COMPONENTS = """
from ompy.opal.mca import Offer
from ompy.opal.mca.shmem import ShmemComponent
from ompy.opal.mca.shmem.base import FileSegmentModule

DIRECTORY = {directory!r}


class Alpha(ShmemComponent):
    name = "alpha"
    version = "1.0"
    default_priority = 30

    def query(self, context):
        return Offer(self.priority, self.attach_module())

    def attach_module(self):
        return FileSegmentModule(self.name, DIRECTORY)


class Beta(Alpha):
    name = "beta"
    default_priority = 20


class Shy(Alpha):
    name = "shy"
    default_priority = 90

    def query(self, context):
        return None


class Ancient(Alpha):
    name = "ancient"
    interface_version = (0, 9)


class Forgetful(ShmemComponent):
    name = "forgetful"
    version = "1.0"

    def query(self, context):
        return Offer(self.priority, FileSegmentModule(self.name, DIRECTORY))
"""


@pytest.fixture
def segments_dir(tmp_path):
    where = tmp_path / "segments"
    where.mkdir()
    yield where
    assert os.listdir(where) == [], "a test left segment files behind"


@pytest.fixture
def fakes(distributions, segments_dir):
    """Install the components alpha (30), beta (20), shy (declines), ancient (interface 0.9)
    and forgetful (no attach_module)."""
    module = f"fake_shmem_{uuid.uuid4().hex}"
    distributions.add(
        "fake-shmem",
        {
            "ompy.mca.shmem": {
                name: f"{module}:{cls}"
                for name, cls in [
                    ("alpha", "Alpha"),
                    ("beta", "Beta"),
                    ("shy", "Shy"),
                    ("ancient", "Ancient"),
                    ("forgetful", "Forgetful"),
                ]
            }
        },
        {f"{module}.py": FAKE_COMPONENTS.format(directory=str(segments_dir))},
    )
    reset_selection()
    yield
    reset_selection()


def registry(**settings: str) -> Registry:
    """A registry that sees only the given ``OMPY_MCA_*`` settings (no parameter files)."""
    return Registry(environ={f"OMPY_MCA_{k}": v for k, v in settings.items()}, files=[])


def test_the_framework_is_published_as_one_of_many():
    (entry,) = importlib.metadata.entry_points(group="ompy.frameworks", name="shmem")
    assert entry.load() is framework
    assert framework.cardinality is Cardinality.ONE
    assert framework.group == "ompy.mca.shmem"


def test_the_highest_priority_component_is_selected(fakes):
    module = select_module(registry(shmem="alpha,beta"))
    assert module.component == "alpha"


def test_a_priority_parameter_changes_the_choice(fakes):
    module = select_module(registry(shmem="alpha,beta", shmem_beta_priority="40"))
    assert module.component == "beta"


def test_a_component_that_declines_is_passed_over(fakes):
    assert select_module(registry(shmem="shy,beta")).component == "beta"


def test_nobody_offering_is_an_error_naming_who_was_tried(fakes):
    with pytest.raises(NoComponentError, match=r"no shmem component .*tried: shy"):
        select_module(registry(shmem="shy"))


def test_a_component_for_another_interface_version_is_refused_when_requested(fakes):
    with pytest.raises(ComponentLoadError, match=r"interface version 0\.9.*provides version 1"):
        select_module(registry(shmem="ancient"))


def test_a_component_without_attach_module_cannot_be_opened(fakes):
    with pytest.raises(ComponentLoadError, match=r"'forgetful'.*abstract method attach_module"):
        select_module(registry(shmem="forgetful"))


def test_the_choice_is_made_once_per_process(fakes):
    first = registry(shmem="alpha,beta")
    module = select_module(first)
    assert select_module() is module
    assert select_module(first) is module
    with pytest.raises(ShmemError, match=r"already selected.*reset_selection"):
        select_module(registry(shmem="beta"))
    reset_selection()
    assert select_module(registry(shmem="beta")).component == "beta"


def test_attach_routes_a_descriptor_to_the_component_that_made_it(fakes):
    chosen = selection(registry(shmem="alpha,beta"))
    assert chosen.component.name == "alpha"
    (beta,) = [c for c in chosen.framework.components if c.name == "beta"]
    with beta.attach_module().create(f"ompy-test-{uuid.uuid4().hex}", 256) as made:
        made.buffer[:4] = b"beta"
        published = SegmentDescriptor.from_dict(made.descriptor.to_dict())
        with attach(published) as attached:
            assert attached.descriptor.component == "beta"
            assert bytes(attached.buffer[:4]) == b"beta"
        made.unlink()


def test_attach_through_a_component_not_available_here_says_why(fakes, segments_dir):
    select_module(registry(shmem="alpha"))
    name = f"ompy-test-{uuid.uuid4().hex}"
    descriptor = SegmentDescriptor("beta", name, str(segments_dir / name), 64, "somewhere")
    with pytest.raises(ShmemError, match=r"'beta', which is not available.*'shmem' = 'alpha'"):
        attach(descriptor)


def test_attach_wants_a_descriptor_not_a_dict(fakes):
    select_module(registry(shmem="alpha"))
    with pytest.raises(TypeError, match=r"SegmentDescriptor\.from_dict"):
        attach({"component": "alpha"})  # type: ignore[arg-type]
