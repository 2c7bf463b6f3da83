"""``MPI.Win``: one-sided communication (RMA) with mpi4py 4.1's names.

A window is created collectively (``Create``, ``Allocate``, ``Allocate_shared``,
``Create_dynamic``); the instance's osc framework selects a component for it
(:class:`ompy.ompi.mca.osc.base.select.OscSelection`) and every call below checks its
arguments and the epoch rules (:class:`~ompy.ompi.api.window.Epochs`) and hands the work to
the window's :class:`~ompy.ompi.mca.osc.interface.OscModule`.  ``PROC_NULL`` targets do
nothing, as MPI says, without asking the module.
"""

from __future__ import annotations

from typing import Any, Final, Literal, Self

from ..accessors import GetSetProperty
from ..attributes import AttributeSet, CachesAttributes, Keyval
from ..constants import BOTTOM, PROC_NULL
from ..datatype.buffer import BufferSpec, parse_buffer
from ..datatype.datatype import Datatype
from ..errors import (
    ERR_ARG,
    ERR_DISP,
    ERR_GROUP,
    ERR_RANK,
    ERR_RMA_ATTACH,
    ERR_RMA_FLAVOR,
    ERR_RMA_SYNC,
    ERR_SIZE,
    ERR_TYPE,
    ERR_WIN,
)
from ..errors import Exception as MPIException
from ..group import Group
from ..handle import Handle
from ..mca.osc.interface import (
    FLAVOR_ALLOCATE,
    FLAVOR_CREATE,
    FLAVOR_DYNAMIC,
    FLAVOR_SHARED,
    LOCK_EXCLUSIVE,
    LOCK_SHARED,
    MODEL_SEPARATE,
    MODEL_UNIFIED,
    OscQuery,
    Target,
    WindowSetup,
)
from ..memory import address_of, buffer
from ..op.handle import NO_OP, SUM, Op
from .checks import as_int
from .errhandler import ErrhandlerMixin
from .info import INFO_NULL, Info, info_items
from .request import Request
from .window import Window

# Window flavors, memory models, lock types (mpi4py's names; Open MPI's values).
WIN_FLAVOR_CREATE: Final = FLAVOR_CREATE
WIN_FLAVOR_ALLOCATE: Final = FLAVOR_ALLOCATE
WIN_FLAVOR_DYNAMIC: Final = FLAVOR_DYNAMIC
WIN_FLAVOR_SHARED: Final = FLAVOR_SHARED
WIN_SEPARATE: Final = MODEL_SEPARATE
WIN_UNIFIED: Final = MODEL_UNIFIED

# Assertions (``MPI_MODE_*`` of synchronisation calls), Open MPI's values.
MODE_NOCHECK: Final = 1
MODE_NOPRECEDE: Final = 2
MODE_NOPUT: Final = 4
MODE_NOSTORE: Final = 8
MODE_NOSUCCEED: Final = 16
_ALL_MODES: Final = MODE_NOCHECK | MODE_NOPRECEDE | MODE_NOPUT | MODE_NOSTORE | MODE_NOSUCCEED

# Predefined window attributes (Open MPI's keyval numbers, after the communicator ones).
WIN_BASE: Final = 7
WIN_SIZE: Final = 8
WIN_DISP_UNIT: Final = 9
WIN_CREATE_FLAVOR: Final = 10
WIN_FLAVOR: Final = WIN_CREATE_FLAVOR
WIN_MODEL: Final = 11
_WIN_KEYVALS: Final = frozenset({WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL})


