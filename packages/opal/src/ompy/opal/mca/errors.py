"""Errors of the MCA core, each written for the user who has to fix the situation."""

from __future__ import annotations


class MCAError(Exception):
    """Base class of component-architecture errors."""


class SelectionSyntaxError(MCAError, ValueError):
    """A selection list mixes included and excluded names, or is otherwise malformed."""


class ComponentLoadError(MCAError):
    """A component that the user asked for by name could not be loaded or opened."""


class ComponentVersionError(MCAError):
    """A component was built for another major version of its framework's interface."""


class NoComponentError(MCAError):
    """No component of a one-of-many framework is willing to run."""
