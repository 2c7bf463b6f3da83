"""The target side's memory: where a displacement lands, and the four ways to touch it.

Every operation arrives as a packed stream plus the target datatype's flattened typemap
(:class:`~ompy.opal.datatype.description.Description`), so the target's convertor scatters
and gathers exactly as the origin described, whatever derived datatype it used.  Accumulates
work on the packed stream of the target's elements: gather the current values, combine them
with the op's kernel, scatter the result back.  The whole of one accumulate runs inside one
progress callback of a single-threaded target, so it is atomic with respect to every other
accumulate on the window.
"""

from __future__ import annotations

from collections.abc import Callable

from ompy.opal.datatype.convertor import Convertor
from ompy.opal.datatype.description import Description


class RangeError(Exception):
    """An operation reaches outside the target's window (``ERR_RMA_RANGE`` at the origin)."""


#: ``kernel(source, inout, count)``: ``inout[i] = source[i] op inout[i]`` for packed elements.
Kernel = Callable[[memoryview, memoryview, int], None]


class Exposed:
    """The memory one process exposes in a window.

    For windows with memory, displacement ``d`` is byte ``d * disp_unit`` of ``memory``; for
    dynamic windows it is an absolute address inside one of the attached regions.
    """

    def __init__(self, memory: memoryview, disp_unit: int, *, dynamic: bool) -> None:
        self.memory = memory
        self.disp_unit = disp_unit
        self.dynamic = dynamic
        #: Attached regions of a dynamic window: start address -> memory.
        self.regions: dict[int, memoryview] = {}

    def convertor(self, disp: int, description: Description, count: int) -> Convertor:
        """The convertor of ``count`` elements at ``disp``; RangeError if they do not fit."""
        if not self.dynamic:
            buffer, offset = self.memory, disp * self.disp_unit
        else:
            buffer, offset = self._region(disp, description, count)
        try:
            return Convertor(description, buffer, offset, count)
        except ValueError as error:
            raise RangeError(
                f"{count} element(s) at displacement {disp} do not fit in the target's window "
                f"of {len(buffer)} bytes ({error})"
            ) from None

    def _region(self, address: int, description: Description, count: int) -> tuple[memoryview, int]:
        low = address + description.true_lb
        for start, memory in self.regions.items():
            if start <= low < start + len(memory) or (count == 0 and start <= address):
                return memory, address - start
        raise RangeError(
            f"address {address:#x} is in no memory attached to the target's dynamic window"
        )


def put(convertor: Convertor, data: bytes) -> None:
    """Store the packed ``data``."""
    convertor.unpack_all(data)


def get(convertor: Convertor) -> bytes:
    """The packed current values."""
    return bytes(convertor.pack_all())


def accumulate(
    convertor: Convertor, data: bytes | None, kernel: Kernel, elements: int, *, fetch: bool
) -> bytes | None:
    """Combine ``data`` into the target elements; the values before, if ``fetch``."""
    current = bytearray(convertor.pack_all())
    before = bytes(current) if fetch else None
    if data is not None:
        kernel(memoryview(data), memoryview(current), elements)
        convertor.unpack_all(current)
    return before


def compare_and_swap(convertor: Convertor, compare: bytes, data: bytes) -> bytes:
    """Store ``data`` if the element's bytes equal ``compare``; the bytes before."""
    before = bytes(convertor.pack_all())
    if before == compare:
        convertor.unpack_all(data)
    return before
