"""``ompy.util.pool`` on threads (the MPI workers' side is ``ompy.futures``, tested apart)."""

from __future__ import annotations

import threading

import pytest

from ompy.util.pool import ApplyResult, MapResult, Pool, ThreadPool

#: Built on this interpreter's own MPI (see conftest.py).
pytestmark = pytest.mark.usefixtures("interpreter_mpi")


def test_the_methods_of_multiprocessing_pool() -> None:
    with ThreadPool(3) as pool:
        assert pool.apply(divmod, (7, 2)) == (3, 1)
        assert pool.apply(dict, (), {"a": 1}) == {"a": 1}
        assert pool.map(abs, range(-50, 50)) == [abs(n) for n in range(-50, 50)]
        assert pool.map(abs, range(-5, 5), chunksize=3) == [abs(n) for n in range(-5, 5)]
        assert pool.starmap(pow, [(2, 3), (3, 2)]) == [8, 9]
        assert list(pool.imap(abs, [-1, -2, -3])) == [1, 2, 3]
        assert sorted(pool.imap_unordered(abs, [-1, -2, -3])) == [1, 2, 3]
        assert list(pool.istarmap(pow, [(2, 2), (2, 4)])) == [4, 16]
        assert sorted(pool.istarmap_unordered(pow, [(2, 2), (2, 4)])) == [4, 16]
        assert pool.map(abs, []) == []
    pool.join()


def test_async_results_and_callbacks() -> None:
    got: list[object] = []
    errors: list[BaseException] = []
    with ThreadPool(2) as pool:
        result = pool.map_async(abs, [-1, -2], callback=got.append)
        assert isinstance(result, MapResult)
        assert result.get(10) == [1, 2]
        assert result.ready() and result.successful()
        assert got == [[1, 2]]
        failing = pool.apply_async(divmod, (1, 0), error_callback=errors.append)
        assert isinstance(failing, ApplyResult)
        failing.wait(10)
        assert not failing.successful()
        with pytest.raises(ZeroDivisionError):
            failing.get()
        assert isinstance(errors[0], ZeroDivisionError)
        assert pool.starmap_async(pow, [(3, 3)]).get(10) == [27]
        gate = threading.Event()
        slow = pool.apply_async(gate.wait)
        with pytest.raises(ValueError, match="not ready"):
            slow.successful()
        with pytest.raises(TimeoutError):
            slow.get(timeout=0.01)
        gate.set()
        assert slow.get(10) is True


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ThreadPool(0)
    with pytest.raises(TypeError, match="callable"):
        ThreadPool(1, initializer=5)  # type: ignore[arg-type]
    with pytest.warns(UserWarning, match="maxtasksperchild"):
        ThreadPool(1, maxtasksperchild=3).join()
    with ThreadPool(1) as pool, pytest.raises(ValueError, match="chunksize"):
        pool.map(abs, [1], chunksize=0)
    pool = ThreadPool(1)
    pool.terminate()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.apply(abs, (1,))
    assert Pool.Executor.__name__ == "MPIPoolExecutor"
