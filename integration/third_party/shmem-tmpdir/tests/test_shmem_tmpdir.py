"""The tmpdir component, tested the way a third party tests a component against ompy-opal."""

from __future__ import annotations

from ompy.mca.shmem.tmpdir import TmpdirShmemComponent
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import SegmentDescriptor
from ompy.opal.mca.shmem.base import attach, reset_selection, selection


def registry(**settings: str) -> Registry:
    """A parameter registry that sees only the given settings (no environment, no files)."""
    return Registry(environ={f"OMPY_MCA_{k}": v for k, v in settings.items()}, files=[])


def test_offers_to_run_with_its_priority_when_the_directory_is_usable(tmp_path):
    component = TmpdirShmemComponent(registry(shmem_tmpdir_directory=str(tmp_path)))
    component.register_params()
    offer = component.query(None)
    assert offer is not None
    assert offer.priority == 5


def test_the_user_sets_its_priority(tmp_path):
    settings = {"shmem_tmpdir_directory": str(tmp_path), "shmem_tmpdir_priority": "90"}
    component = TmpdirShmemComponent(registry(**settings))
    component.register_params()
    assert component.query(None).priority == 90


def test_stays_out_when_the_directory_does_not_exist(tmp_path):
    component = TmpdirShmemComponent(registry(shmem_tmpdir_directory=str(tmp_path / "missing")))
    component.register_params()
    assert component.query(None) is None


def test_is_selected_and_its_segments_are_shared_and_cleaned_up(tmp_path):
    reset_selection()
    try:
        chosen = selection(registry(shmem="tmpdir", shmem_tmpdir_directory=str(tmp_path)))
        assert chosen.component.name == "tmpdir"
        with chosen.module.create("ompy-tmpdir-test", 4096) as segment:
            segment.buffer[:5] = b"hello"
            published = SegmentDescriptor.from_dict(segment.descriptor.to_dict())
            with attach(published) as peer:
                assert bytes(peer.buffer[:5]) == b"hello"
            segment.unlink()
        assert list(tmp_path.iterdir()) == []
    finally:
        reset_selection()
