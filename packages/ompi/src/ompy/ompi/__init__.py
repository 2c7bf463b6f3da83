"""ompy's MPI layer: the mpi4py-compatible API and the frameworks behind it.

It builds on :mod:`ompy.orte` and :mod:`ompy.opal` and never imports a component package.
"""

__version__ = "0.1.0"
