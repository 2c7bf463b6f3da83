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

Heterogeneous jobs
------------------
When the PML converts typed data (``pml.raw_views`` false: some member represents data
differently) a typed collective's stand-ins carry it in a known representation, and the coll
components move them as the raw bytes they always move (no component needs to know):

- every *block* of data travels in the representation its **origin** published: a member
  converts what it contributes from its memory into its published representation (only a
  simulated foreign member changes anything), relays forward bytes untouched, and each
  receiver converts every block it gets from its origin's architecture into its own memory's
  when the operation completes (receiver makes right, per block: the origin of a gathered block
  is its rank, of a broadcast or scattered one the root);
- a reduction cannot combine bytes of another representation, so it becomes an allgather of
  every member's contribution (in its origin's representation) followed, on each member, by
  the conversion of each contribution and the reduction in rank order
  (:mod:`.hetero_reductions`).  It moves ``size`` times the data of a tree, the price of being
  correct whatever the coll algorithm does with the bytes;
- the element sizes of the members' architectures must agree for the regular operations
  (equal blocks); otherwise the call fails with ``ERR_CONVERSION`` naming the datatype.

Open MPI's shared-memory collectives disqualify themselves in a heterogeneous job because they
would see typed data; no coll component of ompy ever does (it gets raw stand-ins), so every
component, ``sm`` included, keeps serving such a job.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ompy.opal.datatype.arch import Arch
from ompy.opal.datatype.convert import packed_size
from ompy.opal.datatype.convertor import Convertor

from ..completion import CoreRequest, chain
from ..datatype import Datatype
from ..datatype.buffer import BufferSpec, VectorBufferSpec, spec_of
from ..datatype.conversion import converted
from ..datatype.predefined import BY_KEY, BYTE, PACKED
from ..errors import ERR_CONVERSION, ERR_OP, ERR_TYPE
from ..errors import Exception as MPIException


def plain(datatype: Datatype) -> bool:
    """Whether ``count`` elements of ``datatype`` are exactly ``count * extent`` bytes of data
    from the element's start (then a block of a vector message is its own bytes)."""
    layout = datatype.layout
    if layout.extent != layout.size or layout.lb != 0:
        return False
    return layout.predefined or bool(layout.contiguous)  # a predefined one: no need to ask


def reduction_type(datatype: Datatype, call: str) -> tuple[Datatype, int]:
    """The predefined datatype a reduction on ``datatype`` runs on, and how many of its
    elements one element of ``datatype`` holds; ``ERR_OP`` when it has no single one."""
    layout = datatype.layout
    element = layout.element_layout()
    if element is layout:
        return datatype, 1
    if element is None:
        raise MPIException(
            ERR_OP,
            f"{call}: a reduction needs a datatype made of one predefined element type (or of "
            f"one value/index pair type); {datatype.Get_name() or 'this derived datatype'} "
            "mixes several, so no op is defined on it",
        )
    named = BY_KEY.get(element.key) if element.key else None
    handle = named if named is not None and named._layout is element else Datatype._of(element)
    return handle, layout.size // element.size