class Win(ErrhandlerMixin, CachesAttributes, Handle, referent="_w"):
    """Remote memory access context."""

    __slots__ = ("_w",)

    _w: Window | None
    _errhandler_kind = "win"
    _attr_kind = "Win"

    @classmethod
    def _of(cls, window: Window | None) -> Self:
        handle = cls.__new__(cls)
        handle._w = window
        return handle

    def _live(self, call: str) -> Window:
        w = self._w
        if w is None or w.freed:
            raise MPIException(ERR_WIN, f"{call}: the window is WIN_NULL (a null or freed window)")
        return w

    def _instance_for_handles(self) -> Any:
        from ..instance import current

        w = self._w
        return w.instance if w is not None else current("Win.handle")

    def _free(self) -> None:
        w = self._w
        if w is None or w.freed:
            self._w = None
            return
        self.Free()

    def __repr__(self) -> str:
        w = self._w
        if w is None:
            return "<Win WIN_NULL>"
        return f"<Win {w.name or 'unnamed'} rank {w.rank} of {w.size}>"

    # -- errhandlers ----------------------------------------------------------------------------

    def _errhandler_holder_or_none(self) -> Window | None:
        w = self._w
        return None if w is None or w.freed else w

    def _errhandler_describe(self, holder: Window) -> str:
        return f"window {holder.name or '(unnamed)'} (rank {holder.rank} of {holder.size})"

    # -- attributes -----------------------------------------------------------------------------

    def _attributes(self, call: str) -> AttributeSet:
        return self._live(call).attributes

    def _attr_handle(self) -> tuple[Any, Any]:
        return type(self)._lend(self._live("Win attribute callback"))

    def Get_attr(self, keyval: int) -> int | Any | None:
        """Retrieve attribute value by key (None if not set)."""
        number = as_int(keyval, "Win.Get_attr: keyval")
        if number in _WIN_KEYVALS:
            w = self._live("Win.Get_attr")
            if number == WIN_BASE:
                return _base_address(w)
            if number == WIN_SIZE:
                return w.nbytes
            if number == WIN_DISP_UNIT:
                return w.disp_unit
            if number == WIN_CREATE_FLAVOR:
                return w.flavor
            return w.module.model
        return super().Get_attr(number)

    def _attr_value(self, keyval: Keyval, value: Any) -> Any:
        return value

    # -- creation -------------------------------------------------------------------------------

    @classmethod
    def _make(
        cls,
        call: str,
        *,
        flavor: int,
        comm: Any,
        memory: memoryview | None,
        size: int,
        disp_unit: int,
        info: Info,
        owner: Any = None,
    ) -> Self:
        from .comm import Intracomm

        if not isinstance(comm, Intracomm):
            raise TypeError(
                f"{call}: comm must be an MPI.Intracomm, not {type(comm).__name__}"
                if not hasattr(comm, "Is_inter")
                else f"{call}: windows are made over intracommunicators, not intercommunicators"
            )
        c = comm._live(call)
        hints = info_items(info, call)
        query = OscQuery(flavor, comm, size, disp_unit, hints)
        module = c.instance.osc.module(query)
        module.setup(WindowSetup(query, memory))
        window = Window(
            instance=c.instance,
            module=module,
            group=comm.Get_group(),
            rank=c.rank,
            size=c.size,
            flavor=flavor,
            disp_unit=disp_unit,
            nbytes=size,
            owner=owner,
            hints=dict(hints),
        )
        return cls._of(window)

    @classmethod
    def Create(
        cls,
        memory: Any,
        disp_unit: int = 1,
        info: Info = INFO_NULL,
        comm: Any = None,
    ) -> Self:
        """Create a window object for one-sided communication."""
        call = "Win.Create"
        comm = _comm_or_self(comm)
        disp_unit = _disp_unit(disp_unit, call)
        if memory is BOTTOM or memory is None:
            view = memoryview(bytearray(0))
            owner = None
        else:
            owner = memory
            view = _writable_bytes(memory, call)
        return cls._make(
            call,
            flavor=FLAVOR_CREATE,
            comm=comm,
            memory=view,
            size=view.nbytes,
            disp_unit=disp_unit,
            info=info,
            owner=owner,
        )

    @classmethod
    def Allocate(
        cls,
        size: int,
        disp_unit: int = 1,
        info: Info = INFO_NULL,
        comm: Any = None,
    ) -> Self:
        """Create a window object for one-sided communication, with memory MPI allocates."""
        return cls._allocated("Win.Allocate", FLAVOR_ALLOCATE, size, disp_unit, info, comm)

    @classmethod
    def Allocate_shared(
        cls,
        size: int,
        disp_unit: int = 1,
        info: Info = INFO_NULL,
        comm: Any = None,
    ) -> Self:
        """Create a window object whose memory every process of ``comm`` can load and store."""
        return cls._allocated("Win.Allocate_shared", FLAVOR_SHARED, size, disp_unit, info, comm)

    @classmethod
    def _allocated(  # noqa: PLR0917 (the public calls' own arguments, passed on)
        cls, call: str, flavor: int, size: Any, disp_unit: Any, info: Any, comm: Any
    ) -> Self:
        """A window whose memory the osc component allocates (``Allocate``,
        ``Allocate_shared``): the arguments checked, then :meth:`_make`."""
        comm = _comm_or_self(comm)
        size = _size(size, call)
        disp_unit = _disp_unit(disp_unit, call)
        return cls._make(
            call,
            flavor=flavor,
            comm=comm,
            memory=None,
            size=size,
            disp_unit=disp_unit,
            info=info,
        )

    def Shared_query(self, rank: int) -> tuple[buffer, int]:
        """Query the process-local address of a process's part of a window.

        Shared windows answer for every rank (the component maps the memory).  Other windows
        answer as MPI 4.1 allows: a process's own memory for its own rank, and no memory
        (size 0) for the others, whose memory it cannot load or store.
        """
        call = "Win.Shared_query"
        w = self._live(call)
        rank = as_int(rank, f"{call}: rank")
        if not (rank == PROC_NULL or 0 <= rank < w.size):
            raise MPIException(
                ERR_RANK, f"{call}: rank {rank} is not in the window's group of {w.size}"
            )
        if w.flavor == FLAVOR_SHARED:
            view, unit = w.module.shared_query(rank)
            return buffer.frombuffer(view), unit
        if rank == w.rank and w.flavor != FLAVOR_DYNAMIC:
            return buffer.frombuffer(w.module.memory), w.disp_unit
        return buffer.fromaddress(0, 0), w.disp_unit

    @classmethod
    def Create_dynamic(cls, info: Info = INFO_NULL, comm: Any = None) -> Self:
        """Create a window object for one-sided communication, to attach memory to."""
        call = "Win.Create_dynamic"
        comm = _comm_or_self(comm)
        return cls._make(
            call, flavor=FLAVOR_DYNAMIC, comm=comm, memory=None, size=0, disp_unit=1, info=info
        )

    def Attach(self, memory: Any) -> None:
        """Attach a local memory region (dynamic windows)."""
        call = "Win.Attach"
        w = self._live(call)
        if w.flavor != FLAVOR_DYNAMIC:
            raise MPIException(
                ERR_RMA_FLAVOR, f"{call}: only windows made by Win.Create_dynamic take memory"
            )
        view = _writable_bytes(memory, call)
        address = address_of(view)
        for start, length in w.attached.items():
            if start < address + view.nbytes and address < start + length:
                raise MPIException(
                    ERR_RMA_ATTACH,
                    f"{call}: the region at {address:#x} ({view.nbytes} bytes) overlaps one "
                    f"attached at {start:#x} ({length} bytes)",
                )
        w.module.attach(view, address)
        w.attached[address] = view.nbytes

    def Detach(self, memory: Any) -> None:
        """Detach a local memory region (dynamic windows)."""
        call = "Win.Detach"
        w = self._live(call)
        if w.flavor != FLAVOR_DYNAMIC:
            raise MPIException(
                ERR_RMA_FLAVOR,
                f"{call}: only windows made by Win.Create_dynamic have memory attached",
            )
        address = address_of(memory)
        if address not in w.attached:
            raise MPIException(
                ERR_RMA_ATTACH, f"{call}: no memory is attached at {address:#x} to this window"
            )
        w.module.detach(address)
        del w.attached[address]

    def Free(self) -> None:
        """Free a window (collective)."""
        call = "Win.Free"
        w = self._live(call)
        busy = w.epochs.busy
        if busy is not None:
            raise MPIException(ERR_RMA_SYNC, f"{call}: the window still has {busy} open")
        w.module.free()
        w.attributes.delete_all(None, type(self)._lend(w))
        w.freed = True
        w.group.Free()
        self._w = None

    # -- info, group, names -----------------------------------------------------------------------

    def Set_info(self, info: Info) -> None:
        """Set new values for the hints associated with a window."""
        w = self._live("Win.Set_info")
        w.hints.update(info_items(info, "Win.Set_info"))

    def Get_info(self) -> Info:
        """Return the hints for a window (a new info object)."""
        w = self._live("Win.Get_info")
        return Info.Create(w.hints)

    info = GetSetProperty(Get_info, Set_info, "Info hints.")

    def Get_group(self) -> Group:
        """Access the group of processes that created the window (a new handle)."""
        return Group(self._live("Win.Get_group").group)

    def Get_name(self) -> str:
        """Get the print name for this window."""
        if self._w is None:
            return "MPI_WIN_NULL"
        return self._live("Win.Get_name").name

    def Set_name(self, name: str) -> None:
        """Set the print name for this window."""
        if not isinstance(name, str):
            raise TypeError(f"Win.Set_name: name must be a str, not {type(name).__name__}")
        self._live("Win.Set_name").name = name

    name = GetSetProperty(Get_name, Set_name, "Print name.")

    @property
    def group(self) -> Group:
        """Group."""
        return self.Get_group()

    @property
    def group_size(self) -> int:
        """Group size."""
        return self._live("Win.group_size").size

    @property
    def group_rank(self) -> int:
        """Group rank."""
        return self._live("Win.group_rank").rank

    @property
    def attrs(self) -> tuple[int, int, int]:
        """Attributes (base address, size in bytes, displacement unit)."""
        w = self._live("Win.attrs")
        return (_base_address(w), w.nbytes, w.disp_unit)

    @property
    def flavor(self) -> int:
        """Create flavor."""
        return self._live("Win.flavor").flavor

    @property
    def model(self) -> int:
        """Memory model."""
        return self._live("Win.model").module.model

    def tomemory(self) -> buffer:
        """Return window memory buffer."""
        w = self._live("Win.tomemory")
        if w.flavor == FLAVOR_DYNAMIC:  # MPI_BOTTOM: addresses are absolute
            return buffer.fromaddress(0, 0)
        return buffer.frombuffer(w.module.memory)

    def __buffer__(self, flags: int, /) -> memoryview:
        w = self._live("Win.__buffer__")
        if w.flavor == FLAVOR_DYNAMIC:
            return memoryview(b"")
        return memoryview(w.module.memory)

    # -- communication ----------------------------------------------------------------------------

    def _target(
        self, call: str, origin: BufferSpec | None, target_rank: Any, target: Any
    ) -> tuple[Window, Target] | None:
        """The checked target of an RMA call; None for ``PROC_NULL`` (nothing to do)."""
        w = self._live(call)
        rank = as_int(target_rank, f"{call}: target_rank")
        if rank == PROC_NULL:
            return None
        if not 0 <= rank < w.size:
            raise MPIException(
                ERR_RANK, f"{call}: target_rank {rank} is not in the window's group of {w.size}"
            )
        w.epochs.may_access(rank, call)
        count = 0 if origin is None else origin.count
        datatype = None if origin is None else origin.datatype
        disp = 0
        if target is None:
            pass
        elif isinstance(target, (list, tuple)):
            if len(target) > 3:
                raise ValueError(f"{call}: target: expecting 3 items at most, got {len(target)}")
            if len(target) >= 1:
                disp = as_int(target[0], f"{call}: target displacement")
            if len(target) >= 2:
                count = as_int(target[1], f"{call}: target count")
            if len(target) >= 3:
                datatype = target[2]
        else:
            try:
                disp = as_int(target, f"{call}: target")
            except TypeError:
                raise ValueError(
                    f"{call}: target: expecting integral or list/tuple, not {type(target).__name__}"
                ) from None
        if disp < 0 and w.flavor != FLAVOR_DYNAMIC:
            raise MPIException(ERR_DISP, f"{call}: target displacement {disp} is negative")
        if count < 0:
            raise MPIException(ERR_ARG, f"{call}: target count {count} is negative")
        if datatype is None:
            raise ValueError(f"{call}: target: a datatype is needed when origin is None")
        if not isinstance(datatype, Datatype):
            datatype = parse_buffer([bytearray(0), datatype]).datatype
        if not datatype._checked(call).committed:
            raise MPIException(
                ERR_TYPE, f"{call}: the target datatype is not committed (call Commit first)"
            )
        return w, Target(rank, disp, count, datatype)

    def _origin(self, origin: Any, call: str, *, readonly: bool) -> BufferSpec:
        try:
            return parse_buffer(origin, readonly=readonly)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{call}: origin: {error}") from None

    def _rma(
        self,
        call: str,
        kind: Literal["put", "get", "accumulate"],
        origin: Any,
        target_rank: Any,
        target: Any,
        *,
        op: Any = None,
    ) -> Any:
        """The one body of ``Put``, ``Get``, ``Accumulate`` and their request forms: the
        origin read (a ``Get`` writes it), the target checked, the module's operation started;
        what the module returns (its request), or None for ``PROC_NULL``."""
        spec = self._origin(origin, call, readonly=kind != "get")
        found = self._target(call, spec, target_rank, target)
        if found is None:
            return None
        module = found[0].module
        if kind == "put":
            return module.put(spec, found[1])
        if kind == "get":
            return module.get(spec, found[1])
        return module.accumulate(spec, found[1], _op(op, call))

    def Put(self, origin: Any, target_rank: int, target: Any = None) -> None:
        """Put data into a memory window on a remote process."""
        self._rma("Win.Put", "put", origin, target_rank, target)

    def Get(self, origin: Any, target_rank: int, target: Any = None) -> None:
        """Get data from a memory window on a remote process."""
        self._rma("Win.Get", "get", origin, target_rank, target)

    def Accumulate(self, origin: Any, target_rank: int, target: Any = None, op: Op = SUM) -> None:
        """Accumulate data into the target process."""
        self._rma("Win.Accumulate", "accumulate", origin, target_rank, target, op=op)

    def Get_accumulate(
        self, origin: Any, result: Any, target_rank: int, target: Any = None, op: Op = SUM
    ) -> None:
        """Fetch-and-accumulate data into the target process."""
        self._get_accumulate(
            "Win.Get_accumulate", origin, result, target_rank=target_rank, target=target, op=op
        )

    def _get_accumulate(
        self, call: str, origin: Any, result: Any, *, target_rank: Any, target: Any, op: Op
    ) -> Any:
        op = _op(op, call)
        spec = None if origin is None else self._origin(origin, call, readonly=True)
        out = parse_buffer(result, readonly=False)
        found = self._target(call, spec if spec is not None else out, target_rank, target)
        if found is None:
            return None
        if spec is None and op != NO_OP:
            raise ValueError(f"{call}: origin is None, which only op NO_OP allows")
        return found[0].module.get_accumulate(spec, out, found[1], op)

    def Fetch_and_op(
        self, origin: Any, result: Any, target_rank: int, target_disp: int = 0, op: Op = SUM
    ) -> None:
        """Perform one-sided read-modify-write (one element)."""
        call = "Win.Fetch_and_op"
        op = _op(op, call)
        spec = None if origin is None else self._origin(origin, call, readonly=True)
        out = parse_buffer(result, readonly=False)
        disp = as_int(target_disp, f"{call}: target_disp")
        found = self._target(call, spec or out, target_rank, disp)
        if found is None:
            return
        if out.count != 1 or (spec is not None and spec.count != 1):
            got = out.count if out.count != 1 else spec.count if spec is not None else 0
            raise ValueError(f"{call}: expecting a single element, got {got}")
        if spec is not None and spec.datatype != out.datatype:
            raise ValueError(f"{call}: mismatch in origin and result MPI datatypes")
        if spec is None and op != NO_OP:
            raise ValueError(f"{call}: origin is None, which only op NO_OP allows")
        found[0].module.get_accumulate(spec, out, found[1], op)

    def Compare_and_swap(
        self, origin: Any, compare: Any, result: Any, target_rank: int, target_disp: int = 0
    ) -> None:
        """Perform one-sided atomic compare-and-swap (one element)."""
        call = "Win.Compare_and_swap"
        spec = self._origin(origin, call, readonly=True)
        cmp = parse_buffer(compare, readonly=True)
        out = parse_buffer(result, readonly=False)
        disp = as_int(target_disp, f"{call}: target_disp")
        found = self._target(call, spec, target_rank, disp)
        if found is None:
            return
        for what, item in (("origin", spec), ("compare", cmp), ("result", out)):
            if item.count != 1:
                raise ValueError(f"{call}: {what}: expecting a single element, got {item.count}")
        if not spec.datatype == cmp.datatype == out.datatype:
            raise ValueError(f"{call}: mismatch in origin, compare and result MPI datatypes")
        found[0].module.compare_and_swap(spec, cmp, out, found[1])

    def Rput(self, origin: Any, target_rank: int, target: Any = None) -> Request:
        """Put data into a memory window on a remote process (a request)."""
        return self._request(self._rma("Win.Rput", "put", origin, target_rank, target))

    def Rget(self, origin: Any, target_rank: int, target: Any = None) -> Request:
        """Get data from a memory window on a remote process (a request)."""
        return self._request(self._rma("Win.Rget", "get", origin, target_rank, target))

    def Raccumulate(
        self, origin: Any, target_rank: int, target: Any = None, op: Op = SUM
    ) -> Request:
        """Accumulate data into the target process (a request)."""
        core = self._rma("Win.Raccumulate", "accumulate", origin, target_rank, target, op=op)
        return self._request(core)

    def Rget_accumulate(
        self, origin: Any, result: Any, target_rank: int, target: Any = None, op: Op = SUM
    ) -> Request:
        """Accumulate data into the target process using remote memory access (a request)."""
        core = self._get_accumulate(
            "Win.Rget_accumulate", origin, result, target_rank=target_rank, target=target, op=op
        )
        return self._request(core)

    def _request(self, core: Any) -> Request:
        from ..completion import CoreRequest

        if core is None:  # PROC_NULL: a request complete at once
            core = CoreRequest()
            core.finish()
        return Request._of(core, _Progress(self._live("Win request").instance))

    # -- synchronisation ----------------------------------------------------------------------

    def Fence(self, assertion: int = 0) -> None:
        """Perform an MPI fence synchronization on a window."""
        call = "Win.Fence"
        w = self._live(call)
        assertion = _assertion(assertion, call)
        if w.epochs.access is not None or w.epochs.exposure or w.epochs.locked or w.epochs.lock_all:
            raise MPIException(
                ERR_RMA_SYNC, f"{call}: another epoch is open ({w.epochs.busy}); end it first"
            )
        w.module.fence(assertion)
        w.epochs.fence = not assertion & MODE_NOSUCCEED

    def Start(self, group: Group, assertion: int = 0) -> None:
        """Start an RMA access epoch for MPI."""
        call = "Win.Start"
        w = self._live(call)
        assertion = _assertion(assertion, call)
        if w.epochs.access is not None:
            raise MPIException(ERR_RMA_SYNC, f"{call}: an access epoch is already open")
        ranks = _group_ranks(w, group, call)
        w.module.start(ranks, assertion)
        w.epochs.fence = False
        w.epochs.access = frozenset(ranks)

    def Complete(self) -> None:
        """Complete an RMA operations begun after an `Start`."""
        call = "Win.Complete"
        w = self._live(call)
        if w.epochs.access is None:
            raise MPIException(ERR_RMA_SYNC, f"{call}: no access epoch begun by Win.Start")
        w.module.complete()
        w.epochs.access = None

    def Post(self, group: Group, assertion: int = 0) -> None:
        """Start an RMA exposure epoch."""
        call = "Win.Post"
        w = self._live(call)
        assertion = _assertion(assertion, call)
        if w.epochs.exposure:
            raise MPIException(ERR_RMA_SYNC, f"{call}: an exposure epoch is already open")
        ranks = _group_ranks(w, group, call)
        w.module.post(ranks, assertion)
        w.epochs.fence = False
        w.epochs.exposure = True

    def Wait(self) -> Literal[True]:
        """Complete an RMA exposure epoch begun with `Post`."""
        call = "Win.Wait"
        w = self._live(call)
        if not w.epochs.exposure:
            raise MPIException(ERR_RMA_SYNC, f"{call}: no exposure epoch begun by Win.Post")
        w.module.wait()
        w.epochs.exposure = False
        return True

    def Test(self) -> bool:
        """Test whether an RMA exposure epoch has completed."""
        call = "Win.Test"
        w = self._live(call)
        if not w.epochs.exposure:
            raise MPIException(ERR_RMA_SYNC, f"{call}: no exposure epoch begun by Win.Post")
        done = w.module.test()
        if done:
            w.epochs.exposure = False
        return done

    def Lock(self, rank: int, lock_type: int = LOCK_EXCLUSIVE, assertion: int = 0) -> None:
        """Begin an RMA access epoch at the target process."""
        call = "Win.Lock"
        w = self._live(call)
        rank = _rank(w, rank, call)
        lock_type = as_int(lock_type, f"{call}: lock_type")
        if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
            raise MPIException(
                ERR_ARG, f"{call}: lock_type {lock_type} is neither LOCK_EXCLUSIVE nor LOCK_SHARED"
            )
        assertion = _assertion(assertion, call)
        if rank == PROC_NULL:
            return
        if rank in w.epochs.locked or w.epochs.lock_all:
            raise MPIException(ERR_RMA_SYNC, f"{call}: rank {rank} is already locked")
        if w.epochs.access is not None:
            raise MPIException(ERR_RMA_SYNC, f"{call}: an access epoch begun by Win.Start is open")
        w.epochs.fence = False  # a fence followed by no RMA call opened no epoch
        w.module.lock(lock_type, rank, assertion)
        w.epochs.locked[rank] = lock_type

    def Unlock(self, rank: int) -> None:
        """Complete an RMA access epoch at the target process."""
        call = "Win.Unlock"
        w = self._live(call)
        rank = _rank(w, rank, call)
        if rank == PROC_NULL:
            return
        if rank not in w.epochs.locked:
            raise MPIException(ERR_RMA_SYNC, f"{call}: rank {rank} is not locked (Win.Lock)")
        w.module.unlock(rank)
        del w.epochs.locked[rank]

    def Lock_all(self, assertion: int = 0) -> None:
        """Begin an RMA access epoch at all processes."""
        call = "Win.Lock_all"
        w = self._live(call)
        assertion = _assertion(assertion, call)
        if w.epochs.lock_all or w.epochs.locked:
            raise MPIException(ERR_RMA_SYNC, f"{call}: a passive-target epoch is already open")
        if w.epochs.access is not None:
            raise MPIException(ERR_RMA_SYNC, f"{call}: an access epoch begun by Win.Start is open")
        w.epochs.fence = False  # a fence followed by no RMA call opened no epoch
        w.module.lock_all(assertion)
        w.epochs.lock_all = True

    def Unlock_all(self) -> None:
        """Complete an RMA access epoch at all processes."""
        call = "Win.Unlock_all"
        w = self._live(call)
        if not w.epochs.lock_all:
            raise MPIException(ERR_RMA_SYNC, f"{call}: no epoch begun by Win.Lock_all")
        w.module.unlock_all()
        w.epochs.lock_all = False

    def _passive(self, call: str, rank: int | None) -> Window:
        w = self._live(call)
        if rank is None:
            if not (w.epochs.lock_all or w.epochs.locked):
                raise MPIException(ERR_RMA_SYNC, f"{call}: no passive-target epoch is open")
        elif not w.epochs.passive(rank):
            raise MPIException(
                ERR_RMA_SYNC, f"{call}: no passive-target epoch to rank {rank} is open"
            )
        return w

    def Flush(self, rank: int) -> None:
        """Complete all outstanding RMA operations at a target."""
        w = self._live("Win.Flush")
        rank = _rank(w, rank, "Win.Flush")
        if rank != PROC_NULL:
            self._passive("Win.Flush", rank).module.flush(rank)

    def Flush_all(self) -> None:
        """Complete all outstanding RMA operations at all targets."""
        self._passive("Win.Flush_all", None).module.flush_all()

    def Flush_local(self, rank: int) -> None:
        """Complete locally all outstanding RMA operations at a target."""
        w = self._live("Win.Flush_local")
        rank = _rank(w, rank, "Win.Flush_local")
        if rank != PROC_NULL:
            self._passive("Win.Flush_local", rank).module.flush_local(rank)

    def Flush_local_all(self) -> None:
        """Complete locally all outstanding RMA operations at all targets."""
        self._passive("Win.Flush_local_all", None).module.flush_local_all()

    def Sync(self) -> None:
        """Synchronize public and private copies of the window."""
        self._live("Win.Sync").module.sync()


