"""Heterogeneous conversion: a packed stream of one architecture turned into another's.

A packed stream (what a convertor packs, what travels in a message, what ``Pack_external``
writes) holds the elements of a *signature* back to back: ``(basic, count)`` runs in order, as
``Description.signature(count)`` gives them.  Its bytes depend on the architecture that wrote
it; :func:`convert` rewrites them for another (``receiver makes right``: the receiver calls it
with the sender's architecture as ``source`` and its own as ``target``; ``Pack_external`` with
the local one and :data:`~ompy.opal.datatype.arch.EXTERNAL32`).

Per element type the work is vectorised numpy, never a Python loop per element:

- same representation: the bytes are copied (or, when nothing in the whole signature differs,
  the input is returned as is);
- same size, other byte order: every component's bytes reversed (``byteswap``);
- integers of another size: ``astype`` between explicit byte-order dtypes, after a range check
  when narrowing (a value that does not fit is a ``ValueError`` naming the type and the value);
- ``_Bool``/``LOGICAL`` of another size: zero stays false, anything else becomes 1;
- floating point and complex of another size (2, 4, 8 bytes): ``astype``; narrowing a finite
  value to infinity is a ``ValueError``;
- ``long double`` between x87 extended and IEEE binary128 (local x86-64 to external32 and back):
  exact one way, rounded to nearest even the other, by integer bit manipulation; other pairs
  of ``long double`` formats are a ``ValueError`` naming the type.

Runs of the same element type are gathered together with fancy indexing, so a struct type
repeated a million times costs a few array operations per distinct element type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .arch import EXTERNAL32, Arch, Element, LongDouble

#: One run of a signature: an element type and how many of it follow each other.
Run = tuple[Element, int]

#: A converter of one element type: ``n`` source elements (flat uint8) -> target bytes.
_Converter = Callable[[np.ndarray, int], np.ndarray]

#: Beyond this many runs of one element type, their bytes are gathered by fancy indexing
#: instead of a slice per run.
_SLICE_RUNS = 16
#: Up to this many runs in one element, ``count`` elements convert as a table (see
#: :func:`convert_description`); beyond it, as a flat list of runs.
_PERIODIC_RUNS = 64


def _check_runs(signature: Iterable[tuple[Any, int]]) -> list[Run]:
    runs: list[Run] = []
    for basic, given in signature:
        count = int(given)
        if count < 0:
            raise ValueError(f"a signature run of {basic.name!r} has a negative count {count}")
        if count:
            runs.append((basic, count))
    return runs


def packed_size(signature: Iterable[tuple[Any, int]], arch: Arch) -> int:
    """Bytes of the packed stream of ``signature`` in ``arch``'s representation."""
    return sum(arch.size_of(basic) * count for basic, count in _check_runs(signature))


def external32_size(signature: Iterable[tuple[Any, int]]) -> int:
    """Bytes of ``signature`` packed in MPI's external32 (``Pack_external_size``)."""
    return packed_size(signature, EXTERNAL32)


