"""Offer to run whenever the launcher's variables are present, and parse them on demand.

The parsing happens in :meth:`EnvEssModule.identity`, not in ``query``: a rank whose variables are
malformed must stop with a message naming the variable, not fall back to being a singleton.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from ompy.opal.mca import Offer
from ompy.orte.control import identity_from_environment, is_launched
from ompy.orte.mca.ess import EssComponent, EssModule, Identity

from . import __version__


@attrs.frozen
class EnvEssModule(EssModule):
    environ: Mapping[str, str]

    def identity(self) -> Identity:
        return identity_from_environment(self.environ)


class EnvEssComponent(EssComponent):
    """Identity from the environment prepared by ``ompy run``."""

    name = "env"
    version = __version__
    description = "identity of a rank started by a launcher, from its OMPY_* variables"
    default_priority = 50

    def query(self, context: Mapping[str, str] | None) -> Offer[EssModule] | None:
        environ = os.environ if context is None else context
        if not is_launched(environ):
            return None
        return Offer(self.priority, EnvEssModule(dict(environ)))
