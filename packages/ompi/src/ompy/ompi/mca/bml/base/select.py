"""Selecting the process's BML module: open the framework, take the best offer."""

from __future__ import annotations

import attrs

from ompy.opal.mca import OpenFramework, open_framework

from ..interface import BmlComponent, BmlContext, BmlModule


@attrs.define
class SelectedBml:
    """The BML module in use and the open framework it came from (closed at finalize)."""

    framework: OpenFramework[BmlComponent]
    module: BmlModule
    _closed: bool = False

    def close(self) -> None:
        """Finalize the module (and with it the BTLs), then close the framework; once."""
        if self._closed:
            return
        self._closed = True
        try:
            self.module.finalize()
        finally:
            self.framework.close()


def select_bml(context: BmlContext) -> SelectedBml:
    """Open the ``bml`` framework with the context's registry and select one module."""
    from .. import framework

    opened = open_framework(framework, context.registry)
    try:
        _component, offer = opened.select_one(context)
    except BaseException:
        opened.close()
        raise
    module = offer.module
    if not isinstance(module, BmlModule):
        opened.close()
        raise TypeError(
            f"the bml component '{_component.name}' offered {module!r}; a BML offer's module "
            "must be a BmlModule"
        )
    return SelectedBml(opened, module)
