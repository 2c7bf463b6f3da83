"""iof glue: select the forwarding component for this job's options."""

from __future__ import annotations

from ompy.opal.mca import OpenFramework, open_framework
from ompy.opal.mca.params import Registry

from .. import IofModule, IofOptions, framework


def select_iof(registry: Registry, options: IofOptions) -> tuple[OpenFramework, IofModule]:
    """Open the framework and pick the module; the caller closes the framework at the end."""
    opened = open_framework(framework, registry)
    try:
        _component, offer = opened.select_one(options)
    except BaseException:
        opened.close()
        raise
    return opened, offer.module
