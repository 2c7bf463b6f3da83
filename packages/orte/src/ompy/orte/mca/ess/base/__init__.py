"""Glue of the ess framework: select this process's ess module and build its identity."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ompy.opal.mca import open_framework
from ompy.opal.mca.params import Registry, registry

from .. import EssComponent, EssModule, Identity, framework


def select_module(
    environ: Mapping[str, str] | None = None, params: Registry | None = None
) -> tuple[EssComponent, EssModule]:
    """Open the ess framework and return the winning component and its module.

    ``environ`` defaults to ``os.environ``; ``params`` to the process's parameter registry.
    """
    opened = open_framework(framework, params if params is not None else registry())
    component, offer = opened.select_one(os.environ if environ is None else environ)
    module: EssModule = offer.module
    return component, module


def identify(environ: Mapping[str, str] | None = None, params: Registry | None = None) -> Identity:
    """This process's identity according to the selected ess component."""
    return select_module(environ, params)[1].identity()
