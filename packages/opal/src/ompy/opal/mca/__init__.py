"""The Modular Component Architecture: frameworks, components, modules and their parameters.

The public surface for framework authors and component authors alike::

    from ompy.opal.mca import Component, Framework, Cardinality, Offer, open_framework
    from ompy.opal.mca.params import ParamType, registry

How a framework states its contract (one style for every framework of every layer): its
component and module interfaces are abstract base classes (:mod:`abc`), not
:class:`typing.Protocol` classes.  A contract here is more than a list of signatures: the base
classes carry behaviour every implementation shares (parameter registration and selection
in :class:`Component`, the descriptor pools and callback tables of a BTL module), and the
defaults of optional capabilities (a BTL's ``sendi`` that answers "not now", a plm's
``prepare`` that does nothing), which a Protocol cannot give an implementation without a
second base class next to it.  Nominal subclassing is also what the framework checks when it
loads a plug-in, and an abstract method that a component or module leaves out makes
instantiating it fail at once, naming the method, instead of at its first call in a running job.

So, in every framework:

- what every implementation must provide is an ``@abc.abstractmethod`` (or an attribute
  annotated on the interface class), fully typed;
- what an implementation may provide is an ordinary method of the interface whose docstring
  says what the default does; callers call it unconditionally, never probing with ``getattr``,
  ``hasattr`` or ``except AttributeError``;
- the component class fixes the types of its contract as
  ``Component[<what query is asked about>, <what an offer carries>]``, and the framework
  description is typed with its component class (``Framework[BtlComponent]``), so opening and
  selecting give components of that class.

The type checker of the lint session (``mypy.ini`` at the repository root) checks every
framework interface against these rules.
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
