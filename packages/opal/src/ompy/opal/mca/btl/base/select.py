"""Selecting this process's BTL modules: open the framework, ask every component, flatten.

The ``btl`` parameter (``self,tcp`` or ``^tcp``) decides which components are even imported;
each admitted component's ``query`` returns a list of modules (one per resource) or nothing.
The result keeps every module, components in priority order and each component's modules in the
order it gave them.  Components that need polling get their ``progress`` registered with the
context's progress engine; :meth:`SelectedBtls.close` undoes all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ... import OpenFramework, open_framework
from ...params import Registry

if TYPE_CHECKING:
    from ..interface import BtlComponent, BtlContext, BtlModule


@attrs.define
class SelectedBtls:
    """The BTL modules of this process and the open framework they came from."""

    framework: OpenFramework[BtlComponent]
    context: BtlContext
    modules: list[BtlModule[Any]]
    components: list[BtlComponent]
    _closed: bool = False

    def close(self) -> None:
        """Finalize every module, stop progressing their components and close the framework."""
        if self._closed:
            return
        self._closed = True
        errors = []
        for module in self.modules:
            try:
                module.finalize()
            except Exception as error:  # finish tearing down the rest, then report
                errors.append(f"{module.name}: {error}")
        for component in self.components:
            if component.needs_progress:
                self.context.progress.unregister(component.progress)
        self.framework.close()
        if errors:
            raise RuntimeError("finalizing BTL modules failed: " + "; ".join(errors))


def select_btls(context: BtlContext, registry: Registry | None = None) -> SelectedBtls:
    """Open the ``btl`` framework and collect the modules of every component that offers."""
    from .. import framework
    from ..interface import BtlModule

    if registry is None:
        from ...params import registry as process_registry

        registry = process_registry()
    opened = open_framework(framework, registry)
    modules: list[BtlModule[Any]] = []
    components: list[BtlComponent] = []
    for component, offer in opened.select_many(context):
        offered = offer.module
        if not isinstance(offered, list) or not all(isinstance(m, BtlModule) for m in offered):
            raise TypeError(
                f"the btl component '{component.name}' offered {offered!r}; a BTL offer's module "
                "must be a list of BtlModule (one per usable resource)"
            )
        if not offered:
            continue
        opened.log.info("%s: %s", component.name, ", ".join(m.name for m in offered))
        modules.extend(offered)
        components.append(component)
        if component.needs_progress:
            context.progress.register(component.progress)
    return SelectedBtls(opened, context, modules, components)
