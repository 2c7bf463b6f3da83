"""Choosing this process's shmem module, once, and routing descriptors to their component.

Every part of a process that needs shared memory (the sm BTL, one-sided windows, ...) must use
the same mechanism, and opening the framework costs entry-point scans and imports, so the choice
is made on first use and cached for the life of the process.  Attaching is different: a peer's
descriptor names the component that made the segment, and that component (not necessarily
ours) must map it.
"""

from __future__ import annotations

import threading

import attrs

from ...base import OpenFramework, open_framework
from ...params import Registry
from ...params import registry as process_registry
from .. import framework
from ..errors import ShmemError
from ..interface import ShmemComponent, ShmemModule
from ..segment import Segment, SegmentDescriptor


@attrs.frozen
class Selected:
    """The outcome of selection: the open framework, the winning component and its module."""

    framework: OpenFramework[ShmemComponent]
    component: ShmemComponent
    module: ShmemModule


_lock = threading.Lock()
_selected: Selected | None = None


def select_module(registry: Registry | None = None) -> ShmemModule:
    """The shmem module of this process, selecting it on first use.

    ``registry`` defaults to the process-wide parameter registry.  Asking again with another
    registry once the choice is made is an error, not a silent second choice: call
    :func:`reset_selection` first (tests do).
    """
    return selection(registry).module


def selection(registry: Registry | None = None) -> Selected:
    """Like :func:`select_module`, but also gives the component and the open framework."""
    global _selected
    with _lock:
        if _selected is not None:
            if registry is not None and registry is not _selected.framework.registry:
                raise ShmemError(
                    f"the shmem module of this process was already selected "
                    f"({_selected.component.name}) with another parameter registry; "
                    f"call ompy.opal.mca.shmem.base.reset_selection() before selecting again"
                )
            return _selected
        opened = open_framework(framework, registry or process_registry())
        try:
            component, offer = opened.select_one(None)
            if not isinstance(offer.module, ShmemModule):
                raise TypeError(
                    f"the shmem component '{component.name}' offered {offer.module!r}; a shmem "
                    "offer's module must be a ShmemModule"
                )
        except BaseException:
            opened.close()
            raise
        _selected = Selected(opened, component, offer.module)
        return _selected


def attach(descriptor: SegmentDescriptor, registry: Registry | None = None) -> Segment:
    """Map a segment a peer published, through the component named in its descriptor.

    The component need not be the one this process selected (a peer may have been configured
    differently), but it must be installed and admitted by this process's ``shmem`` selection.
    """
    if not isinstance(descriptor, SegmentDescriptor):
        raise TypeError(
            f"attach() takes a SegmentDescriptor (use SegmentDescriptor.from_dict on published "
            f"data), got {type(descriptor).__name__}"
        )
    chosen = selection(registry)
    if descriptor.component == chosen.component.name:
        return chosen.module.attach(descriptor)
    for component in chosen.framework.components:
        if component.name == descriptor.component:
            return component.attach_module().attach(descriptor)
    available = ", ".join(c.name for c in chosen.framework.components) or "none"
    resolved = chosen.framework.registry.resolve(chosen.framework.framework.name)
    restriction = (
        f"; the selection 'shmem' = '{resolved.text}' (from {resolved.source}) may exclude it"
        if resolved.value
        else ""
    )
    raise ShmemError(
        f"cannot attach segment {descriptor.name!r}: it was made by the shmem component "
        f"'{descriptor.component}', which is not available in this process (available: "
        f"{available}){restriction}; install ompy-shmem-{descriptor.component} or give every "
        f"process of the job the same shmem settings"
    )


def reset_selection() -> None:
    """Forget the selection and close the framework's components (tests, embedding tools).

    Segments already created stay valid; the next :func:`select_module` selects afresh.
    """
    global _selected
    with _lock:
        if _selected is not None:
            _selected.framework.close()
            _selected = None
