"""The MPI process instance: everything one MPI process owns, in one object.

As Open MPI 5 hangs a process's MPI state off ``ompi_instance``, ompy hangs it off an
:class:`Instance`: the parameter registry it reads, the progress engine, the selected PML and
its framework, the coll and op frameworks with their selected modules, the world and self
groups, context-id allocation, the attached buffer of buffered sends, the thread level, and the
tables later parts of MPI add (error handlers, keyvals, info).  Communicators, requests and
sessions reach it through one attribute (``comm.instance``).  Nothing else in ``ompy.ompi``
keeps per-process mutable state, so a test can build several independent instances in one
interpreter (:mod:`ompy.ompi.api.testing` builds one per loopback rank).

The world model (``MPI.Init``/``MPI.Finalize``, ``COMM_WORLD``) and MPI-4 sessions share one
instance per process, the *default instance*: each holds a reference (:func:`acquire`), and
the instance is torn down when the last one lets go (:func:`release`).  The default instance
pointer and the world model's lifecycle flags are the only module-level state.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from ompy.opal import codec as opal_codec
from ompy.opal.codec import Pickle
from ompy.opal.datatype.arch import PeerArchs
from ompy.opal.mca.params import Registry
from ompy.opal.mca.params import registry as process_registry
from ompy.opal.progress import ProgressEngine

from .attributes import KeyvalTable
from .constants import THREAD_SINGLE
from .error_codes import ErrorCodes
from .errors import ERR_INTERN, ERR_OTHER
from .errors import Exception as MPIException
from .group import Group, Members
from .handle import HandleTable
from .mca.coll.base.select import CollSelection
from .mca.op.base.select import OpSelection
from .mca.osc.base.select import OscSelection
from .mca.pml.interface import PmlModule
from .mca.topo.base.select import TopoSelection
from .proctable import ProcTable

if TYPE_CHECKING:
    from ompy.opal.mca import OpenFramework

    from .api.bsend import BsendPool
    from .api.cid import Agreements
    from .api.dpm import DpmState
    from .api.from_group import Rendezvous
    from .api.partitions import PartitionBook


def _bsend_pool() -> BsendPool:
    from .api.bsend import BsendPool

    return BsendPool()


def _cid_agreements() -> Agreements:
    from .api.cid import Agreements

    return Agreements()


def _rendezvous(instance: Instance) -> Rendezvous:
    from .api.from_group import Rendezvous

    return Rendezvous(instance)


def _dpm_state() -> DpmState:
    from .api.dpm import DpmState

    return DpmState()


def _partition_book() -> PartitionBook:
    from .api.partitions import PartitionBook

    return PartitionBook()


@attrs.define(eq=False)
class Instance:
    """One MPI process: the modules it selected and the state its MPI objects share."""

    pml: PmlModule
    engine: ProgressEngine
    world_rank: int
    world_size: int
    #: The Proc of every world rank (node ids decide Split_type(COMM_TYPE_SHARED)).
    procs: tuple[Any, ...]
    #: End the job (``Comm.Abort``); the run-time's abort in a real process.
    abort: Callable[[int, str], Any]
    #: The parameter registry every framework of this instance was opened with.
    registry: Registry = attrs.field(factory=process_registry)
    processor_name: str = "localhost"
    #: The run-time (identity, modex, abort) of a launched process; None in loopback worlds.
    runtime: Any = None
    #: The open pml framework (closed at teardown), when the PML came from selection.
    pml_framework: OpenFramework | None = None
    #: The coll framework: opened on the first communicator, one table per communicator.
    coll: CollSelection = attrs.field(
        default=attrs.Factory(lambda self: CollSelection(self.registry), takes_self=True)
    )
    #: The op framework: its modules and the kernel of every (operation, datatype) pair used.
    op: OpSelection = attrs.field(
        default=attrs.Factory(lambda self: OpSelection(self.registry), takes_self=True)
    )
    #: The topo framework: opened when a program first lets MPI reorder a topology.
    topo: TopoSelection = attrs.field(
        default=attrs.Factory(lambda self: TopoSelection(self.registry), takes_self=True)
    )
    #: The osc framework: opened when the program creates its first window (``MPI.Win``).
    osc: OscSelection = attrs.field(
        default=attrs.Factory(lambda self: OscSelection(self.registry), takes_self=True)
    )
    #: The thread level this instance provides (``Init_thread``'s answer).
    thread_level: int = THREAD_SINGLE
    #: The thread that initialized the instance (``Is_thread_main``).
    main_thread: threading.Thread = attrs.field(factory=threading.current_thread)
    #: Context ids of the live communicators of this process.
    cids: set[int] = attrs.field(factory=set)
    bsend: BsendPool = attrs.field(factory=_bsend_pool)
    #: The object codec of every lowercase call: the process's ``MPI.pickle`` unless a test
    #: gives an instance its own.
    codec: Pickle = attrs.field(factory=lambda: opal_codec.pickle)
    #: The context-id agreements running in this process (several with THREAD_MULTIPLE).
    cid_agreements: Agreements = attrs.field(factory=_cid_agreements, repr=False)
    #: Error classes, codes and strings the program added (``MPI.Add_error_class``, ...).
    error_codes: ErrorCodes = attrs.field(factory=ErrorCodes, repr=False)
    #: Where communicators without a parent agree on their context id (``Create_from_group``).
    rendezvous: Rendezvous = attrs.field(
        default=attrs.Factory(_rendezvous, takes_self=True), repr=False
    )
    #: Partitioned point-to-point: channel numbers, init counts, setups set aside.
    partitioned: PartitionBook = attrs.field(factory=_partition_book, repr=False)
    #: The attribute keys of every kind of object (``Comm.Create_keyval``, ...).
    keyvals: KeyvalTable = attrs.field(factory=KeyvalTable, repr=False)
    #: The integer handles of user objects (``toint``/``fromint``, ``py2f``/``f2py``).
    handles: HandleTable = attrs.field(factory=HandleTable, repr=False)
    #: Every world rank's architecture from the modex (heterogeneous conversion); without a
    #: run-time (loopback worlds) every rank is like this process.
    archs: PeerArchs = attrs.field(factory=PeerArchs, repr=False)
    #: Per-process state of the pure-Python helpers (``ompy.util.pkl5``'s keyval, ...), keyed
    #: by the helper's module name: they live outside the layer and keep their state here.
    helpers: dict[str, Any] = attrs.field(factory=dict, repr=False)
    #: Every process this one addresses, world ranks first, then those of other jobs
    #: (dynamic processes: ``ompy.ompi.proctable``); built from ``procs`` when not given.
    proc_table: ProcTable = attrs.field(
        default=attrs.Factory(lambda self: ProcTable(self.procs), takes_self=True), repr=False
    )
    #: The dynamic-process state: the parent intercommunicator, open connections.
    dpm: DpmState = attrs.field(factory=_dpm_state, repr=False)

    # -- threads -----------------------------------------------------------------------------

    def go_threaded(self) -> None:
        """Switch to the locked variants now if ``MPI_THREAD_MULTIPLE`` was granted (see
        :mod:`ompy.ompi.threads`: called when a second thread is about to exist); idempotent."""
        from .threads import go_threaded

        go_threaded(self)

    # -- groups ------------------------------------------------------------------------------

    @property
    def world_group(self) -> Group:
        """The group of every world rank (``mpi://WORLD``), in world-rank order."""
        return Group._of(Members(tuple(range(self.world_size)), self.world_rank, instance=self))

    @property
    def self_group(self) -> Group:
        """The group of this process alone (``mpi://SELF``)."""
        return Group._of(Members((self.world_rank,), self.world_rank, instance=self))

    # -- context ids -------------------------------------------------------------------------

    @property
    def max_tag(self) -> int:
        return self.pml.max_tag

    def lowest_free_cid(self, start: int) -> int:
        """The lowest context id >= ``start`` that no live communicator of this process uses."""
        cid = start
        cids = self.cids
        while cid in cids:
            cid += 1
        if cid > self.pml.max_contextid:
            raise MPIException(
                ERR_INTERN,
                f"out of communicator context ids: the PML carries ids up to "
                f"{self.pml.max_contextid}; free communicators that are no longer used",
            )
        return cid

    # -- teardown ------------------------------------------------------------------------------

    def close(self) -> None:
        """Tear down the frameworks, once no communicator is left: coll, op, then the PML."""
        self.coll.finalize()  # modules of communicators never freed, then coll's components
        self.op.finalize()  # after coll, whose modules reduce with op's kernels
        self.topo.finalize()
        self.osc.finalize()
        self.pml.finalize()
        if self.pml_framework is not None:
            self.pml_framework.close()


# -- the default instance ----------------------------------------------------------------------


@attrs.define
class _DefaultInstance:
    """The process's default instance, who holds it, and the world model's lifecycle."""

    instance: Instance | None = None
    #: How many of the world model and the live sessions hold the instance.
    holders: int = 0
    #: Whether ``MPI.Init`` ran / ``MPI.Finalize`` completed (the world model's state).
    world_initialized: bool = False
    world_finalized: bool = False
    #: An uncaught exception is ending the program: no implicit ``Finalize`` at exit then.
    uncaught: bool = False
    #: Whether the exit hooks (excepthook, atexit) are installed; once per process.
    exit_hooks: bool = False
    #: The ``ompy.rc`` options read when ``ompy.MPI`` was imported
    #: (:class:`ompy.ompi.api.rcoptions.RcOptions`; None before that).
    options: Any = None
    lock: threading.RLock = attrs.field(factory=threading.RLock)


_default = _DefaultInstance()


def default() -> Instance | None:
    """The default instance of this process, or None while nothing holds one."""
    return _default.instance


def current(call: str) -> Instance:
    """The default instance, or an MPI error that says MPI is not usable now."""
    instance = _default.instance
    if instance is None:
        state = "finalized" if _default.world_finalized else "not initialized"
        raise MPIException(ERR_OTHER, f"{call}: MPI is {state}")
    return instance


def world_state() -> _DefaultInstance:
    """The world model's lifecycle flags (``Is_initialized``/``Is_finalized``)."""
    return _default


def acquire(start: Callable[[], Instance]) -> Instance:
    """Take a reference to the default instance, building it with ``start()`` if there is none."""
    with _default.lock:
        if _default.instance is None:
            _default.instance = start()
        _default.holders += 1
        return _default.instance


def release(stop: Callable[[Instance], None]) -> None:
    """Let go of the default instance; the last holder tears it down with ``stop(instance)``."""
    with _default.lock:
        instance = _default.instance
        if instance is None:
            return
        _default.holders -= 1
        if _default.holders > 0:
            return
        _default.instance = None
        stop(instance)


def adopt(instance: Instance | None) -> None:
    """Make ``instance`` the default (tests that install a loopback instance), or forget it."""
    with _default.lock:
        _default.instance = instance
        _default.holders = 1 if instance is not None else 0
        if instance is None:
            _default.world_initialized = _default.world_finalized = False


@contextlib.contextmanager
def adopted(instance: Instance | None) -> Iterator[Instance | None]:
    """``instance`` as the default (None: no default, MPI not initialized) while the block
    runs, then the default as it was.

    Restoring (rather than forgetting) keeps this interpreter's own MPI usable by the tests
    that run after a block that borrowed the default.
    """
    with _default.lock:
        saved = (
            _default.instance,
            _default.holders,
            _default.world_initialized,
            _default.world_finalized,
        )
        adopt(instance)
    try:
        yield instance
    finally:
        with _default.lock:
            (
                _default.instance,
                _default.holders,
                _default.world_initialized,
                _default.world_finalized,
            ) = saved
