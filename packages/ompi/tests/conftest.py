"""Fixtures shared by the ompi tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ompy.ompi.api import init
from ompy.ompi.api.testing import make_world
from ompy.ompi.instance import Instance, adopt


@pytest.fixture(scope="module")
def interpreter_mpi() -> Iterator[None]:
    """This interpreter's own MPI, initialized, for tests of modules built on ``ompy.MPI``
    (``ompy.futures``, ``ompy.util``).

    Other tests of this suite finalize or forget the interpreter's MPI (MPI cannot be
    initialized twice), so when it is not usable a one-rank loopback world is installed in its
    place for the test, and forgotten afterwards.
    """
    if init.Is_initialized() and not init.Is_finalized():
        yield
        return
    instance: Instance = make_world(1)[0]._c.instance
    instance.cids.clear()
    adopt(instance)
    init._install(instance)
    try:
        yield
    finally:
        init._uninstall()
