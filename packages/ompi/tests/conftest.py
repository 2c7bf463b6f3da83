"""Fixtures shared by the ompi tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ompy.ompi.api import init
from ompy.ompi.api.testing import interpreter_world, no_default_instance


@pytest.fixture(scope="module")
def interpreter_mpi() -> Iterator[None]:
    """This interpreter's own MPI, initialized, for tests of modules built on ``ompy.MPI``
    (``ompy.futures``, ``ompy.util``).

    Other tests of this suite finalize or forget the interpreter's MPI (MPI cannot be
    initialized twice), so when it is not usable a one-rank loopback world is installed in its
    place for the test, and the interpreter's MPI is put back afterwards.
    """
    if init.Is_initialized() and not init.Is_finalized():
        yield
        return
    with interpreter_world():
        yield


@pytest.fixture
def no_mpi() -> Iterator[None]:
    """MPI not initialized in this interpreter during the test (whatever earlier tests did),
    and as it was afterwards."""
    with no_default_instance():
        yield