class Staging:
    """The stand-ins of one collective call, and the unpacking owed once it completes.

    ``staging.send(spec)`` / ``staging.receive(spec)`` / ``staging.blocks(vspec, ...)`` return
    what to hand to the coll table; :meth:`finish` (blocking) or :meth:`request` (nonblocking)
    unpack the results into the program's buffers.
    """

    __slots__ = ("_after", "_loads", "archs", "call", "comm", "hetero", "input", "reduction")

    def __init__(
        self,
        call: str,
        comm: Any = None,
        datatype: Datatype | None = None,
        *,
        reduction: bool = False,
    ) -> None:
        self.call = call
        self.comm = comm
        #: A reduction: in a heterogeneous job :meth:`table` serves it with conversions.
        self.reduction = reduction
        self._after: list[Callable[[], Any]] = []
        #: How each input stand-in was filled (a persistent collective refills them per start).
        self._loads: list[Callable[[], Any]] = []
        #: Typed data in a heterogeneous job: stand-ins carry each block as its origin wrote it.
        self.hetero = (
            comm is not None
            and not comm.pml.raw_views
            and datatype is not None
            and datatype is not BYTE
            and datatype is not PACKED
        )
        self.archs = comm.instance.archs if self.hetero else None
        #: The whole in-place input of a heterogeneous reduce-scatter (see :meth:`whole`).
        self.input: BufferSpec | None = None

    def _load(self, fill: Callable[[], Any]) -> None:
        """Fill an input stand-in now, and remember how (see :meth:`reload`)."""
        fill()
        self._loads.append(fill)

    def arch(self, rank: int) -> Arch:
        """The architecture the peer ``rank`` (of the remote group, if any) published."""
        assert self.archs is not None
        return self.archs.of(self.comm.remote_world_ranks[rank])

    def per(self, spec: BufferSpec) -> int:
        """Predefined elements per element of ``spec``'s datatype, as reductions count them."""
        return reduction_type(spec.datatype, self.call)[1]

    def table(self) -> Any:
        """What serves this call's reductions: the communicator's coll table, or in a
        heterogeneous job the allgather-based reductions of :mod:`.hetero_reductions`."""
        if not (self.hetero and self.reduction):
            return self.comm.coll
        from .hetero_reductions import HeteroReductions

        return HeteroReductions(self)

    # -- single buffers -------------------------------------------------------------------------

    def send(self, spec: BufferSpec, *, reduce: bool = False) -> BufferSpec:
        """The stand-in of an input buffer (packed now)."""
        return self._single(spec, load=True, output=False, reduce=reduce, origin=None)

    def receive(
        self,
        spec: BufferSpec,
        *,
        reduce: bool = False,
        load: bool = False,
        origin: int | None = None,
    ) -> BufferSpec:
        """The stand-in of an output buffer (unpacked at completion; ``load``: it is an input
        too, as a receive buffer given with ``MPI.IN_PLACE`` is; ``origin``: the member whose
        data it receives, for a heterogeneous job)."""
        return self._single(spec, load=load, output=True, reduce=reduce, origin=origin)

    def _single(
        self, spec: BufferSpec, *, load: bool, output: bool, reduce: bool, origin: int | None
    ) -> BufferSpec:
        if spec.in_place:
            return spec
        if (  # the common case, kept short: a view of a predefined datatype (no pair)
            spec.convertor is None
            and not self.hetero
            and (not reduce or spec.datatype.layout.plain_named)
        ):
            return spec
        datatype, per = reduction_type(spec.datatype, self.call) if reduce else (spec.datatype, 1)
        if self.hetero:
            if reduce:  # the same packed stream, counted in predefined elements
                return BufferSpec(
                    spec.view,
                    spec.count * per,
                    datatype,
                    spec.buffer,
                    spec.offset,
                    False,
                    spec.convertor,
                )
            return self._converted(spec, load=load, output=output, origin=origin)
        convertor = spec.convertor
        if convertor is None:
            if not reduce or plain(datatype):
                if datatype is spec.datatype:
                    return spec
                return BufferSpec(spec.view, spec.count * per, datatype, spec.buffer, spec.offset)
            # Up to one value/index pair: its data is one block, but the kernels read it padded.
            description = spec.datatype.layout.description
            convertor = Convertor(description, spec.buffer, spec.offset, spec.count)
        if (
            reduce
            and datatype is spec.datatype
            and convertor.description is datatype.layout.description
            and spec.offset + spec.count * datatype.extent <= len(spec.buffer)
        ):
            # A predefined pair type: the op kernels read whole padded elements in place.
            end = spec.offset + spec.count * datatype.extent
            view = spec.buffer[spec.offset : end]
            return BufferSpec(view, spec.count, datatype, spec.buffer, spec.offset)
        if reduce and not plain(datatype):  # made of pairs: the kernels read padded pairs
            image, result = self._image(convertor, datatype, spec.count * per, load=False)
            if load:
                self._load(functools.partial(_move, convertor, result))
            if output:
                self._after.append(functools.partial(_move, result, convertor))
            return BufferSpec(image, spec.count * per, datatype, image)
        packed = memoryview(bytearray(convertor.packed_size))
        if load:
            self._load(functools.partial(convertor.pack, 0, packed))
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
        if self.hetero:  # the reductions read the whole input from self.input
            whole = spec_of(buffer, offset, count, datatype)
            mine = spec_of(buffer, offset, first, datatype, readonly=False)
            self.input = self._restated(whole, reduced, per)
            return self._restated(mine, reduced, per)
        if plain(datatype):
            view = buffer[offset : offset + first * datatype.extent]
            return BufferSpec(view, first * per, reduced, buffer, offset)
        if not plain(reduced):  # made of pairs: padded pairs in an image of the input
            source = Convertor(description, buffer, offset, count)
            image, inner = self._image(source, reduced, count * per, load=False)
            self._load(functools.partial(_move, source, inner))
            result = Convertor(reduced.layout.description, image, 0, first * per)
            self._after.append(
                functools.partial(_move, result, Convertor(description, buffer, offset, first))
            )
            return BufferSpec(image[: first * per * reduced.extent], first * per, reduced, image, 0)
        source = Convertor(description, buffer, offset, count)
        packed = memoryview(bytearray(source.packed_size))
        self._load(functools.partial(source.pack, 0, packed))
        result = Convertor(description, buffer, offset, first)
        self._after.append(functools.partial(result.unpack, 0, packed[: result.packed_size]))
        return BufferSpec(packed[: result.packed_size], first * per, reduced, packed, 0)

    @staticmethod
    def _image(
        source: Convertor, reduced: Datatype, count: int, *, load: bool
    ) -> tuple[memoryview, Convertor]:
        """``count`` elements of ``reduced`` laid out as its op kernels read them (padding
        included), filled from ``source``'s packed stream when ``load``; and their convertor."""
        image = memoryview(bytearray(count * reduced.extent))
        inner = Convertor(reduced.layout.description, image, 0, count)
        if load:
            inner.unpack(0, source.pack_all())
        return image, inner

    @staticmethod
    def _restated(spec: BufferSpec, reduced: Datatype, per: int) -> BufferSpec:
        return BufferSpec(
            spec.view, spec.count * per, reduced, spec.buffer, spec.offset, False, spec.convertor
        )

    def _converted(
        self, spec: BufferSpec, *, load: bool, output: bool, origin: int | None
    ) -> BufferSpec:
        """A heterogeneous stand-in: the packed stream in its origin's representation."""
        signature = spec.datatype.layout.description.signature(spec.count)
        me = self.comm.rank
        origin = me if origin is None else origin
        if not output:  # this member's contribution, as it published it
            assert self.archs is not None
            wire = memoryview(bytearray(packed_size(signature, self.archs.published)))
            self._load(functools.partial(self._fill, wire, spec, signature))
            return BufferSpec(wire, wire.nbytes, BYTE, wire)
        source = self.arch(origin)
        staged = memoryview(bytearray(packed_size(signature, source)))
        if load:
            self._load(functools.partial(self._fill, staged, spec, signature))
        self._after.append(functools.partial(self._deliver, staged, signature, source, spec))
        return BufferSpec(staged, staged.nbytes, BYTE, staged)

    def _fill(self, target: memoryview, spec: BufferSpec, signature: Any) -> None:
        """Put ``spec``'s data into ``target`` in the representation this member published."""
        target[:] = self._outgoing(spec.packed(), signature)

    def _outgoing(self, packed: memoryview, signature: Any) -> memoryview:
        """This member's packed data in the representation it published."""
        assert self.archs is not None
        return converted(packed, signature, self.archs.memory, self.archs.published, self.call)

    def _deliver(self, staged: memoryview, signature: Any, source: Arch, spec: BufferSpec) -> None:
        """Convert a block from its origin's representation and put it in the buffer."""
        assert self.archs is not None
        local = converted(staged, signature, source, self.archs.memory, self.call)
        if spec.convertor is not None:
            spec.convertor.unpack(0, local)
        elif spec.view.nbytes:
            spec.view[:] = local

    def _element_bytes(self, spec: VectorBufferSpec, origins: Any) -> int:
        """Bytes of one element in the origins' representations (they must agree)."""
        one = spec.datatype.layout.description.signature(1)
        sizes = {packed_size(one, self.arch(rank)) for rank in set(origins)}
        if len(sizes) > 1:
            raise MPIException(
                ERR_CONVERSION,
                f"{self.call}: one {spec.datatype.Get_name() or 'derived datatype'} element has "
                f"different sizes on the members' architectures ({sorted(sizes)} bytes); ompy's "
                "collectives need the members to agree on element sizes",
            )
        return sizes.pop()

    def _converted_blocks(
        self, spec: VectorBufferSpec, *, output: bool, load: bool, origins: Any
    ) -> VectorBufferSpec:
        me = self.comm.rank
        origins = [me] * len(spec.counts) if origins is None else list(origins)
        size = self._element_bytes(spec, origins if output else [me])
        end = max((c + d for c, d in zip(spec.counts, spec.displs, strict=True) if c), default=0)
        staging = memoryview(bytearray(end * size))
        extent = spec.datatype.extent
        for index, (count, displ) in enumerate(zip(spec.counts, spec.displs, strict=True)):
            if not count:
                continue
            block = spec_of(spec.buffer, displ * extent, count, spec.datatype, readonly=not output)
            piece = staging[displ * size : (displ + count) * size]
            signature = spec.datatype.layout.description.signature(count)
            if load or not output:
                self._load(functools.partial(self._fill, piece, block, signature))
            if output:
                source = self.arch(origins[index])
                self._after.append(
                    functools.partial(self._deliver, piece, signature, source, block)
                )
        return VectorBufferSpec(
            staging,
            tuple(count * size for count in spec.counts),
            tuple(displ * size for displ in spec.displs),
            BYTE,
        )

    # -- one block per rank ---------------------------------------------------------------------

    def blocks(
        self,
        spec: VectorBufferSpec | None,
        *,
        output: bool,
        load: bool = True,
        origins: Any = None,
    ) -> VectorBufferSpec | None:
        """The stand-in of a vector buffer: block ``i`` packed at ``displs[i] * size`` bytes
        (``origins[i]``: the member whose data block ``i`` receives, in a heterogeneous job)."""
        if spec is None or spec.in_place:
            return spec
        if self.hetero:
            return self._converted_blocks(spec, output=output, load=load, origins=origins)
        if plain(spec.datatype):
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
            if output and layout.overlaps(count):
                raise MPIException(
                    ERR_TYPE,
                    f"{self.call}: the receive datatype {spec.datatype.Get_name() or '(derived)'}"
                    f" covers some bytes twice in block {index} (its typemap overlaps), so a "
                    "receive into it is undefined",
                )
            piece = staging[displ * size : (displ + count) * size]
            if load:
                self._load(functools.partial(convertor.pack, 0, piece))
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

    def reload(self) -> None:
        """Refill every input stand-in from the program's buffers (a persistent start)."""
        for fill in self._loads:
            fill()

    def unpack(self) -> None:
        """Unpack every result, keeping the unpacking for the next run (persistent calls)."""
        for unpack in self._after:
            unpack()

    def finish(self) -> None:
        """Unpack every result into the program's buffers (the operation completed)."""
        if not self._after:
            return
        after, self._after = self._after, []
        for unpack in after:
            unpack()

    def request(self, inner: Any) -> Any:
        """The request of a nonblocking call: ``inner``, or one that completes after the
        results were unpacked."""
        if not self._after:
            return inner
        return StagedRequest(inner, self.finish)


