"""Collectives on derived datatypes: contiguous stand-ins packed before, unpacked after.

The coll components move and reduce flat byte views (their algorithms cut a buffer into
blocks by the datatype's extent and hand the bytes to the PML or to an op kernel).  A buffer
whose datatype is not a plain run of elements (a vector, a struct with holes, a resized type)
is therefore given to them as a *stand-in*: a new contiguous buffer holding its packed stream.
Send buffers are packed into their stand-in before the call; receive buffers are unpacked from
theirs when the operation completes (at once for a blocking call, from the completion of a
nonblocking one, before its request reports completion).  Contiguous layouts are handed over as
they are: no copy.

Reductions need elements an op kernel knows: a derived datatype built from one predefined
element type (``Description.single_basic``) is reduced as ``count * n`` elements of that
predefined type, which is what MPI defines (the op applies element-wise to the basic elements);
the predefined value/index pairs (``DOUBLE_INT``, ...) are reduced in place as the op framework's
pair kernels expect them.  Any other datatype in a reduction is an ``MPI.Exception`` (``ERR_OP``)
that names it.

In a heterogeneous job (``pml.raw_views`` false) a typed collective also tells the coll
framework the datatype its messages carry (:func:`wire_type`), so that the PML converts them
between representations hop by hop (receiver makes right), as for point-to-point.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ompy.opal.datatype.basic import Basic
from ompy.opal.datatype.convertor import Convertor

from ..completion import CoreRequest
from ..datatype import Datatype
from ..datatype.buffer import BufferSpec, VectorBufferSpec
from ..datatype.predefined import BY_KEY, BYTE
from ..errors import ERR_OP, ERR_TYPE
from ..errors import Exception as MPIException


def plain(datatype: Datatype) -> bool:
    """Whether ``count`` elements of ``datatype`` are exactly ``count * extent`` bytes of data
    from the element's start (then a block of a vector message is its own bytes)."""
    layout = datatype.layout
    return bool(layout.contiguous) and layout.lb == 0 and layout.extent == layout.size


@functools.cache
def _predefined_of(basic: Basic) -> Datatype | None:
    """The named predefined datatype of one ``basic`` element (``MPI.DOUBLE`` for double)."""
    for datatype in BY_KEY.values():
        layout = datatype._layout
        if (
            layout is not None
            and layout.predefined
            and layout.description.single_basic == basic
            and layout.size == basic.size
        ):
            return datatype
    return None


def reduction_type(datatype: Datatype, call: str) -> tuple[Datatype, int]:
    """The predefined datatype a reduction on ``datatype`` runs on, and how many of its
    elements one element of ``datatype`` holds; ``ERR_OP`` when it has no single one."""
    layout = datatype.layout
    if layout.predefined:
        return datatype, 1
    basic = layout.description.single_basic
    predefined = None if basic is None else _predefined_of(basic)
    if basic is None or predefined is None:
        raise MPIException(
            ERR_OP,
            f"{call}: a reduction needs a datatype made of one predefined element type (or a "
            f"predefined value/index pair type); {datatype.Get_name() or 'this derived datatype'}"
            " mixes several, so no op is defined on it",
        )
    return predefined, layout.size // basic.size


