"""The ``pt2pt`` component: it can serve every window, so it offers for every one.

Its priority is low (10): a component that knows a faster way for a given window (``sm``,
when every process of the window shares a node) outranks it there.
"""

from __future__ import annotations

from ompy.ompi.mca.osc import FLAVOR_SHARED, OscComponent, OscModule, OscQuery
from ompy.opal.mca import Offer

from . import __version__


class Pt2ptOscComponent(OscComponent):
    """RMA over the PML: active messages, applied by the target's progress engine."""

    name = "pt2pt"
    version = __version__
    description = "RMA windows over point-to-point messages, served by the target's progress"
    default_priority = 10

    def query(self, context: OscQuery) -> Offer[OscModule] | None:
        # Shared windows promise load/store access to the peers' memory, which messages
        # cannot give: those are osc/sm's.
        if context.flavor == FLAVOR_SHARED:
            return None
        from .module import Pt2ptOscModule

        return Offer(self.priority, Pt2ptOscModule())
