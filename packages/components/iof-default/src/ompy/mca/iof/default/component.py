"""The component: offers the line forwarder of :mod:`.forwarder` for every job."""

from __future__ import annotations

from ompy.opal.mca import Offer
from ompy.orte.mca.iof import IofComponent, IofOptions

from . import __version__
from .forwarder import DefaultIofModule


class DefaultIofComponent(IofComponent):
    """Forwards stdout/stderr line by line through the launcher's event loop."""

    name = "default"
    version = __version__
    description = "line-buffered stdout/stderr forwarding; stdin goes to rank 0"
    default_priority = 50

    def query(self, context: IofOptions) -> Offer[DefaultIofModule] | None:
        return Offer(self.priority, DefaultIofModule(context))
