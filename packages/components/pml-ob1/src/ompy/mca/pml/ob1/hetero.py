"""Typed messages between processes of different architectures: receiver makes right.

Every process publishes its architecture in the modex (``opal.arch``); ob1 reads them through
the instance's :class:`~ompy.opal.datatype.arch.PeerArchs` when it adds the processes.  When
every peer represents data as this process holds it, nothing here runs: the PML keeps its
zero-copy paths (``raw_views`` stays true).  Otherwise typed messages are converted:

- **sending**: only a process that *presents* a foreign architecture (the simulated big-endian
  rank of a test, ``opal_arch_byteorder``) converts what it sends, from its memory's
  representation into the one it published (:func:`wire_stream`);
- **receiving**: a typed receive takes the message as the sender wrote it (the PML's sized
  receive: a staging buffer of exactly the message's length, allocated at match time, so the
  receive keeps its place in the matching order), converts it from the sender's published
  architecture into this process's memory representation with ``convert`` when the two differ,
  then unpacks it into the receive buffer (:class:`ConvertedRecv`).  Element sizes may differ
  between the two (a 4-byte ``long`` against an 8-byte one): the receive's datatype says which
  elements arrived (``whole_elements``), and the status counts bytes as this process holds them.

Untyped data (``MPI.BYTE``, ``MPI.PACKED``), pickled objects (the lowercase methods, which go
through the view calls) and the library's own traffic are never converted.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.completion import CoreRequest
from ompy.ompi.datatype.conversion import converted
from ompy.ompi.datatype.predefined import BYTE, PACKED
from ompy.ompi.errors import ERR_TRUNCATE, ERR_TYPE
from ompy.ompi.errors import Exception as MPIException
from ompy.opal.datatype.arch import Arch, PeerArchs
from ompy.opal.datatype.convert import packed_size, whole_elements


def typed(spec: Any) -> bool:
    """Whether ``spec`` holds typed data (anything but raw bytes), which conversion concerns."""
    datatype = spec.datatype
    return datatype is not BYTE and datatype is not PACKED and spec.nbytes > 0


def signature(spec: Any) -> list[Any]:
    """The signature of ``spec``'s message: what its packed stream holds, in order."""
    return spec.datatype.layout.description.signature(spec.count)


def wire_stream(spec: Any, archs: PeerArchs, outgoing: Arch) -> memoryview:
    """``spec``'s packed stream as this process's published architecture represents it."""
    return converted(
        spec.packed(),
        signature(spec),
        archs.memory,
        outgoing,
        f"cannot send {spec.count} x {spec.datatype.Get_name()} in the published "
        f"representation ({outgoing})",
    )


class ConvertedRecv(CoreRequest):
    """A typed receive in a heterogeneous job: staged as sent, converted, then unpacked.

    ``inner`` is the PML's sized receive of the message; this request completes after the
    data is in the program's buffer (or with the error that kept it out).
    """

    __slots__ = ("archs", "inner", "spec", "state")

    def __init__(self, inner: Any, spec: Any, state: Any, archs: PeerArchs) -> None:
        super().__init__()
        self.inner = inner
        self.spec = spec
        self.state = state  # the CommState whose keys name the sender's world rank
        self.archs = archs
        if inner.complete:
            self._arrived(inner)
        else:
            inner.on_complete = self._arrived

    def cancel(self) -> None:
        """Withdraw the receive if it is still posted (as the inner receive allows)."""
        self.inner.cancel()

    def _arrived(self, inner: Any) -> None:
        self.source, self.tag = inner.source, inner.tag
        if inner.cancelled:
            self.cancelled = True
            self.finish()
            return
        if inner.exception is not None:
            self.fail(inner.error, inner.exception)
            return
        data = inner.view[: inner.count]
        world = self.state.keys[inner.source]
        try:
            self._deliver(data, self.archs.foreign(world))
        except MPIException as error:
            self.fail(error.error_class, error)
            return
        self.finish()

    def _deliver(self, data: memoryview, source: Arch | None) -> None:
        spec = self.spec
        room = spec.nbytes
        truncated = False
        if source is None:  # written as this process holds it: no conversion
            local = data
            if len(local) > room:
                local, truncated = local[:room], True
        else:
            sig = signature(spec)
            fits = packed_size(sig, source)
            if len(data) > fits:
                data, truncated = data[:fits], True
            runs, rest = whole_elements(sig, source, len(data))
            if rest:
                raise MPIException(
                    ERR_TYPE,
                    f"a message of {len(data)} bytes from rank {self.source} (tag {self.tag}) "
                    f"ends inside an element of {spec.datatype.Get_name()} as its "
                    f"{source.byteorder}-endian sender represents it: the datatypes do not match",
                )
            local = converted(
                data,
                runs,
                source,
                self.archs.memory,
                f"a message from rank {self.source} (tag {self.tag}) cannot be represented "
                f"here as {spec.datatype.Get_name()}",
            )
        count = len(local)
        if spec.convertor is not None:
            spec.convertor.unpack(0, local)
        elif count:
            spec.view[:count] = local
        self.count = count
        if truncated:
            raise MPIException(
                ERR_TRUNCATE,
                f"a message of {len(self.inner.view)} bytes from rank {self.source} (tag "
                f"{self.tag}) does not fit the receive buffer of {room} bytes; the first "
                f"{count} bytes were delivered",
            )
