"""numpy dtypes and MPI datatypes, each made from the other (mpi4py's ``mpi4py.util.dtlib``).

``from_numpy_dtype`` builds the datatype that describes one element of an array of that
dtype: a predefined type for a scalar dtype, a struct resized to the itemsize for a record,
a contiguous or subarray type for a sub-array field.  ``to_numpy_dtype`` goes the other way by
reading the datatype's constructor (its envelope, :meth:`Datatype.decode`): each combiner maps
to the numpy construct with the same memory layout, and a layout numpy cannot express (a
partial subarray, a darray) is refused with a ``ValueError``.

Record dtypes say whether they are *aligned*; a datatype built from fields at displacements
that honour each field's alignment gives an aligned dtype, as a C compiler would lay it out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import MPI

__all__ = ["from_numpy_dtype", "to_numpy_dtype"]


def from_numpy_dtype(dtype: Any) -> MPI.Datatype:
    """Convert NumPy datatype to MPI datatype."""
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise ValueError(f"NumPy datatype {dtype} has object entries: MPI cannot describe them")
    if not dtype.isnative:
        raise ValueError(f"NumPy datatype {dtype} has non-native byte order")
    if dtype.fields:
        return _from_record(dtype)
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        element = from_numpy_dtype(base)
        try:
            if len(shape) == 1:
                return element.Create_contiguous(shape[0])
            return element.Create_subarray(shape, shape, [0] * len(shape))
        finally:
            element.Free()
    return MPI.Datatype.fromcode(dtype.char).Dup()


def _from_record(dtype: np.dtype) -> MPI.Datatype:
    names = dtype.names or ()
    fields = [from_numpy_dtype(dtype.fields[name][0]) for name in names]
    try:
        record = MPI.Datatype.Create_struct(
            [1] * len(fields), [dtype.fields[name][1] for name in names], fields
        )
    finally:
        for field in fields:
            field.Free()
    try:
        return record.Create_resized(0, dtype.itemsize)  # numpy's padding at the end
    finally:
        record.Free()


def to_numpy_dtype(datatype: MPI.Datatype) -> np.dtype:
    """Convert MPI datatype to NumPy datatype."""
    if datatype == MPI.DATATYPE_NULL:
        raise ValueError("cannot convert null MPI datatype to NumPy")
    combiner = datatype.combiner
    if combiner == MPI.COMBINER_NAMED:
        return _named(datatype)
    base, _, info = datatype.decode()
    try:
        if combiner == MPI.COMBINER_RESIZED and base.combiner == MPI.COMBINER_STRUCT:
            return _record(datatype, base, info)  # a struct given numpy's itemsize
        convert = _CONVERTERS.get(combiner)
        if convert is None:
            raise ValueError(f"cannot convert MPI datatype {datatype.name or combiner} to NumPy")
        return convert(datatype, base, info)
    finally:
        _release(base, info)


def _release(base: MPI.Datatype, info: dict[str, Any]) -> None:
    """Free the handles ``decode()`` made (its base and the datatypes among its arguments)."""
    made = [base, *info.get("datatypes", ())]
    made += [info[key] for key in ("value", "index") if key in info]
    for handle in made:
        if not handle.is_predefined:
            handle.Free()


def _named(datatype: MPI.Datatype) -> np.dtype:
    """A predefined datatype: its numpy type (the value/index pairs are aligned records)."""
    if datatype.typechar != "V":
        return np.dtype(datatype.tocode())
    value, index = _PAIRS[datatype]
    return np.dtype(f"{value.tocode()},{index.tocode()}", align=True)


_PAIRS = {
    MPI.SHORT_INT: (MPI.SHORT, MPI.INT),
    MPI.INT_INT: (MPI.INT, MPI.INT),
    MPI.LONG_INT: (MPI.LONG, MPI.INT),
    MPI.FLOAT_INT: (MPI.FLOAT, MPI.INT),
    MPI.DOUBLE_INT: (MPI.DOUBLE, MPI.INT),
    MPI.LONG_DOUBLE_INT: (MPI.LONG_DOUBLE, MPI.INT),
}


def _aligned(datatype: MPI.Datatype, offset: int = 0) -> bool:
    """Whether every basic element of ``datatype`` placed at byte ``offset`` sits on a
    multiple of its own alignment (what numpy's ``align=True`` layout guarantees)."""
    if datatype.is_predefined:
        return offset % _named(datatype).alignment == 0
    combiner = datatype.combiner
    base, _, info = datatype.decode()
    try:
        parts: list[tuple[MPI.Datatype, int]] = [(base, 0)]
        if combiner == MPI.COMBINER_STRUCT:
            parts = list(zip(info["datatypes"], info["displacements"], strict=True))
        elif combiner == MPI.COMBINER_RESIZED:
            parts = [(base, info["extent"])]
        elif combiner == MPI.COMBINER_HVECTOR:
            parts = [(base, info["stride"] if info["count"] > 1 else 0)]
        elif combiner in {MPI.COMBINER_HINDEXED, MPI.COMBINER_HINDEXED_BLOCK}:
            parts = [(base, displacement) for displacement in info["displacements"]]
        return all(_aligned(part, offset + shift) for part, shift in parts)
    finally:
        _release(base, info)


def _record(datatype: MPI.Datatype, base: MPI.Datatype, info: dict[str, Any]) -> np.dtype:
    if datatype.combiner != MPI.COMBINER_RESIZED:
        return _struct(datatype, info, aligned=True)
    _, _, struct_info = base.decode()
    try:
        return _struct(datatype, struct_info, aligned=_aligned(base, info["extent"]))
    finally:
        _release(MPI.DATATYPE_NULL, struct_info)


def _struct(datatype: MPI.Datatype, info: dict[str, Any], *, aligned: bool) -> np.dtype:
    fields = info["datatypes"]
    displacements = info["displacements"]
    return np.dtype(
        {
            "names": [f"f{i}" for i in range(len(fields))],
            "formats": [
                to_numpy_dtype(field) if length == 1 else (to_numpy_dtype(field), length)
                for field, length in zip(fields, info["blocklengths"], strict=True)
            ],
            "offsets": displacements,
            "itemsize": datatype.extent,
            "aligned": aligned and all(map(_aligned, fields, displacements)),
        }
    )


def _dup(_datatype: MPI.Datatype, base: MPI.Datatype, _info: dict[str, Any]) -> np.dtype:
    return to_numpy_dtype(base)


def _contiguous(_datatype: MPI.Datatype, base: MPI.Datatype, info: dict[str, Any]) -> np.dtype:
    return np.dtype((to_numpy_dtype(base), (info["count"],)))


def _subarray(_datatype: MPI.Datatype, base: MPI.Datatype, info: dict[str, Any]) -> np.dtype:
    sizes, subsizes, starts = info["sizes"], info["subsizes"], info["starts"]
    if list(subsizes) != list(sizes) or any(starts):
        raise ValueError(
            f"cannot convert a subarray MPI datatype to NumPy: it selects {subsizes} of "
            f"{sizes} from {starts} (only a whole array has a NumPy form)"
        )
    shape = sizes[::-1] if info["order"] == MPI.ORDER_FORTRAN else sizes
    return np.dtype((to_numpy_dtype(base), tuple(shape)))


def _vector(datatype: MPI.Datatype, base: MPI.Datatype, info: dict[str, Any]) -> np.dtype:
    count, stride = info["count"], info["stride"]
    if datatype.combiner == MPI.COMBINER_VECTOR:
        stride *= base.extent  # in elements of the base type
        aligned = _aligned(base)
    else:
        stride = stride if count > 1 else 0
        aligned = _aligned(base, stride)
    element = to_numpy_dtype(base)
    return np.dtype(
        {
            "names": [f"f{i}" for i in range(count)],
            "formats": [(element, (info["blocklength"],))] * count,
            "offsets": [stride * i for i in range(count)],
            "itemsize": datatype.extent,
            "aligned": aligned,
        }
    )


def _indexed(datatype: MPI.Datatype, base: MPI.Datatype, info: dict[str, Any]) -> np.dtype:
    combiner = datatype.combiner
    displacements = info["displacements"]
    if combiner in {MPI.COMBINER_INDEXED, MPI.COMBINER_HINDEXED}:
        lengths = info["blocklengths"]
    else:
        lengths = [info["blocklength"]] * len(displacements)
    if combiner in {MPI.COMBINER_INDEXED, MPI.COMBINER_INDEXED_BLOCK}:
        offsets = [d * base.extent for d in displacements]  # in elements of the base type
        aligned = _aligned(base)
    else:
        offsets = list(displacements)
        aligned = _aligned(base) and all(_aligned(base, d) for d in displacements)
    element = to_numpy_dtype(base)
    return np.dtype(
        {
            "names": [f"f{i}" for i in range(len(displacements))],
            "formats": [(element, (length,)) for length in lengths],
            "offsets": offsets,
            "aligned": aligned,
        }
    )


def _f90(datatype: MPI.Datatype, _base: MPI.Datatype, _info: dict[str, Any]) -> np.dtype:
    return np.dtype(datatype.tocode())


def _value_index(_datatype: MPI.Datatype, _base: MPI.Datatype, info: dict[str, Any]) -> np.dtype:
    value, index = to_numpy_dtype(info["value"]), to_numpy_dtype(info["index"])
    return np.dtype([("f0", value), ("f1", index)], align=True)


_CONVERTERS: dict[int, Callable[[MPI.Datatype, MPI.Datatype, dict[str, Any]], np.dtype]] = {
    MPI.COMBINER_DUP: _dup,
    MPI.COMBINER_STRUCT: _record,
    MPI.COMBINER_CONTIGUOUS: _contiguous,
    MPI.COMBINER_SUBARRAY: _subarray,
    MPI.COMBINER_VECTOR: _vector,
    MPI.COMBINER_HVECTOR: _vector,
    MPI.COMBINER_INDEXED: _indexed,
    MPI.COMBINER_HINDEXED: _indexed,
    MPI.COMBINER_INDEXED_BLOCK: _indexed,
    MPI.COMBINER_HINDEXED_BLOCK: _indexed,
    MPI.COMBINER_F90_INTEGER: _f90,
    MPI.COMBINER_F90_REAL: _f90,
    MPI.COMBINER_F90_COMPLEX: _f90,
    MPI.COMBINER_VALUE_INDEX: _value_index,
}
