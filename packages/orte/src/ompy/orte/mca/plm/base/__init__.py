"""plm glue: select the launching component for this job."""

from __future__ import annotations

from ompy.opal.mca import OpenFramework, open_and_select_one
from ompy.opal.mca.params import Registry

from .. import PlmModule, framework


def select_plm(registry: Registry, nodes: object) -> tuple[OpenFramework, PlmModule]:
    """Open the framework and pick the best launcher for ``nodes`` (a sequence of ``Node``).

    The caller closes the returned framework when the job is over.
    """
    opened, _component, offer = open_and_select_one(framework, registry, nodes)
    return opened, offer.module