def whole_elements(
    signature: Iterable[tuple[Any, int]], arch: Arch, nbytes: int
) -> tuple[list[Run], int]:
    """The runs of the whole elements in the first ``nbytes`` of a stream in ``arch``, and how
    many bytes beyond them belong to an incomplete element (0 when ``nbytes`` ends on an
    element boundary).  A receive shorter than its datatype uses it to count elements
    (``Get_elements``) and to convert what arrived; ``nbytes`` past the end of the signature is
    a ``ValueError``."""
    if nbytes < 0:
        raise ValueError(f"a byte count must be >= 0, got {nbytes}")
    taken: list[Run] = []
    left = nbytes
    for basic, count in _check_runs(signature):
        size = arch.size_of(basic)
        whole = min(count, left // size)
        if whole:
            taken.append((basic, whole))
        left -= whole * size
        if whole < count:
            return taken, left
    if left:
        raise ValueError(
            f"{nbytes} bytes are more than the signature holds in this architecture "
            f"({nbytes - left} bytes)"
        )
    return taken, 0


def needs_conversion(signature: Iterable[tuple[Any, int]], source: Arch, target: Arch) -> bool:
    """Whether some element of ``signature`` is represented differently in the two."""
    if source == target:
        return False
    return any(
        not _same_representation(basic, source, target) for basic, _ in _check_runs(signature)
    )


def convert(
    data: memoryview | bytes | bytearray,
    signature: Iterable[tuple[Any, int]],
    source: Arch,
    target: Arch,
) -> memoryview:
    """The packed stream ``data`` of ``signature``, written by ``source``, as ``target`` writes
    it.  ``data`` must hold exactly the signature's bytes in ``source``.  When no element
    differs between the two, ``data`` itself comes back (no copy); otherwise a new writable
    buffer; either way as a flat view of unsigned bytes (format ``"B"``).  ``ValueError``
    (naming the type) for a value or a format the target cannot hold.
    """
    runs = _check_runs(signature)
    basics: dict[Any, int] = {}
    for basic, _count in runs:
        basics.setdefault(basic, len(basics))
    run_basic = np.fromiter((basics[b] for b, _ in runs), dtype=np.int64, count=len(runs))
    counts = np.fromiter((count for _, count in runs), dtype=np.int64, count=len(runs))
    return convert_runs(data, list(basics), run_basic, counts, source=source, target=target)


def convert_description(
    data: memoryview | bytes | bytearray,
    description: Any,
    count: int,
    source: Arch,
    target: Arch,
) -> memoryview:
    """:func:`convert` for the packed stream of ``count`` elements of ``description`` (a
    :class:`~ompy.opal.datatype.description.Description`), without building its signature as
    Python objects.  ``count`` elements of several runs each are converted as a table of
    ``count`` rows, one column block per run of the element: a struct repeated a million
    times costs a few array operations per run of one element."""
    basics = description.basics
    run_basic, counts = description.signature_arrays(1)
    if count <= 1 or len(run_basic) <= 1 or len(run_basic) > _PERIODIC_RUNS:
        run_basic, counts = description.signature_arrays(count)
        return convert_runs(data, basics, run_basic, counts, source=source, target=target)
    view = _byte_view(data)
    runs = [(basics[b], int(n)) for b, n in zip(run_basic.tolist(), counts.tolist(), strict=True)]
    src_sizes = [source.size_of(basic) * n for basic, n in runs]
    tgt_sizes = [target.size_of(basic) * n for basic, n in runs]
    row, out_row = sum(src_sizes), sum(tgt_sizes)
    if view.nbytes != row * count:
        raise ValueError(
            f"the packed data holds {view.nbytes} bytes, but {count} elements take "
            f"{row * count} bytes in the source architecture"
        )
    if source == target or all(_same_representation(b, source, target) for b, _ in runs):
        return view
    table = np.frombuffer(view, dtype=np.uint8).reshape(count, row)
    out = np.empty((count, out_row), dtype=np.uint8)
    src_at = tgt_at = 0
    for (basic, n), src_size, tgt_size in zip(runs, src_sizes, tgt_sizes, strict=True):
        block = np.ascontiguousarray(table[:, src_at : src_at + src_size]).reshape(-1)
        converted = _converter(basic, source, target)(block, count * n)
        out[:, tgt_at : tgt_at + tgt_size] = converted.reshape(count, tgt_size)
        src_at += src_size
        tgt_at += tgt_size
    return _as_view(out.reshape(-1))


def convert_runs(
    data: memoryview | bytes | bytearray,
    basics: Sequence[Any],
    run_basic: np.ndarray,
    counts: np.ndarray,
    *,
    source: Arch,
    target: Arch,
) -> memoryview:
    """:func:`convert` for a signature given as arrays: run ``i`` holds ``counts[i]`` elements
    of ``basics[run_basic[i]]`` (what ``Description.signature_arrays`` returns)."""
    view = _byte_view(data)
    run_basic = np.asarray(run_basic, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size and counts.min() < 0:
        raise ValueError("a signature run has a negative count")
    present = np.unique(run_basic[counts > 0]).tolist()
    src_size = np.zeros(len(basics), dtype=np.int64)
    tgt_size = np.zeros(len(basics), dtype=np.int64)
    for number in present:
        src_size[number] = source.size_of(basics[number])
        tgt_size[number] = target.size_of(basics[number])
    src_bytes = counts * src_size[run_basic]
    src_total = int(src_bytes.sum())
    if view.nbytes != src_total:
        raise ValueError(
            f"the packed data holds {view.nbytes} bytes, but the signature takes {src_total} "
            f"bytes in the source architecture"
        )
    if source == target or all(
        _same_representation(basics[number], source, target) for number in present
    ):
        return view
    src = np.frombuffer(view, dtype=np.uint8)
    if len(present) == 1:
        basic = basics[present[0]]
        return _as_view(_converter(basic, source, target)(src, int(counts.sum())))
    tgt_bytes = counts * tgt_size[run_basic]
    src_offsets = _exclusive_cumsum(src_bytes)
    tgt_offsets = _exclusive_cumsum(tgt_bytes)
    out = np.empty(int(tgt_bytes.sum()), dtype=np.uint8)
    for number in present:
        basic = basics[number]
        which = (run_basic == number) & (counts > 0)
        these = counts[which]
        convert_elements = _converter(basic, source, target)
        gathered = _gather(src, src_offsets[which], these, int(src_size[number]))
        converted = convert_elements(gathered, int(these.sum()))
        _scatter(out, tgt_offsets[which], these, int(tgt_size[number]), converted)
    return _as_view(out)


def _byte_view(data: memoryview | bytes | bytearray) -> memoryview:
    """``data`` as a flat view of unsigned bytes (what every conversion returns, too)."""
    view = memoryview(data)
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    return view


def _as_view(array: np.ndarray) -> memoryview:
    return np.ascontiguousarray(array).data.cast("B")


# -- gathering the runs of one element type ------------------------------------------------------


def _exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    sums = np.empty_like(values)
    if values.size:
        sums[0] = 0
        np.cumsum(values[:-1], out=sums[1:])
    return sums


def _element_offsets(offsets: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    """The byte offset of every element of the runs starting at ``offsets``."""
    total = int(counts.sum())
    firsts = np.repeat(offsets, counts)
    within = np.arange(total, dtype=np.int64) - np.repeat(_exclusive_cumsum(counts), counts)
    return firsts + within * size


def _gather(src: np.ndarray, offsets: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    if len(offsets) <= _SLICE_RUNS:
        return np.concatenate(
            [src[o : o + n * size] for o, n in zip(offsets.tolist(), counts.tolist(), strict=True)]
        )
    starts = _element_offsets(offsets, counts, size)
    return src[starts[:, None] + np.arange(size)].reshape(-1)


def _scatter(
    out: np.ndarray, offsets: np.ndarray, counts: np.ndarray, size: int, values: np.ndarray
) -> None:
    if len(offsets) <= _SLICE_RUNS:
        position = 0
        for o, n in zip(offsets.tolist(), counts.tolist(), strict=True):
            out[o : o + n * size] = values[position : position + n * size]
            position += n * size
        return
    starts = _element_offsets(offsets, counts, size)
    out[starts[:, None] + np.arange(size)] = values.reshape(-1, size)


# -- one element type ----------------------------------------------------------------------------


def _same_representation(basic: Element, source: Arch, target: Arch) -> bool:
    size = source.size_of(basic)
    if size != target.size_of(basic):
        return False
    if source.is_long_double(basic) and source.long_double is not target.long_double:
        return False
    component = size // source.parts_of(basic)
    return component == 1 or basic.kind == "byte" or source.byteorder == target.byteorder


def _converter(basic: Element, source: Arch, target: Arch) -> _Converter:
    """How to turn ``n`` elements of ``basic`` from ``source`` into ``target``."""
    parts = source.parts_of(basic)
    src_size, tgt_size = source.size_of(basic), target.size_of(basic)
    if _same_representation(basic, source, target):
        return lambda data, _n: data
    if source.is_long_double(basic) and source.long_double is not target.long_double:
        return _long_double_converter(basic, source, target)
    if src_size == tgt_size:
        component = src_size // parts
        return lambda data, _n: _byteswap(data, component)
    kind = basic.kind
    if kind in ("signed", "unsigned", "char"):
        return _integer_converter(basic, source, target)
    if kind == "bool":
        return _bool_converter(source, target, src_size, tgt_size)
    if kind in ("float", "complex") and not source.is_long_double(basic):
        return _float_converter(basic, source, target)
    raise ValueError(
        f"cannot convert {basic.name!r} from {src_size} to {tgt_size} bytes between these "
        f"architectures"
    )


def _byteswap(data: np.ndarray, size: int) -> np.ndarray:
    if size in (2, 4, 8):
        return data.view(f"u{size}").byteswap().view(np.uint8)
    return np.ascontiguousarray(data.reshape(-1, size)[:, ::-1]).reshape(-1)


def _integer_converter(basic: Element, source: Arch, target: Arch) -> _Converter:
    src_size, tgt_size = source.size_of(basic), target.size_of(basic)
    letter = "i" if basic.kind == "signed" else "u"
    for size in (src_size, tgt_size):
        if size not in (1, 2, 4, 8):
            raise ValueError(f"cannot convert {basic.name!r} of {size} bytes to another size")
    src_type = np.dtype(f"{source.order_char}{letter}{src_size}")
    tgt_type = np.dtype(f"{target.order_char}{letter}{tgt_size}")
    info = np.iinfo(tgt_type)

    def convert(data: np.ndarray, _n: int) -> np.ndarray:
        values = data.view(src_type)
        if tgt_size < src_size and values.size:
            low, high = values.min(), values.max()
            if low < info.min or high > info.max:
                bad = low if low < info.min else high
                raise ValueError(
                    f"the {basic.name} value {int(bad)} does not fit in the {tgt_size}-byte "
                    f"{basic.name} of the target architecture ({info.min}..{info.max})"
                )
        return values.astype(tgt_type).view(np.uint8)

    return convert


def _bool_converter(source: Arch, target: Arch, src_size: int, tgt_size: int) -> _Converter:
    # MPI: zero is false, anything else true, and every byte counts; a byte order is irrelevant
    # to "all bytes zero".
    tgt_type = np.dtype(f"{target.order_char}u{tgt_size}")

    def convert(data: np.ndarray, n: int) -> np.ndarray:
        truth = data.reshape(n, src_size).any(axis=1)
        return truth.astype(tgt_type).view(np.uint8)

    return convert


def _float_converter(basic: Element, source: Arch, target: Arch) -> _Converter:
    parts = source.parts_of(basic)
    src_size = source.size_of(basic) // parts
    tgt_size = target.size_of(basic) // parts
    for size in (src_size, tgt_size):
        if size not in (2, 4, 8):
            raise ValueError(f"cannot convert {basic.name!r} with {size}-byte components")
    src_type = np.dtype(f"{source.order_char}f{src_size}")
    tgt_type = np.dtype(f"{target.order_char}f{tgt_size}")

    def convert(data: np.ndarray, _n: int) -> np.ndarray:
        values = data.view(src_type)
        with np.errstate(over="ignore"):
            result = values.astype(tgt_type)
        if tgt_size < src_size:
            overflow = np.isinf(result) & np.isfinite(values)
            if overflow.any():
                bad = values[overflow][0]
                raise ValueError(
                    f"the {basic.name} value {bad.item()!r} does not fit in the {tgt_size}-byte "
                    f"floating point of the target architecture"
                )
        return result.view(np.uint8)

    return convert


# -- long double: x87 extended <-> IEEE binary128 -----------------------------------------------

_FRACTION63 = np.uint64((1 << 63) - 1)
_LOW15 = np.uint64((1 << 15) - 1)
_LOW48 = np.uint64((1 << 48) - 1)
_LOW49 = np.uint64((1 << 49) - 1)
_HALF49 = np.uint64(1 << 48)
_INTEGER_BIT = np.uint64(1 << 63)
_EXP_MAX = 0x7FFF


def _long_double_converter(basic: Element, source: Arch, target: Arch) -> _Converter:
    formats = {source.long_double, target.long_double}
    parts = source.parts_of(basic)
    src_size = source.size_of(basic) // parts
    tgt_size = target.size_of(basic) // parts
    if formats != {LongDouble.X87, LongDouble.BINARY128} or tgt_size < 10 or src_size < 10:
        raise ValueError(
            f"cannot convert {basic.name!r} from {source.long_double.value} "
            f"({src_size} bytes) to {target.long_double.value} ({tgt_size} bytes)"
        )
    to_binary128 = source.long_double is LongDouble.X87

    def convert(data: np.ndarray, n: int) -> np.ndarray:
        count = n * parts
        little = _little_endian_images(data, count, src_size, source.big_endian)
        if to_binary128:
            converted = _x87_to_binary128(little, tgt_size)
        else:
            converted = _binary128_to_x87(little, tgt_size, basic.name)
        if target.big_endian:
            converted = np.ascontiguousarray(converted[:, ::-1])
        return converted.reshape(-1)

    return convert


def _little_endian_images(data: np.ndarray, count: int, size: int, big: bool) -> np.ndarray:
    """``count`` elements as rows of their little-endian byte images (a big-endian element is
    the byte reversal of the little-endian one)."""
    rows = data.reshape(count, size)
    return np.ascontiguousarray(rows[:, ::-1] if big else rows)


def _x87_to_binary128(rows: np.ndarray, size: int) -> np.ndarray:
    """Exact: x87's 63 fraction bits fit in binary128's 112, and the exponents are alike."""
    mantissa = rows[:, 0:8].copy().view("<u8").reshape(-1)
    sign_exponent = rows[:, 8:10].copy().view("<u2").reshape(-1).astype(np.uint64)
    exponent = sign_exponent & np.uint64(_EXP_MAX)
    # A pseudo-denormal (exponent 0, integer bit set) is the smallest normal number.
    exponent = np.where((exponent == 0) & ((mantissa & _INTEGER_BIT) != 0), np.uint64(1), exponent)
    fraction = mantissa & _FRACTION63
    high = (
        ((sign_exponent >> np.uint64(15)) << np.uint64(63))
        | (exponent << np.uint64(48))
        | (fraction >> np.uint64(15))
    )
    low = (fraction & _LOW15) << np.uint64(49)
    out = np.zeros((rows.shape[0], size), dtype=np.uint8)
    out[:, 0:8] = low.astype("<u8").view(np.uint8).reshape(-1, 8)
    out[:, 8:16] = high.astype("<u8").view(np.uint8).reshape(-1, 8)
    return out


def _binary128_to_x87(rows: np.ndarray, size: int, name: str) -> np.ndarray:
    """Rounded to nearest, ties to even (112 fraction bits to 63); overflow is an error."""
    low = rows[:, 0:8].copy().view("<u8").reshape(-1)
    high = rows[:, 8:16].copy().view("<u8").reshape(-1)
    sign = high >> np.uint64(63)
    exponent = (high >> np.uint64(48)) & np.uint64(_EXP_MAX)
    fraction = ((high & _LOW48) << np.uint64(15)) | (low >> np.uint64(49))
    rest = low & _LOW49
    special = exponent == np.uint64(_EXP_MAX)
    round_up = ~special & (
        (rest > _HALF49) | ((rest == _HALF49) & ((fraction & np.uint64(1)) == 1))
    )
    fraction = fraction + round_up.astype(np.uint64)
    carry = fraction > _FRACTION63
    fraction = np.where(carry, np.uint64(0), fraction)
    exponent = exponent + carry.astype(np.uint64)
    overflow = carry & (exponent == np.uint64(_EXP_MAX))
    if overflow.any():
        raise ValueError(
            f"a {name} value of the source architecture is too large for x87 extended precision"
        )
    # A NaN whose payload lived only in the dropped bits stays a (quiet) NaN.
    nan_lost = special & (fraction == 0) & (rest != 0)
    fraction = np.where(nan_lost, np.uint64(1 << 62), fraction)
    integer = np.where(exponent != 0, _INTEGER_BIT, np.uint64(0))
    mantissa = integer | fraction
    sign_exponent = ((sign << np.uint64(15)) | exponent).astype("<u2")
    out = np.zeros((rows.shape[0], size), dtype=np.uint8)
    out[:, 0:8] = mantissa.astype("<u8").view(np.uint8).reshape(-1, 8)
    out[:, 8:10] = sign_exponent.view(np.uint8).reshape(-1, 2)
    return out