class _Progress:
    """What an RMA request waits through: the window's progress engine."""

    __slots__ = ("engine",)

    def __init__(self, instance: Any) -> None:
        self.engine = instance.engine


# -- argument checks ---------------------------------------------------------------------------


def _comm_or_self(comm: Any) -> Any:
    if comm is None:
        from .comm import COMM_SELF

        return COMM_SELF
    return comm


def _writable_bytes(memory: Any, call: str) -> memoryview:
    try:
        view = memoryview(memory)
    except TypeError:
        raise TypeError(
            f"{call}: memory must support the buffer protocol, not {type(memory).__name__}"
        ) from None
    if view.readonly:
        raise TypeError(f"{call}: memory is read-only; a window needs writable memory")
    if not view.contiguous:
        raise ValueError(f"{call}: memory must be contiguous")
    return view.cast("B") if view.ndim != 1 or view.format != "B" else view


def _size(size: Any, call: str) -> int:
    size = as_int(size, f"{call}: size")
    if size < 0:
        raise MPIException(ERR_SIZE, f"{call}: size {size} is negative")
    return size


def _disp_unit(disp_unit: Any, call: str) -> int:
    disp_unit = as_int(disp_unit, f"{call}: disp_unit")
    if disp_unit <= 0:
        raise MPIException(ERR_DISP, f"{call}: disp_unit {disp_unit} must be positive")
    return disp_unit


