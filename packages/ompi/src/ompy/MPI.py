"""``from ompy import MPI``: the MPI API with mpi4py's names, on ompy's point-to-point stack.

This module only re-exports; the code lives in :mod:`ompy.ompi` (constants, errors, datatypes,
``Status``, ``Group``, ``Op``) and :mod:`ompy.ompi.api` (communicators, requests, messages,
initialization).  Importing it initializes MPI, as importing ``mpi4py.MPI`` does, unless
:mod:`ompy.rc` says otherwise; MPI is finalized at exit.
"""

from __future__ import annotations

from ompy.ompi.api.buffering import Flush_buffer, Iflush_buffer
from ompy.ompi.api.comm import COMM_NULL, COMM_SELF, COMM_WORLD, Comm, Intracomm
from ompy.ompi.api.dynamic import (
    Close_port,
    Lookup_name,
    Open_port,
    Publish_name,
    Unpublish_name,
)
from ompy.ompi.api.environment import (
    Get_abi_fortran_info,
    Get_abi_info,
    Get_abi_version,
    Get_error_class,
    Get_error_string,
    Get_hw_resource_info,
    Get_library_version,
    Get_processor_name,
    Get_version,
    Pcontrol,
    Wtick,
    Wtime,
    get_vendor,
)
from ompy.ompi.api.errhandler import (
    ERRHANDLER_NULL,
    ERRORS_ABORT,
    ERRORS_ARE_FATAL,
    ERRORS_RETURN,
    Errhandler,
)
from ompy.ompi.api.error_classes import (
    Add_error_class,
    Add_error_code,
    Add_error_string,
    Remove_error_class,
    Remove_error_code,
    Remove_error_string,
)
from ompy.ompi.api.from_group import MAX_STRINGTAG_LEN
from ompy.ompi.api.info import INFO_ENV, INFO_NULL, MAX_INFO_KEY, MAX_INFO_VAL, Info
from ompy.ompi.api.init import (
    Attach_buffer,
    Detach_buffer,
    Finalize,
    Init,
    Init_thread,
    Is_finalized,
    Is_initialized,
    Is_thread_main,
    Query_thread,
    init_on_import,
)
from ompy.ompi.api.intercomm import Intercomm
from ompy.ompi.api.memory import Aint_add, Aint_diff, Alloc_mem, Free_mem, Get_address
from ompy.ompi.api.message import MESSAGE_NO_PROC, MESSAGE_NULL, Message
from ompy.ompi.api.request import (
    REQUEST_NULL,
    Grequest,
    Prequest,
    Request,
)
from ompy.ompi.api.session import MAX_PSET_NAME_LEN, SESSION_NULL, Session
from ompy.ompi.api.split_type import (
    COMM_TYPE_HW_GUIDED,
    COMM_TYPE_HW_UNGUIDED,
    COMM_TYPE_RESOURCE_GUIDED,
    COMM_TYPE_SHARED,
)
from ompy.ompi.api.topo_args import UNWEIGHTED, WEIGHTS_EMPTY
from ompy.ompi.api.topo_create import Compute_dims
from ompy.ompi.api.topocomm import Cartcomm, Distgraphcomm, Graphcomm, Topocomm
from ompy.ompi.api.win import (
    LOCK_EXCLUSIVE,
    LOCK_SHARED,
    MODE_NOCHECK,
    MODE_NOPRECEDE,
    MODE_NOPUT,
    MODE_NOSTORE,
    MODE_NOSUCCEED,
    WIN_BASE,
    WIN_CREATE_FLAVOR,
    WIN_DISP_UNIT,
    WIN_FLAVOR,
    WIN_FLAVOR_ALLOCATE,
    WIN_FLAVOR_CREATE,
    WIN_FLAVOR_DYNAMIC,
    WIN_FLAVOR_SHARED,
    WIN_MODEL,
    WIN_NULL,
    WIN_SEPARATE,
    WIN_SIZE,
    WIN_UNIFIED,
    Win,
)
from ompy.ompi.constants import (
    ANY_SOURCE,
    ANY_TAG,
    APPNUM,
    BOTTOM,
    BSEND_OVERHEAD,
    BUFFER_AUTOMATIC,
    CONGRUENT,
    HOST,
    IDENT,
    IN_PLACE,
    IO,
    KEYVAL_INVALID,
    LASTUSEDCODE,
    MAX_ERROR_STRING,
    MAX_LIBRARY_VERSION_STRING,
    MAX_OBJECT_NAME,
    MAX_PROCESSOR_NAME,
    ORDER_C,
    ORDER_F,
    ORDER_FORTRAN,
    PROC_NULL,
    ROOT,
    SIMILAR,
    SUBVERSION,
    TAG_UB,
    THREAD_FUNNELED,
    THREAD_MULTIPLE,
    THREAD_SERIALIZED,
    THREAD_SINGLE,
    UNDEFINED,
    UNEQUAL,
    UNIVERSE_SIZE,
    VERSION,
    WTIME_IS_GLOBAL,
    BottomType,
    BufferAutomaticType,
    InPlaceType,
)
from ompy.ompi.datatype import BY_KEY as _DATATYPES
from ompy.ompi.datatype import COMBINERS as _COMBINERS
from ompy.ompi.datatype import (
    DATATYPE_NULL,
    DISTRIBUTE_BLOCK,
    DISTRIBUTE_CYCLIC,
    DISTRIBUTE_DFLT_DARG,
    DISTRIBUTE_NONE,
    TYPECLASS_COMPLEX,
    TYPECLASS_INTEGER,
    TYPECLASS_LOGICAL,
    TYPECLASS_REAL,
    Datatype,
)
from ompy.ompi.datatype.predefined import typealign as _typealign  # noqa: F401 (mpi4py's)
from ompy.ompi.datatype.predefined import typecode as _typecode  # noqa: F401 (private helper)
from ompy.ompi.errors import ERROR_CLASSES as _ERROR_CLASSES
from ompy.ompi.errors import Exception
from ompy.ompi.group import GROUP_EMPTY, GROUP_NULL, Group
from ompy.ompi.mca.topo import CART, DIST_GRAPH, GRAPH
from ompy.ompi.memory import buffer, memory
from ompy.ompi.op import (
    BAND,
    BOR,
    BXOR,
    LAND,
    LOR,
    LXOR,
    MAX,
    MAXLOC,
    MIN,
    MINLOC,
    NO_OP,
    OP_NULL,
    PROD,
    REPLACE,
    SUM,
    Op,
)
from ompy.ompi.status import F_ERROR, F_SOURCE, F_STATUS_SIZE, F_TAG, Status
from ompy.opal.codec import Pickle, pickle