class Staging:
    """The stand-ins of one collective call, and the unpacking owed once it completes.

    ``staging.send(spec)`` / ``staging.receive(spec)`` / ``staging.blocks(vspec, ...)`` return
    what to hand to the coll table; :meth:`finish` (blocking) or :meth:`request` (nonblocking)
    unpack the results into the program's buffers.
    """

    __slots__ = ("_after", "call")

    def __init__(self, call: str) -> None:
        self.call = call
        self._after: list[Callable[[], Any]] = []

    # -- single buffers -------------------------------------------------------------------------

    def send(self, spec: BufferSpec, *, reduce: bool = False) -> BufferSpec:
        """The stand-in of an input buffer (packed now)."""
        return self._single(spec, load=True, output=False, reduce=reduce)

    def receive(self, spec: BufferSpec, *, reduce: bool = False, load: bool = False) -> BufferSpec:
        """The stand-in of an output buffer (unpacked at completion; ``load``: it is an input
        too, as a receive buffer given with ``MPI.IN_PLACE`` is)."""
        return self._single(spec, load=load, output=True, reduce=reduce)

    def _single(self, spec: BufferSpec, *, load: bool, output: bool, reduce: bool) -> BufferSpec:
        if spec.in_place:
            return spec
        datatype, per = reduction_type(spec.datatype, self.call) if reduce else (spec.datatype, 1)
        convertor = spec.convertor
        if convertor is None:
            if datatype is spec.datatype:
                return spec
            return BufferSpec(spec.view, spec.count * per, datatype, spec.buffer, spec.offset)
        if (
            reduce
            and datatype is spec.datatype
            and convertor.description is datatype.layout.description
        ):
            # A predefined pair type: the op kernels read whole padded elements in place.
            end = spec.offset + spec.count * datatype.extent
            view = spec.buffer[spec.offset : end]
            return BufferSpec(view, spec.count, datatype, spec.buffer, spec.offset)
        packed = memoryview(bytearray(convertor.packed_size))
        if load:
            convertor.pack(0, packed)
        if output:
            self._after.append(functools.partial(convertor.unpack, 0, packed))
        if reduce:
            return BufferSpec(packed, spec.count * per, datatype, packed)
        return BufferSpec(packed, convertor.packed_size, BYTE, packed)

    def whole(
        self, buffer: memoryview, offset: int, count: int, datatype: Datatype, first: int
    ) -> BufferSpec:
        """The in-place input of a reduce-scatter: ``count`` elements at ``offset`` of
        ``buffer`` as a reduction stand-in whose first ``first`` elements are the result.

        The returned spec is the result's (its ``buffer`` from ``offset`` holds the input, as
        the coll interface wants); those first elements are unpacked at completion.
        """
        reduced, per = reduction_type(datatype, self.call)
        description = datatype.layout.description
        if plain(datatype):
            view = buffer[offset : offset + first * datatype.extent]
            return BufferSpec(view, first * per, reduced, buffer, offset)
        source = Convertor(description, buffer, offset, count)
        packed = memoryview(bytearray(source.packed_size))
        source.pack(0, packed)
        result = Convertor(description, buffer, offset, first)
        self._after.append(functools.partial(result.unpack, 0, packed[: result.packed_size]))
        return BufferSpec(packed[: result.packed_size], first * per, reduced, packed, 0)

    # -- one block per rank ---------------------------------------------------------------------

    def blocks(
        self, spec: VectorBufferSpec | None, *, output: bool, load: bool = True
    ) -> VectorBufferSpec | None:
        """The stand-in of a vector buffer: block ``i`` packed at ``displs[i] * size`` bytes."""
        if spec is None or spec.in_place or plain(spec.datatype):
            return spec
        layout = spec.datatype.layout
        size, extent, description = layout.size, layout.extent, layout.description
        end = max((c + d for c, d in zip(spec.counts, spec.displs, strict=True) if c), default=0)
        staging = memoryview(bytearray(end * size))
        for index, (count, displ) in enumerate(zip(spec.counts, spec.displs, strict=True)):
            if not count:
                continue
            try:
                convertor = Convertor(description, spec.buffer, displ * extent, count)
            except ValueError as error:
                raise ValueError(
                    f"{self.call}: block {index} ({count} x {spec.datatype.Get_name()} at "
                    f"displacement {displ}) does not fit in the buffer: {error}"
                ) from None
            if output and description.overlaps(count):
                raise MPIException(
                    ERR_TYPE,
                    f"{self.call}: the receive datatype {spec.datatype.Get_name() or '(derived)'}"
                    f" covers some bytes twice in block {index} (its typemap overlaps), so a "
                    "receive into it is undefined",
                )
            piece = staging[displ * size : (displ + count) * size]
            if load:
                convertor.pack(0, piece)
            if output:
                self._after.append(functools.partial(convertor.unpack, 0, piece))
        return VectorBufferSpec(
            staging,
            tuple(count * size for count in spec.counts),
            tuple(displ * size for displ in spec.displs),
            BYTE,
        )

    # -- completion -----------------------------------------------------------------------------

    @property
    def pending(self) -> bool:
        """Whether results must be unpacked at completion."""
        return bool(self._after)

    def finish(self) -> None:
        """Unpack every result into the program's buffers (the operation completed)."""
        after, self._after = self._after, []
        for unpack in after:
            unpack()

    def request(self, inner: Any) -> Any:
        """The request of a nonblocking call: ``inner``, or one that completes after the
        results were unpacked."""
        if not self._after:
            return inner
        return StagedRequest(inner, self)


class StagedRequest(CoreRequest):
    """A nonblocking collective whose results are unpacked from stand-ins when it completes.

    It completes (with ``inner``'s status) only after the unpacking, so a program that sees it
    complete sees its data in place.
    """

    __slots__ = ("inner", "staging")

    def __init__(self, inner: Any, staging: Staging) -> None:
        super().__init__()
        self.inner = inner
        self.staging = staging
        if inner.complete:
            self._done(inner)
        else:
            previous = inner.on_complete

            def done(request: Any) -> None:
                if previous is not None:
                    previous(request)
                self._done(request)

            inner.on_complete = done

    def _done(self, inner: Any) -> None:
        self.source, self.tag, self.count = inner.source, inner.tag, inner.count
        if inner.exception is not None:
            self.fail(inner.error, inner.exception)
            return
        try:
            self.staging.finish()
        except Exception as error:
            self.fail(ERR_OP, error)
            return
        self.finish()

    def cancel(self) -> None:
        """Collectives are not cancelled (MPI forbids it); nothing to do."""
