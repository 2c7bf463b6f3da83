"""ompy's portability layer: the MCA core, parameters, progress and shared memory.

Nothing here may import :mod:`ompy.orte`, :mod:`ompy.ompi` or any component package:
the higher layers and the components build on this one, never the other way round.
"""

__version__ = "0.1.0"
