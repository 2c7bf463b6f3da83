"""Memory calls: ``Alloc_mem``/``Free_mem`` and addresses (``Get_address``, ``Aint_add/diff``).

``Alloc_mem`` returns an :class:`~ompy.ompi.memory.buffer` over freshly mapped, zeroed pages
(page-aligned, as Open MPI's allocator returns).  MPI 4.1's info key
``mpi_minimum_memory_alignment`` asks for a larger alignment (a power of two).  ``Free_mem``
takes a buffer ``Alloc_mem`` returned, once, and releases it (address 0, no bytes); the pages
go back to the system when nothing refers to them any more.

Addresses are integers, as mpi4py gives them: ``Get_address(buf)`` is the address of the first
byte of ``buf``'s memory (``BOTTOM``: 0), and ``Aint_add``/``Aint_diff`` compute with
``MPI_Aint`` values (signed, pointer-sized) the way the C calls do, wrapping around at the
width of an address.
"""

from __future__ import annotations

from typing import Any

from ..constants import BOTTOM
from ..errors import ERR_BASE, ERR_INFO_VALUE, ERR_SIZE
from ..errors import Exception as MPIException
from ..memory import address_of, aint, allocate_pages, buffer, wrap_aint
from .info import INFO_NULL, Info, info_items

__all__ = ["Aint_add", "Aint_diff", "Alloc_mem", "Free_mem", "Get_address"]

#: The info key of ``Alloc_mem`` that asks for an alignment (MPI 4.1).
ALIGNMENT_KEY = "mpi_minimum_memory_alignment"


def Alloc_mem(size: int, info: Info = INFO_NULL) -> buffer:
    """Allocate memory for message passing and remote memory access."""
    size = aint(size, "Alloc_mem: size")
    if size < 0:
        raise MPIException(ERR_SIZE, f"Alloc_mem: size {size} is negative")
    alignment = _alignment(info_items(info, "Alloc_mem"))
    memory = allocate_pages(size, alignment)
    memory._allocated = True
    return memory


def Free_mem(mem: buffer) -> None:
    """Free memory allocated with `Alloc_mem`."""
    if not isinstance(mem, buffer):
        raise TypeError(
            f"Free_mem: expecting the MPI.buffer Alloc_mem returned, not {type(mem).__name__}"
        )
    if not mem._allocated:
        raise MPIException(
            ERR_BASE,
            "Free_mem: the buffer was not allocated by Alloc_mem, or was freed already",
        )
    mem.release()


def Get_address(location: Any) -> int:
    """Get the address of a location in memory."""
    if location is BOTTOM:
        return 0
    return address_of(location)


def Aint_add(base: int, disp: int) -> int:
    """Return the sum of base address and displacement."""
    return wrap_aint(aint(base, "Aint_add: base") + aint(disp, "Aint_add: disp"))


def Aint_diff(addr1: int, addr2: int) -> int:
    """Return the difference between absolute addresses."""
    return wrap_aint(aint(addr1, "Aint_diff: addr1") - aint(addr2, "Aint_diff: addr2"))


def _alignment(pairs: dict[str, str]) -> int:
    text = pairs.get(ALIGNMENT_KEY)
    if text is None:
        return 1
    try:
        alignment = int(text)
    except ValueError:
        alignment = 0
    if alignment < 1 or alignment & (alignment - 1):
        raise MPIException(
            ERR_INFO_VALUE,
            f"Alloc_mem: info {ALIGNMENT_KEY} = {text!r} is not a power of two",
        )
    return alignment
