"""``ompy.ompi.api.rc`` is :mod:`ompy.rc`, the run-time configuration (mpi4py's ``rc``).

The options first lived here; code that imports them from this module keeps working and sees
the very same object, so a setting made through either name is the one ``ompy.MPI`` reads.
"""

from __future__ import annotations

import sys

import ompy.rc

sys.modules[__name__] = ompy.rc
