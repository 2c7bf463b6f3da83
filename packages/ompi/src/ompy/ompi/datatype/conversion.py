"""opal's heterogeneous conversion as the MPI layer reports it.

:func:`ompy.opal.datatype.convert.convert` raises ``ValueError`` (naming the element type) for a
value or a format the target architecture cannot hold; every MPI path that converts typed data
(ob1's heterogeneous sends and receives, the collectives' stand-ins) reports that as MPI's
``ERR_CONVERSION``, with what it was doing in front.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ompy.opal.datatype.arch import Arch
from ompy.opal.datatype.convert import convert

from ..errors import ERR_CONVERSION
from ..errors import Exception as MPIException


def converted(
    data: memoryview | bytes | bytearray,
    signature: Iterable[tuple[Any, int]],
    source: Arch,
    target: Arch,
    context: str,
) -> memoryview:
    """The packed stream ``data`` of ``signature`` as ``target`` writes it (a flat byte view);
    one ``target`` cannot represent is an ``MPI.Exception`` (``ERR_CONVERSION``) whose message
    is ``context``, then opal's reason."""
    try:
        return convert(data, signature, source, target)
    except ValueError as error:
        raise MPIException(ERR_CONVERSION, f"{context}: {error}") from None
