"""Pack and Unpack: a datatype's elements to and from contiguous bytes, as mpi4py does them.

``Pack(inbuf, outbuf, position, comm)`` packs as many elements as ``inbuf`` holds (its size
divided by the extent) into ``outbuf`` from byte ``position`` and returns the position after
them; ``Unpack(inbuf, position, outbuf, comm)`` fills ``outbuf`` with as many elements as it
holds, reading from ``position``.  Packed data is this machine's representation with no header,
so ``Pack_size(count, comm)`` is exactly ``count * size``.  A datatype must be committed to be
packed, as for communication.  Running out of room (or of data) is ``ERR_TRUNCATE``.

The portable forms (``Pack_external`` ...) write MPI's ``"external32"`` representation
(big-endian, fixed sizes): the local packed stream converted by opal's heterogeneous
``convert``, element type by element type.  Other representation names are
``ERR_UNSUPPORTED_DATAREP``.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from ompy.opal.datatype.arch import EXTERNAL32 as EXTERNAL32_ARCH
from ompy.opal.datatype.arch import Arch
from ompy.opal.datatype.convert import convert_description, external32_size
from ompy.opal.datatype.convertor import Convertor

from ..errors import (
    ERR_ARG,
    ERR_COMM,
    ERR_CONVERSION,
    ERR_COUNT,
    ERR_TRUNCATE,
    ERR_TYPE,
    ERR_UNSUPPORTED_DATAREP,
)
from ..errors import Exception as MPIException
from .layout import Layout

#: The one portable data representation MPI defines.
EXTERNAL32 = "external32"


class Packing:
    """The Pack/Unpack methods of :class:`~ompy.ompi.datatype.datatype.Datatype`."""

    __slots__ = ()

    if TYPE_CHECKING:
        _layout: Layout | None

        def _checked(self, call: str) -> Layout: ...

    def Pack(self, inbuf: Any, outbuf: Any, position: int, comm: Any) -> int:
        """Pack into contiguous memory according to datatype."""
        call = "Pack"
        layout = self._committed(call)
        _check_comm(comm, call)
        source, count = _elements(layout, inbuf, call, "inbuf")
        out = _bytes(outbuf, call, "outbuf", writable=True)
        position = _position(position, len(out), call, "outbuf")
        need = count * layout.size
        _room(need, len(out) - position, call, "outbuf", "pack")
        _convertor(layout, source, count, call).pack(0, out[position : position + need])
        return position + need

    def Unpack(self, inbuf: Any, position: int, outbuf: Any, comm: Any) -> int:
        """Unpack from contiguous memory according to datatype."""
        call = "Unpack"
        layout = self._committed(call)
        _check_comm(comm, call)
        data = _bytes(inbuf, call, "inbuf")
        target, count = _elements(layout, outbuf, call, "outbuf", writable=True)
        position = _position(position, len(data), call, "inbuf")
        need = count * layout.size
        _room(need, len(data) - position, call, "inbuf", "unpack")
        _no_overlap(layout, count, call)
        _convertor(layout, target, count, call).unpack(0, data[position : position + need])
        return position + need

    def Pack_size(self, count: int, comm: Any) -> int:
        """Determine the amount of space needed to pack a message.

        Exact in ompy: packed data has no header.
        """
        call = "Pack_size"
        layout = self._checked(call)
        _check_comm(comm, call)
        return _count(count, call) * layout.size

    def Pack_external(self, datarep: str, inbuf: Any, outbuf: Any, position: int) -> int:
        """Pack into contiguous memory according to datatype.

        Uses the portable data representation **external32**.
        """
        call = "Pack_external"
        _datarep(datarep, call)
        layout = self._committed(call)
        source, count = _elements(layout, inbuf, call, "inbuf")
        out = _bytes(outbuf, call, "outbuf", writable=True)
        position = _position(position, len(out), call, "outbuf")
        need = _external_size(layout, count)
        _room(need, len(out) - position, call, "outbuf", "pack")
        local = _convertor(layout, source, count, call).pack_all()
        try:
            portable = convert_description(
                local, layout.description, count, Arch.local(), EXTERNAL32_ARCH
            )
        except ValueError as error:
            raise MPIException(ERR_CONVERSION, f"{call}: {error}") from None
        out[position : position + need] = portable
        return position + need

    def Unpack_external(self, datarep: str, inbuf: Any, position: int, outbuf: Any) -> int:
        """Unpack from contiguous memory according to datatype.

        Uses the portable data representation **external32**.
        """
        call = "Unpack_external"
        _datarep(datarep, call)
        layout = self._committed(call)
        data = _bytes(inbuf, call, "inbuf")
        target, count = _elements(layout, outbuf, call, "outbuf", writable=True)
        position = _position(position, len(data), call, "inbuf")
        need = _external_size(layout, count)
        _room(need, len(data) - position, call, "inbuf", "unpack")
        _no_overlap(layout, count, call)
        try:
            local = convert_description(
                data[position : position + need],
                layout.description,
                count,
                EXTERNAL32_ARCH,
                Arch.local(),
            )
        except ValueError as error:
            raise MPIException(ERR_CONVERSION, f"{call}: {error}") from None
        _convertor(layout, target, count, call).unpack(0, local)
        return position + need

    def Pack_external_size(self, datarep: str, count: int) -> int:
        """Determine the amount of space needed to pack a message.

        Uses the portable data representation **external32**; exact in ompy.
        """
        call = "Pack_external_size"
        _datarep(datarep, call)
        layout = self._checked(call)
        return _external_size(layout, _count(count, call))

    def _committed(self, call: str) -> Layout:
        layout = self._checked(call)
        if not layout.committed:
            raise MPIException(
                ERR_TYPE,
                f"{call}: the datatype {layout.name or '(unnamed, derived)'} is not committed; "
                "call its Commit() method before packing with it",
            )
        return layout


def _external_size(layout: Layout, count: int) -> int:
    """Bytes of ``count`` elements in external32 (each element's signature, ``count`` times)."""
    return count * external32_size(layout.description.signature(1))


def _convertor(layout: Layout, buffer: memoryview, count: int, call: str) -> Convertor:
    try:
        return Convertor(layout.description, buffer, 0, count)
    except ValueError as error:
        raise ValueError(f"{call}: {error}") from None


def _elements(
    layout: Layout, obj: Any, call: str, what: str, *, writable: bool = False
) -> tuple[memoryview, int]:
    """The flat bytes of a typed buffer and how many whole elements (of the extent) it holds."""
    view = _bytes(obj, call, what, writable=writable)
    extent = layout.extent
    if extent <= 0:
        if layout.size == 0:
            return view, 0
        raise MPIException(
            ERR_TYPE,
            f"{call}: the datatype {layout.name or '(derived)'} has extent {extent}, so the "
            f"number of its elements in {what} is not defined; resize it (Create_resized)",
        )
    return view, len(view) // extent


def _bytes(obj: Any, call: str, what: str, *, writable: bool = False) -> memoryview:
    """The flat bytes of a buffer (any kind the message calls accept)."""
    from .buffer import export_buffer  # buffer parsing builds on the datatypes

    try:
        view, _ = export_buffer(obj, readonly=not writable, infer=False)
    except (TypeError, BufferError, ValueError) as error:
        message = str(error).replace("message: ", "", 1)
        raise type(error)(f"{call}: {what}: {message}") from None
    return view


def _position(position: Any, length: int, call: str, what: str) -> int:
    try:
        position = operator.index(position)
    except TypeError:
        raise TypeError(f"{call}: position must be an int, not {type(position).__name__}") from None
    if not 0 <= position <= length:
        raise MPIException(
            ERR_ARG, f"{call}: position {position} is outside {what} ({length} bytes)"
        )
    return position


def _room(need: int, have: int, call: str, what: str, verb: str) -> None:
    if need > have:
        raise MPIException(
            ERR_TRUNCATE,
            f"{call}: {need} bytes to {verb} but only {have} left in {what} after the position",
        )


def _no_overlap(layout: Layout, count: int, call: str) -> None:
    if not layout.predefined and layout.overlaps(count):
        raise MPIException(
            ERR_TYPE,
            f"{call}: the datatype {layout.name or '(derived)'} covers some bytes twice, so data "
            "cannot be unpacked into it",
        )


def _count(count: Any, call: str) -> int:
    try:
        count = operator.index(count)
    except TypeError:
        raise TypeError(f"{call}: count must be an int, not {type(count).__name__}") from None
    if count < 0:
        raise MPIException(ERR_COUNT, f"{call}: count must not be negative, got {count}")
    return count


def _datarep(datarep: Any, call: str) -> None:
    if not isinstance(datarep, str):
        raise TypeError(f"{call}: datarep must be a str, not {type(datarep).__name__}")
    if datarep != EXTERNAL32:
        raise MPIException(
            ERR_UNSUPPORTED_DATAREP,
            f"{call}: unknown data representation {datarep!r}; the portable one is 'external32'",
        )


def _check_comm(comm: Any, call: str) -> None:
    from ..api.comm import Comm  # the API layer's class; datatypes are made before it

    if not isinstance(comm, Comm):
        raise TypeError(f"{call}: comm must be a Comm, not {type(comm).__name__}")
    if not comm:
        raise MPIException(ERR_COMM, f"{call}: comm is COMM_NULL; pass a communicator")
