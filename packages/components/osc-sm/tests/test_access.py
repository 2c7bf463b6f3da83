"""The bytes an RMA call touches: the range an accumulate locks covers exactly its data."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.osc.sm import access
from ompy.ompi.datatype.predefined import DOUBLE, INT32_T

TYPES = {
    "double": lambda: DOUBLE,
    "contiguous": lambda: INT32_T.Create_contiguous(3).Commit(),
    "vector": lambda: DOUBLE.Create_vector(3, 1, 2).Commit(),
    "shifted": lambda: INT32_T.Create_indexed([2], [3]).Commit(),  # one block, lb at 12
    "resized": lambda: INT32_T.Create_resized(-4, 12).Commit(),
}


@given(st.sampled_from(sorted(TYPES)), st.integers(0, 4), st.integers(0, 64))
def test_span_is_the_first_to_last_byte_written(name: str, count: int, offset: int) -> None:
    datatype = TYPES[name]()
    memory = memoryview(bytearray(512))
    spec = access.target_spec(memory, offset + 16, count, datatype, call="test", rank=0)
    access.write(spec, memoryview(np.full(spec.nbytes, 0xFF, np.uint8)))
    written = np.flatnonzero(np.frombuffer(memory, np.uint8))
    low, high = access.span(spec)
    if written.size == 0:
        assert high <= low
    else:
        assert (low, high) == (int(written[0]), int(written[-1]) + 1)
