"""The datatype engine: basic element kinds, flattened typemaps and the convertor.

As in Open MPI, datatypes live in opal and know nothing of MPI: the MPI layer builds
:class:`Description` objects from its constructors and moves data through a
:class:`Convertor`, which packs and unpacks any byte range of a typed buffer with vectorised
numpy copies.
"""

from ompy.opal.datatype.basic import BASICS, Basic
from ompy.opal.datatype.convertor import Convertor
from ompy.opal.datatype.description import Description

__all__ = ["BASICS", "Basic", "Convertor", "Description"]