class BlockwiseStaging(Staging):
    """The staging of a call whose blocks each have their own datatype (an alltoallw): every
    buffer is staged by a :class:`Staging` of its datatype, and the unpacking they owe is done
    together at completion."""

    __slots__ = ()

    def _single(
        self, spec: BufferSpec, *, load: bool, output: bool, reduce: bool, origin: int | None
    ) -> BufferSpec:
        part = Staging(self.call, self.comm, spec.datatype)
        staged = part._single(spec, load=load, output=output, reduce=reduce, origin=origin)
        if part.pending:
            self._after.append(part.unpack)
        self._loads.extend(part._loads)
        return staged


class StagedRequest(CoreRequest):
    """A collective's request whose results need local work once its transfers completed
    (unpacking stand-ins, a heterogeneous reduction): nonblocking collectives and each start
    of a persistent one.

    It completes (with ``inner``'s status) only after ``finishing`` ran, so a program that
    sees it complete sees its data in place; an error there fails it (its MPI error class, or
    ``ERR_OP``).
    """

    __slots__ = ("finishing", "inner")

    def __init__(self, inner: Any, finishing: Callable[[], Any]) -> None:
        super().__init__()
        self.inner = inner
        self.finishing = finishing
        if inner.complete:
            self._done(inner)
        else:
            chain(inner, self._done)

    def _done(self, inner: Any) -> None:
        self.source, self.tag, self.count = inner.source, inner.tag, inner.count
        if inner.exception is not None:
            self.fail(inner.error, inner.exception)
            return
        try:
            self.finishing()
        except Exception as error:
            self.fail(error.error_class if isinstance(error, MPIException) else ERR_OP, error)
            return
        self.finish()

    def cancel(self) -> None:
        """Collectives are not cancelled (MPI forbids it); nothing to do."""


def _move(source: Convertor, target: Convertor) -> None:
    """Copy ``source``'s data into ``target``'s layout (the same signature)."""
    target.unpack(0, source.pack_all())
