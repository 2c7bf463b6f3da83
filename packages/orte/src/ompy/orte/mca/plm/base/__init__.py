"""plm glue: select the launching component for this job."""

from __future__ import annotations

from collections.abc import Sequence

from ompy.opal.mca import OpenFramework, open_and_select_one
from ompy.opal.mca.params import Registry
from ompy.orte.launcher.job import Node

from .. import PlmComponent, PlmModule, framework


def select_plm(
    registry: Registry, nodes: Sequence[Node]
) -> tuple[OpenFramework[PlmComponent], PlmModule]:
    """Open the framework and pick the best launcher for ``nodes``.

    The caller closes the returned framework when the job is over.
    """
    opened, _component, offer = open_and_select_one(framework, registry, nodes)
    return opened, offer.module
