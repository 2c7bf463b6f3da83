"""iof glue: select the forwarding component for this job's options."""

from __future__ import annotations

from ompy.opal.mca import OpenFramework, open_and_select_one
from ompy.opal.mca.params import Registry

from .. import IofComponent, IofModule, IofOptions, framework


def select_iof(
    registry: Registry, options: IofOptions
) -> tuple[OpenFramework[IofComponent], IofModule]:
    """Open the framework and pick the module; the caller closes the framework at the end."""
    opened, _component, offer = open_and_select_one(framework, registry, options)
    return opened, offer.module
