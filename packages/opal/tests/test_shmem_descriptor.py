"""A segment descriptor is plain data that survives the key-value store, and refuses junk."""

from __future__ import annotations

import json

import pytest

from ompy.opal.mca.shmem import (
    InvalidDescriptorError,
    InvalidSegmentNameError,
    SegmentDescriptor,
    check_segment_name,
)

GOOD = {
    "component": "posix",
    "name": "ompy-job7-rank3-fifo",
    "path": "/dev/shm/ompy-job7-rank3-fifo",
    "size": 4096,
    "node": "node17",
}


def test_descriptor_round_trips_through_json():
    descriptor = SegmentDescriptor(**GOOD)
    published = json.dumps(descriptor.to_dict())
    assert SegmentDescriptor.from_dict(json.loads(published)) == descriptor
    assert json.loads(published) == GOOD


def test_descriptor_is_immutable():
    descriptor = SegmentDescriptor(**GOOD)
    with pytest.raises(AttributeError):
        descriptor.size = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"component": ""}, "'component' must be a non-empty str"),
        ({"component": 3}, "'component' must be a non-empty str"),
        ({"node": None}, "'node' must be a non-empty str"),
        ({"name": "segment"}, "must start with 'ompy-'"),
        ({"name": "ompy-../x", "path": "/dev/shm/ompy-../x"}, "may contain only"),
        ({"path": "dev/shm/ompy-job7-rank3-fifo"}, "'path' must be an absolute path"),
        ({"path": "/dev/shm/ompy-other"}, "last part is the segment name"),
        ({"size": 0}, "at least 1 byte"),
        ({"size": "4096"}, "must be an int"),
        ({"size": True}, "must be an int"),
    ],
)
def test_from_dict_refuses_bad_fields_naming_them(change, complaint):
    with pytest.raises(InvalidDescriptorError, match="invalid segment descriptor") as caught:
        SegmentDescriptor.from_dict({**GOOD, **change})
    assert complaint in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_from_dict_names_missing_and_unknown_keys():
    data = {key: value for key, value in GOOD.items() if key != "size"}
    data["colour"] = "blue"
    with pytest.raises(InvalidDescriptorError, match="missing size; unknown colour"):
        SegmentDescriptor.from_dict(data)


def test_from_dict_refuses_what_is_not_a_mapping():
    with pytest.raises(InvalidDescriptorError, match="must be a mapping, got list"):
        SegmentDescriptor.from_dict([("name", "ompy-x")])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["ompy-a", "ompy-job.1_rank-2", "ompy-" + "x" * 250])
def test_safe_names_are_accepted(name):
    assert check_segment_name(name) == name


@pytest.mark.parametrize(
    ("name", "complaint"),
    [
        ("fifo", "must start with 'ompy-'"),
        ("/dev/shm/ompy-x", "must start with 'ompy-'"),
        ("ompy-", "must not be empty after it"),
        ("ompy-a/b", "may contain only"),
        ("ompy-a b", "may contain only"),
        ("ompy-a\x00", "may contain only"),
        ("ompy-" + "x" * 251, "the limit is 255"),
        (b"ompy-x", "must be a str"),
    ],
)
def test_unsafe_names_are_refused_with_the_reason(name, complaint):
    with pytest.raises(InvalidSegmentNameError) as caught:
        check_segment_name(name)
    assert complaint in str(caught.value)
    assert isinstance(caught.value, ValueError)
