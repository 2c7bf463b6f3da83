"""ompy's run-time layer: launching, wiring up, watching and tearing down parallel jobs.

It builds on :mod:`ompy.opal` and must never import :mod:`ompy.ompi` or a component package.
"""

__version__ = "0.1.0"