def _assertion(assertion: Any, call: str) -> int:
    assertion = as_int(assertion, f"{call}: assertion")
    if assertion & ~_ALL_MODES:
        raise MPIException(
            ERR_ARG,
            f"{call}: assertion {assertion} has bits that are no MODE_* flag "
            "(MODE_NOCHECK, MODE_NOPRECEDE, MODE_NOPUT, MODE_NOSTORE, MODE_NOSUCCEED)",
        )
    return assertion


def _rank(w: Window, rank: Any, call: str) -> int:
    rank = as_int(rank, f"{call}: rank")
    if rank != PROC_NULL and not 0 <= rank < w.size:
        raise MPIException(
            ERR_RANK, f"{call}: rank {rank} is not in the window's group of {w.size}"
        )
    return rank


def _group_ranks(w: Window, group: Any, call: str) -> list[int]:
    if not isinstance(group, Group):
        raise TypeError(f"{call}: group must be an MPI.Group, not {type(group).__name__}")
    if not group:
        raise MPIException(ERR_GROUP, f"{call}: group is GROUP_NULL")
    ranks = Group.Translate_ranks(group, list(range(group.Get_size())), w.group)
    for index, rank in enumerate(ranks):
        if rank < 0:
            raise MPIException(
                ERR_GROUP, f"{call}: rank {index} of the group is not in the window's group"
            )
    return list(ranks)


def _op(op: Any, call: str) -> Op:
    if not isinstance(op, Op):
        raise TypeError(f"{call}: op must be an MPI.Op, not {type(op).__name__}")
    return op


def _base_address(w: Window) -> int:
    if w.flavor == FLAVOR_DYNAMIC:
        return 0
    memory = w.module.memory
    return address_of(memory) if memory.nbytes else 0


#: The null window.
WIN_NULL: Final = Win._of(None)

__all__ = [
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
