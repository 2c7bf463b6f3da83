"""The Modular Component Architecture: frameworks, components, modules and their parameters.

The public surface for framework authors and component authors alike::

    from ompy.opal.mca import Component, Framework, Cardinality, Offer, open_framework
    from ompy.opal.mca.params import ParamType, registry
"""

from __future__ import annotations

from .base import OpenFramework, open_and_select_one, open_framework
from .component import Component, Offer
from .discovery import Candidate, LoadFailure, installed_frameworks, list_candidates
from .errors import (
    ComponentLoadError,
    ComponentVersionError,
    MCAError,
    NoComponentError,
    SelectionSyntaxError,
)
from .framework import Cardinality, Framework
from .selection import Selection

__all__ = [
    "Candidate",
    "Cardinality",
    "Component",
    "ComponentLoadError",
    "ComponentVersionError",
    "Framework",
    "LoadFailure",
    "MCAError",
    "NoComponentError",
    "Offer",
    "OpenFramework",
    "Selection",
    "SelectionSyntaxError",
    "installed_frameworks",
    "list_candidates",
    "open_and_select_one",
    "open_framework",
]