# MPI.INT, MPI.DOUBLE, ... and MPI.SUCCESS, MPI.ERR_TRUNCATE, ...
globals().update(_DATATYPES)
globals().update(_ERROR_CLASSES)
globals().update(_COMBINERS)  # MPI.COMBINER_NAMED, MPI.COMBINER_VECTOR, ...

__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "APPNUM",
    "BAND",
    "BOR",
    "BOTTOM",
    "BSEND_OVERHEAD",
    "BUFFER_AUTOMATIC",
    "BXOR",
    "COMM_NULL",
    "COMM_SELF",
    "COMM_TYPE_HW_GUIDED",
    "COMM_TYPE_HW_UNGUIDED",
    "COMM_TYPE_RESOURCE_GUIDED",
    "COMM_TYPE_SHARED",
    "COMM_WORLD",
    "CONGRUENT",
    "DATATYPE_NULL",
    "GROUP_EMPTY",
    "GROUP_NULL",
    "HOST",
    "IDENT",
    "IN_PLACE",
    "IO",
    "KEYVAL_INVALID",
    "LAND",
    "LASTUSEDCODE",
    "LOR",
    "LXOR",
    "MAX",
    "MAXLOC",
    "MAX_ERROR_STRING",
    "MAX_LIBRARY_VERSION_STRING",
    "MAX_OBJECT_NAME",
    "MAX_PROCESSOR_NAME",
    "MAX_PSET_NAME_LEN",
    "MAX_STRINGTAG_LEN",
    "MESSAGE_NO_PROC",
    "MESSAGE_NULL",
    "MIN",
    "MINLOC",
    "NO_OP",
    "OP_NULL",
    "ORDER_C",
    "ORDER_F",
    "ORDER_FORTRAN",
    "PROC_NULL",
    "PROD",
    "REPLACE",
    "REQUEST_NULL",
    "ROOT",
    "SESSION_NULL",
    "SIMILAR",
    "SUBVERSION",
    "SUM",
    "TAG_UB",
    "THREAD_FUNNELED",
    "THREAD_MULTIPLE",
    "THREAD_SERIALIZED",
    "THREAD_SINGLE",
    "UNDEFINED",
    "UNEQUAL",
    "UNIVERSE_SIZE",
    "VERSION",
    "WTIME_IS_GLOBAL",
    "Attach_buffer",
    "BottomType",
    "BufferAutomaticType",
    "Close_port",
    "Comm",
    "Datatype",
    "Detach_buffer",
    "Exception",
    "Finalize",
    "Get_error_class",
    "Get_error_string",
    "Get_library_version",
    "Get_processor_name",
    "Get_version",
    "Group",
    "InPlaceType",
    "Init",
    "Init_thread",
    "Intercomm",
    "Intracomm",
    "Is_finalized",
    "Is_initialized",
    "Is_thread_main",
    "Lookup_name",
    "Message",
    "Op",
    "Open_port",
    "Prequest",
    "Publish_name",
    "Query_thread",
    "Request",
    "Session",
    "Status",
    "Unpublish_name",
    "Wtick",
    "Wtime",
]
__all__ += [
    "Aint_add",
    "Aint_diff",
    "Alloc_mem",
    "Flush_buffer",
    "Free_mem",
    "Get_abi_fortran_info",
    "Get_abi_info",
    "Get_abi_version",
    "Get_address",
    "Get_hw_resource_info",
    "Iflush_buffer",
    "Pcontrol",
    "buffer",
    "get_vendor",
    "memory",
]
__all__ += list(_DATATYPES) + list(_ERROR_CLASSES)
# Info, error handlers, added error classes (issue 11).
__all__ += [
    "ERRHANDLER_NULL",
    "ERRORS_ABORT",
    "ERRORS_ARE_FATAL",
    "ERRORS_RETURN",
    "INFO_ENV",
    "INFO_NULL",
    "MAX_INFO_KEY",
    "MAX_INFO_VAL",
    "Add_error_class",
    "Add_error_code",
    "Add_error_string",
    "Errhandler",
    "Info",
    "Remove_error_class",
    "Remove_error_code",
    "Remove_error_string",
]
__all__ += ["F_ERROR", "F_SOURCE", "F_STATUS_SIZE", "F_TAG", "Grequest"]  # status and requests
__all__ += ["Pickle", "pickle"]  # the object codec of the lowercase calls
# Derived datatypes (issue 13).
__all__ += list(_COMBINERS)
__all__ += [
    "DISTRIBUTE_BLOCK",
    "DISTRIBUTE_CYCLIC",
    "DISTRIBUTE_DFLT_DARG",
    "DISTRIBUTE_NONE",
    "TYPECLASS_COMPLEX",
    "TYPECLASS_INTEGER",
    "TYPECLASS_LOGICAL",
    "TYPECLASS_REAL",
]
# Process topologies (issue 15).
__all__ += [
    "CART",
    "DIST_GRAPH",
    "GRAPH",
    "UNWEIGHTED",
    "WEIGHTS_EMPTY",
    "Cartcomm",
    "Compute_dims",
    "Distgraphcomm",
    "Graphcomm",
    "Topocomm",
]

init_on_import()
__all__ += [  # one-sided communication (ompy.ompi.api.win)
    "LOCK_EXCLUSIVE",
    "LOCK_SHARED",
    "MODE_NOCHECK",
    "MODE_NOPRECEDE",
    "MODE_NOPUT",
    "MODE_NOSTORE",
    "MODE_NOSUCCEED",
    "WIN_BASE",
    "WIN_CREATE_FLAVOR",
    "WIN_DISP_UNIT",
    "WIN_FLAVOR",
    "WIN_FLAVOR_ALLOCATE",
    "WIN_FLAVOR_CREATE",
    "WIN_FLAVOR_DYNAMIC",
    "WIN_FLAVOR_SHARED",
    "WIN_MODEL",
    "WIN_NULL",
    "WIN_SEPARATE",
    "WIN_SIZE",
    "WIN_UNIFIED",
    "Win",
]
