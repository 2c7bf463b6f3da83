"""Buffers that do not speak the buffer protocol: DLPack, the CUDA array interface, numpy's.

An uppercase method first asks for the buffer protocol (``memoryview``); an object without it
is read here, in mpi4py's order: ``__dlpack__`` (DLPack), then ``__cuda_array_interface__``
(CAI), then ``__array_interface__``.  What comes back is a numpy array over the exporter's own
memory (never a copy: a receive must land in it), whose ``base`` chain keeps that memory alive
exactly as long as the array — and the memoryviews ompy makes of it — live.  ompy holds those
only for the call or the request that uses them (see ``BufferSpec``), so no exporter outlives
its operation because of ompy.

ompy moves host memory only, with numpy copies: memory on a device gets a
:class:`DeviceMemoryError` that names the device, before anything touches it.

Where ompy differs from mpi4py 4.1, and why:

- **Device memory.**  mpi4py hands device pointers to a CUDA-aware MPI library and refuses them
  only in calls that must read them on the CPU.  ompy has no device path, so it refuses them
  in every call.  DLPack's CPU-accessible device types (CPU, CUDA host, ROCm host, CUDA
  managed) are host memory, as in mpi4py.
- **CAI pointers are checked.**  The CUDA array interface says nothing about where its pointer
  points (it was made for device memory), and mpi4py takes every CAI buffer for device memory.
  A wrong guess here would crash the interpreter when numpy copies, so ompy accepts a CAI
  pointer only if every byte of the buffer lies in a readable mapping of this process
  (``/proc/self/maps``), and, for a receive, a writable one (else the buffer is read-only).
  Device memory under CUDA's unified addressing is reserved in the process without access
  rights, so it is refused, as is any pointer into no mapping at all.  The check reads the
  mappings on every CAI message (a fraction of a millisecond): CAI over host memory is rare,
  and a stale cache could let a pointer into memory since unmapped crash the process.
  ``stream`` is ignored (no device work to order against host copies).  A malformed interface
  raises what mpi4py raises (``KeyError``, ``TypeError``, ``ValueError``, ``BufferError``).
- **DLPack versions.**  A DLPack 1.0 exporter is asked for its memory with ``copy=False`` (a
  receive must land in it) and its read-only flag is honoured, as in mpi4py.  An exporter older
  than 1.0 cannot say whether its memory may be written: numpy's ``from_dlpack`` then makes a
  read-only array, but mpi4py lets such buffers be received into, and ompy follows mpi4py (an
  mpi4py program receiving into, say, a CPU tensor of an older library must keep working).
- **DLPack capsules are consumed.**  mpi4py reads the tensor out of the capsule and keeps the
  capsule, unconsumed, until the buffer is released.  ompy hands the exporter to
  ``numpy.from_dlpack``, which consumes the capsule as the DLPack specification says (renames it
  and calls the producer's deleter when the array dies): one implementation of the protocol,
  numpy's, rather than a second one in ctypes.  So an element type numpy has no dtype for
  (``bfloat16``, vector lanes) is refused with a ``BufferError`` where mpi4py would send its
  bytes, and an exporter must hand out a fresh capsule per call (as real producers do).
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import Any

import attrs
import numpy as np

#: DLPack device types (``DLDeviceType`` of ``dlpack.h``) and their names, for errors.
DLPACK_DEVICES: dict[int, str] = {
    1: "CPU",
    2: "CUDA",
    3: "CUDA host",
    4: "OpenCL",
    7: "Vulkan",
    8: "Metal",
    9: "VPI",
    10: "ROCm",
    11: "ROCm host",
    12: "ExtDev",
    13: "CUDA managed",
    14: "oneAPI",
    15: "WebGPU",
    16: "Hexagon",
    17: "MAIA",
}
#: Device types whose memory the CPU reads and writes directly.
HOST_ACCESSIBLE = frozenset({1, 3, 11, 13})
_MAPS = Path("/proc/self/maps")


class DeviceMemoryError(BufferError, TypeError):
    """The buffer's memory is on a device (a GPU): ompy moves host memory only.

    A ``BufferError``, as mpi4py raises for memory the CPU cannot access, and a ``TypeError``
    for code that expects the error of an unusable buffer object.
    """


def host_array(obj: Any) -> tuple[np.ndarray, str]:
    """``obj``'s memory as a numpy array, and why it is read-only (``""`` if writable).

    Raises :class:`DeviceMemoryError` for device memory and ``TypeError`` for an object that
    exports its memory in none of the ways ompy reads.
    """
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj)
    if hasattr(obj, "__array_interface__"):
        array = np.asarray(obj)
        return array, "" if array.flags.writeable else "its __array_interface__ is read-only"
    raise TypeError(
        f"message: expecting a buffer-like object (buffer protocol, __dlpack__, "
        f"__cuda_array_interface__ or __array_interface__ over host memory) or a list "
        f"[buf, count, datatype], not {type(obj).__name__}"
    )


# -- DLPack ---------------------------------------------------------------------------------------


def _from_dlpack(obj: Any) -> tuple[np.ndarray, str]:
    name = type(obj).__name__
    if not hasattr(obj, "__dlpack_device__"):
        raise TypeError(
            f"message: the {name} object has __dlpack__ but no __dlpack_device__, so where its "
            "memory lives is unknown (DLPack requires both)"
        )
    device_type, device_id = obj.__dlpack_device__()  # not a pair: TypeError or ValueError
    if not isinstance(device_type, int) or not isinstance(device_id, int):
        raise TypeError(
            f"message: the {name} object's __dlpack_device__() gave "
            f"({device_type!r}, {device_id!r}), not (device type, device id) as ints"
        )
    if device_type not in HOST_ACCESSIBLE:
        known = DLPACK_DEVICES.get(device_type)
        device = (
            f"device {known}:{device_id} (DLPack device type {device_type})"
            if known
            else f"a device of unknown DLPack type {device_type} (id {device_id})"
        )
        raise DeviceMemoryError(
            f"message: the {name} object's memory is on {device}, not in host memory; ompy "
            "moves host memory only: copy it to the host first"
        )
    try:
        # DLPack 1.0: numpy asks for max_version (1, 0); copy=False, for a receive must land
        # in the exporter's own memory.  The array is read-only where the exporter says so.
        return _readonly_note(np.from_dlpack(obj, copy=False), "its DLPack export is read-only")
    except TypeError:
        pass  # an exporter older than DLPack 1.0: no max_version, copy or dl_device keywords
    except _UNUSABLE as error:
        raise _unusable(name, error) from None
    try:
        array = np.from_dlpack(obj)
    except (TypeError, *_UNUSABLE) as error:
        raise _unusable(name, error) from None
    return _writable(array), ""


#: What numpy raises for a DLPack tensor it cannot read (a bad shape or dtype, a capsule already
#: consumed); mpi4py raises ``BufferError`` for these, and so does ompy.
_UNUSABLE = (BufferError, ValueError, RuntimeError)


def _unusable(name: str, error: BaseException) -> BufferError:
    return BufferError(f"message: the {name} object's DLPack export is unusable: {error}")


def _writable(array: np.ndarray) -> np.ndarray:
    """A writable array over the memory of ``array`` (which it keeps alive, and with it the
    DLPack capsule and its deleter): for a pre-1.0 export, numpy's array is read-only only
    because the protocol cannot say otherwise."""
    if array.flags.writeable:
        return array
    interface = dict(array.__array_interface__)
    interface["data"] = (interface["data"][0], False)
    return np.asarray(_HostView(array, interface))


def _readonly_note(array: np.ndarray, why: str) -> tuple[np.ndarray, str]:
    return array, "" if array.flags.writeable else why


# -- CUDA array interface ------------------------------------------------------------------------


class _HostView:
    """``__array_interface__`` over memory that ``exporter`` owns (a CAI exporter, or the
    read-only array numpy made of a pre-1.0 DLPack capsule), which it keeps alive.

    numpy makes this object the array's ``base``, so the exporter lives exactly as long as the
    array (and every view of it) does.
    """

    __slots__ = ("__array_interface__", "exporter")

    def __init__(self, exporter: Any, interface: dict[str, Any]) -> None:
        self.exporter = exporter
        self.__array_interface__ = interface


def _from_cai(obj: Any) -> tuple[np.ndarray, str]:
    """The host array of a CAI exporter; malformed interfaces raise what mpi4py raises
    (``KeyError`` for a missing key, ``TypeError`` for a value of the wrong type,
    ``ValueError`` for a wrong value, ``BufferError`` for a layout that cannot be a buffer)."""
    name = type(obj).__name__
    cai = _CaiFields.read(obj)
    dtype, elements = _cai_dtype(cai.typestr, name)
    shape, strides = cai.shape, cai.strides
    if elements is not None:  # an item kind without a numpy basic type: its bytes
        shape, strides = (*shape, elements), None if strides is None else (*strides, 1)
    nbytes = _extent_bytes(shape, strides, dtype.itemsize, name)
    address = int(cai.pointer or 0)  # None: no memory, which only an empty buffer may have
    readonly = bool(cai.readonly)
    why = "its __cuda_array_interface__ marks the memory read-only" if readonly else ""
    if nbytes:
        where = host_memory(address, nbytes, writable=False)
        if where:
            raise DeviceMemoryError(
                f"message: the {name} object's __cuda_array_interface__ points at "
                f"{address:#x}, {where}: it is device (GPU) memory or no memory of this "
                "process; ompy moves host memory only: copy it to the host first"
            )
        if not readonly:
            where = host_memory(address, nbytes, writable=True)
            if where:  # the process may not write there, whatever the exporter says
                readonly, why = True, f"its memory at {address:#x} is {where}"
    interface = {
        "data": (address, readonly),
        "typestr": dtype.str,
        "shape": shape,
        "strides": strides,
        "version": 3,
    }
    return np.asarray(_HostView(obj, interface)), why


@attrs.frozen
class _CaiFields:
    """The fields of a ``__cuda_array_interface__`` dict that ompy uses, type-checked."""

    pointer: int | None
    readonly: bool
    typestr: str
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None

    @classmethod
    def read(cls, obj: Any) -> _CaiFields:
        name = type(obj).__name__
        cai = obj.__cuda_array_interface__
        if not isinstance(cai, dict):
            raise TypeError(
                f"message: the {name} object's __cuda_array_interface__ is a "
                f"{type(cai).__name__}, not a dict"
            )
        for key in ("data", "typestr", "shape"):
            if key not in cai:
                raise KeyError(
                    f"message: the {name} object's __cuda_array_interface__ lacks {key!r}"
                )
        data, typestr, shape = cai["data"], cai["typestr"], cai["shape"]
        strides, descr = cai.get("strides"), cai.get("descr")
        for key, value, kind in (
            ("data", data, tuple),
            ("typestr", typestr, str),
            ("shape", shape, tuple),
            ("strides", strides, (tuple, type(None))),
            ("descr", descr, (list, type(None))),
        ):
            if not isinstance(value, kind):
                raise TypeError(
                    f"message: the {name} object's __cuda_array_interface__[{key!r}] is "
                    f"{type(value).__name__} {value!r}, not a {_kind_name(kind)}"
                )
        if len(data) != 2:
            raise ValueError(
                f"message: the {name} object's __cuda_array_interface__['data'] is {data!r}, "
                "not (pointer, read_only)"
            )
        if cai.get("mask") is not None:
            raise BufferError(
                f"message: the {name} object's __cuda_array_interface__ has a mask; masked "
                "arrays cannot be sent or received"
            )
        if descr is not None and descr != [("", typestr)]:
            warnings.warn(
                f"the {name} object's __cuda_array_interface__['descr'] is ignored: ompy moves "
                f"the items as typestr {typestr!r} says",
                RuntimeWarning,
                stacklevel=5,
            )
        return cls(data[0], data[1], typestr, shape, strides)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("None" if k is type(None) else k.__name__ for k in kinds)


#: Array-interface byte-order characters that mean this machine's order.
_NATIVE_ORDERS = frozenset({"|", "=", "<" if sys.byteorder == "little" else ">"})


def _cai_dtype(typestr: str, name: str) -> tuple[np.dtype, int | None]:
    """The numpy dtype of a CAI typestr, and None; or, for an item kind numpy has no basic type
    for (``'V'``, ``'S'``, ...), ``uint8`` and the bytes per item (as mpi4py, bytes)."""
    order, kind, digits = typestr[:1], typestr[1:2], typestr[2:]
    try:
        itemsize = int(digits)
    except ValueError:
        raise ValueError(
            f"message: the {name} object's __cuda_array_interface__ typestr {typestr!r} has no "
            "item size (expecting e.g. '<f8')"
        ) from None
    if order not in _NATIVE_ORDERS:
        what = "is not in this machine's byte order" if order in "<>" else "has no byte order"
        raise BufferError(
            f"message: the {name} object's __cuda_array_interface__ typestr {typestr!r} {what}"
        )
    if kind in "biufc":
        try:
            return np.dtype(f"={kind}{itemsize}"), None
        except TypeError:
            pass  # a size numpy has no type for: its bytes, below
    return np.dtype(np.uint8), itemsize


def _extent_bytes(
    shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int, name: str
) -> int:
    """Bytes from the first element's address to past the last one (0 for no elements)."""
    if any(n < 0 for n in shape):
        raise BufferError(
            f"message: the {name} object's __cuda_array_interface__ shape {shape} is negative"
        )
    if any(n == 0 for n in shape):
        return 0
    if strides is None:
        return math.prod(shape) * itemsize
    if len(strides) != len(shape) or any(s < 0 for s in strides):
        raise BufferError(
            f"message: the {name} object's __cuda_array_interface__ strides {strides} do not "
            f"fit its shape {shape} (one non-negative stride per dimension)"
        )
    return sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + itemsize


def host_memory(address: int, nbytes: int, *, writable: bool) -> str:
    """Why ``[address, address + nbytes)`` is not host memory this process may read (or write,
    with ``writable``); ``""`` if it is.

    Reads ``/proc/self/maps``: the bytes must be covered by adjacent mappings that all grant
    the access.  Without that file (not Linux) nothing can be checked, and the answer says so.
    """
    try:
        maps = _MAPS.read_text()
    except OSError:
        return f"which cannot be checked to be host memory on {sys.platform} (no {_MAPS})"
    need = "w" if writable else "r"
    end = address + nbytes
    cursor = address
    for line in maps.splitlines():
        span, perms = line.split(None, 2)[:2]
        low_text, _, high_text = span.partition("-")
        low, high = int(low_text, 16), int(high_text, 16)
        if high <= cursor:
            continue
        if low > cursor:
            break  # a gap: the mappings are listed in address order
        if need not in perms:
            access = "write" if writable else "read"
            return f"in a mapping of this process it may not {access} ({span} {perms})"
        cursor = high
        if cursor >= end:
            return ""
    if cursor == address:
        return "outside every mapping of this process"
    return f"partly outside every mapping of this process (from {cursor:#x})"
