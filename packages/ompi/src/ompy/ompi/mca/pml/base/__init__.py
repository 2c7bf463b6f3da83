"""Glue of the pml framework shared by every caller of a PML: objects over point-to-point.

:mod:`.objects` moves Python objects, encoded by the object codec (:mod:`ompy.opal.codec`),
over any PML's interface: the lowercase point-to-point calls and the object collectives of the
coll components both send and receive objects with it.
"""

from __future__ import annotations

from .objects import (
    ObjectRecv,
    ObjectSend,
    StartMessage,
    finish_object_recv,
    parse_stream,
    post_object_recv,
    send_parts,
)

__all__ = [
    "ObjectRecv",
    "ObjectSend",
    "StartMessage",
    "finish_object_recv",
    "parse_stream",
    "post_object_recv",
    "send_parts",
]
