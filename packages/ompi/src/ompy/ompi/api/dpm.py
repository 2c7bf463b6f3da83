"""Dynamic process management (Open MPI's ``ompi/dpm``): ports, names, connect/accept, spawn.

Processes of two jobs of one launcher meet through the launcher (``ompy.orte.control.universe``):

1. **Names.**  The roots of the two groups swap their groups' process descriptions (job,
   universe rank, node, local rank) at a port (``meet``: one side ``accept``, the other
   ``connect``), and broadcast what they got inside their group.
2. **Adding the processes.**  Every member gives each process of the other group an index
   in its :class:`~ompy.ompi.proctable.ProcTable` (world ranks keep theirs; a process of
   another job gets the next free index, once) and makes the new ones reachable with
   ``pml.add_procs(procs, indices)``: the BTLs find their contact data by universe rank in
   the other job's modex, which the launcher serves.  So a process of another job is named
   like a world rank everywhere above the PML, as ``ompi_dpm_connect_accept`` adds
   ``ompi_proc_t`` objects for the other job's process names.
3. **The context id.**  Both groups run the usual agreement (:mod:`.cid`) over a
   :class:`PortBridge`: inside a group over its communicator, between the roots through
   further ``meet`` keys of the same connection.  The intercommunicator's private local
   communicator gets an id agreed inside the group.

``Spawn`` is built on the same path: the root opens a port, asks the launcher to start the
children with the port in their environment, and accepts; each child's MPI initialization
connects to it over ``COMM_WORLD`` (:func:`connect_parent`), which is ``Get_parent``'s answer.
A root whose request fails tells its group, so no member waits for ever.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ompy.opal.proc import Proc
from ompy.opal.threads import InternalThread

from ..errors import (
    ERR_ARG,
    ERR_NAME,
    ERR_OTHER,
    ERR_PORT,
    ERR_SERVICE,
    ERR_SPAWN,
    ERR_UNSUPPORTED_OPERATION,
)
from ..errors import Exception as MPIException
from ..instance import Instance
from .cid import agree, agree_context_id
from .communicator import Communicator
from .inter_create import _intercomm, private_local
from .internal import allgather, bcast_bytes

ACCEPT, CONNECT = "accept", "connect"


@attrs.define(eq=False)
class DpmState:
    """A process's dynamic-process state (on its :class:`~ompy.ompi.instance.Instance`)."""

    #: The intercommunicator to the spawning processes (``Get_parent``), once connected.
    parent: Communicator | None = None
    #: Numbers this process's connections apart (the keys of their later exchanges).
    links: Any = attrs.field(factory=lambda: itertools.count(1))


# -- talking to the launcher ------------------------------------------------------------------


def _error_class(error: BaseException, default: int) -> int:
    from ompy.orte.control.errors import NameLookupError, PortError, ServiceError, SpawnError

    for kind, error_class in (
        (PortError, ERR_PORT),
        (ServiceError, ERR_SERVICE),
        (NameLookupError, ERR_NAME),
        (SpawnError, ERR_SPAWN),
    ):
        if isinstance(error, kind):
            return error_class
    return default


def _launcher(instance: Instance, call: str) -> Any:
    """The run-time that talks to the launcher, or the MPI error saying there is none."""
    if instance.runtime is None:
        raise MPIException(
            ERR_UNSUPPORTED_OPERATION,
            f"{call}: this MPI process has no launcher (dynamic processes need 'ompy run')",
        )
    return instance.runtime


def service(instance: Instance, call: str, op: str, default: int = ERR_OTHER, **fields: Any) -> Any:
    """A request to the launcher's dynamic-process services, made while this process keeps
    progressing its messages (a rendezvous may wait for its other side a long time, and
    peers may need this process's progress meanwhile); refusals become ``MPI.Exception``."""
    from ompy.orte.control import ControlError

    runtime = _launcher(instance, call)
    done = threading.Event()
    outcome: list[Any] = []

    def ask() -> None:
        try:
            outcome.append((True, runtime.service(op, **fields)))
        except BaseException as error:  # re-raised in the calling thread
            outcome.append((False, error))
        finally:
            done.set()
            instance.engine.wakeup()

    thread = InternalThread(target=ask, name=f"ompy-dpm-{op}", daemon=True)
    thread.start()
    instance.engine.wait_until(done.is_set)
    thread.join()
    ok, value = outcome[0]
    if ok:
        return value
    if isinstance(value, ControlError):
        raise MPIException(_error_class(value, default), f"{call}: {value}") from None
    if isinstance(value, RuntimeError):
        raise MPIException(ERR_UNSUPPORTED_OPERATION, f"{call}: {value}") from None
    raise value


# -- ports and names --------------------------------------------------------------------------


def open_port(instance: Instance) -> str:
    port: str = service(instance, "Open_port", "open_port", ERR_PORT)
    return port


def close_port(instance: Instance, port: str) -> None:
    service(
        instance, "Close_port", "close_port", ERR_PORT, port=_text(port, "Close_port", "port_name")
    )


def publish_name(instance: Instance, name: str, port: str) -> None:
    call = "Publish_name"
    service(
        instance,
        call,
        "publish",
        ERR_SERVICE,
        service=_text(name, call, "service_name"),
        port=_text(port, call, "port_name"),
    )


def unpublish_name(instance: Instance, name: str, port: str) -> None:
    call = "Unpublish_name"
    service(
        instance,
        call,
        "unpublish",
        ERR_SERVICE,
        service=_text(name, call, "service_name"),
        port=_text(port, call, "port_name"),
    )


def lookup_name(instance: Instance, name: str) -> str:
    call = "Lookup_name"
    port: str = service(
        instance, call, "lookup", ERR_NAME, service=_text(name, call, "service_name")
    )
    return port


def _text(value: object, call: str, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{call}: {what} must be a str, not {type(value).__name__}")
    if not value:
        raise MPIException(ERR_ARG, f"{call}: {what} is empty")
    return value


# -- connect and accept -----------------------------------------------------------------------


def _describe(proc: Proc) -> list[Any]:
    return [proc.jobid, proc.rank, proc.node_name, proc.local_rank]


def _foreign_proc(instance: Instance, record: Sequence[Any]) -> Proc:
    """A process of another job, with a node id of this job's numbering (same host name:
    same node; a host this job does not use gets an id of its own)."""
    jobid, rank, node_name, local_rank = record
    node_id = instance.proc_table.node_id_for(node_name)
    return Proc(jobid, rank, node_id=node_id, node_name=node_name, local_rank=local_rank)


@attrs.define(eq=False)
class PortBridge:
    """The path between the two groups of a connection (see :class:`.inter_create.Bridge`,
    whose interface it has): the roots exchange through the launcher under ``link``."""

    local: Communicator
    leader: int
    side: str
    link: str
    call: str
    steps: Any = attrs.field(factory=lambda: itertools.count(1))

    def exchange(self, value: Any, problem: tuple[int, str] | None = None) -> Any:
        data = None
        key = f"{self.link}/{next(self.steps)}"
        if self.local.rank == self.leader:
            if problem is None:
                try:
                    theirs = service(
                        self.local.instance,
                        self.call,
                        "meet",
                        ERR_PORT,
                        key=key,
                        side=self.side,
                        value=pickle.dumps(value),
                    )
                    data = pickle.dumps((True, pickle.loads(theirs)))
                except MPIException as error:
                    data = pickle.dumps((False, (error.error_class, str(error))))
            else:
                data = pickle.dumps((False, problem))
        ok, answer = pickle.loads(bcast_bytes(self.local, data, self.leader))
        if not ok:
            raise MPIException(*answer)
        return answer

    def allgather(self, value: Any) -> tuple[list[Any], list[Any]]:
        mine = allgather(self.local, value)
        return mine, self.exchange(mine)

    def gather(self, value: Any) -> list[Any]:
        mine, theirs = self.allgather(value)
        return mine + theirs


def connect_accept(
    comm: Communicator,
    port: str,
    root: int,
    side: str,
    call: str,
    *,
    problem: tuple[int, str] | None = None,
) -> Communicator:
    """``Accept`` (``side`` "accept") or ``Connect`` over ``comm``: an intercommunicator with
    the group that called the other on ``port`` (module docstring).  ``problem`` is the root's
    reason not to go on (an error class and message), raised by every member instead."""
    instance = comm.instance
    table = instance.proc_table
    first = None
    if comm.rank == root:
        if problem is None:
            try:
                _launcher(instance, call)
                mine = [_describe(table.proc(index)) for index in comm.world_ranks]
                me = table.proc(instance.world_rank)
                link = f"{port}#{me.jobid}.{instance.world_rank}.{next(instance.dpm.links)}"
                answer = service(
                    instance,
                    call,
                    "meet",
                    ERR_PORT,
                    key=port,
                    side=side,
                    value=pickle.dumps((mine, link)),
                )
                theirs, their_link = pickle.loads(answer)
                first = pickle.dumps((True, (theirs, link if side == ACCEPT else their_link)))
            except MPIException as error:
                first = pickle.dumps((False, (error.error_class, str(error))))
        else:
            first = pickle.dumps((False, problem))
    ok, answer = pickle.loads(bcast_bytes(comm, first, root))
    if not ok:
        raise MPIException(*answer)
    theirs, link = answer
    procs = [_foreign_proc(instance, record) for record in theirs]
    remote, new = table.add_foreign(procs)
    if new:
        keys = [index for index, proc in zip(remote, procs, strict=True) if proc in new]
        try:
            with instance.engine.lock:
                instance.pml.add_procs(new, keys)
        except MPIException:
            raise
        except Exception as error:  # the transports cannot reach them (e.g. btl self,sm)
            raise MPIException(
                ERR_OTHER,
                f"{call}: cannot reach the processes of the other job: {error} (processes of "
                f"different jobs talk over tcp: keep it in the 'btl' selection)",
            ) from None
    bridge = PortBridge(comm, root, side, link, call)
    local_cid = agree_context_id(comm)
    local = private_local(instance, local_cid, tuple(comm.world_ranks))
    cid = agree(instance, bridge.gather, priority=(2, link))
    name = f"MPI INTERCOMMUNICATOR {cid} {'ACCEPTED' if side == ACCEPT else 'CONNECTED'} ON {port}"
    inter = _intercomm(instance, cid, local, tuple(remote), name)
    inter.session = comm.session
    inter.errhandler = comm.errhandler
    return inter


# -- spawn ------------------------------------------------------------------------------------


def spawn(
    comm: Communicator,
    apps: list[dict[str, Any]] | None,
    root: int,
    call: str,
) -> Communicator:
    """``Spawn``/``Spawn_multiple`` over ``comm``: ``apps`` (significant at ``root``) are
    started by the launcher as one new job, which connects back (module docstring)."""
    instance = comm.instance
    port = ""
    problem: tuple[int, str] | None = None
    if comm.rank == root:
        assert apps is not None
        try:
            port = open_port(instance)
            service(instance, call, "spawn", ERR_SPAWN, apps=apps, port=port)
        except MPIException as error:
            problem = (error.error_class, str(error))
    try:
        return connect_accept(comm, port, root, ACCEPT, call, problem=problem)
    finally:
        if port:  # the root's; a port the children never reached is closed all the same
            with contextlib.suppress(MPIException):
                close_port(instance, port)


def connect_parent(instance: Instance, world: Communicator) -> None:
    """In a spawned job's MPI initialization: connect to the parents (``Get_parent``)."""
    runtime = instance.runtime
    port = runtime.identity.parent_port if runtime is not None else ""
    if port:
        instance.dpm.parent = connect_accept(world, port, 0, CONNECT, "MPI.Init (Get_parent)")


# -- join -------------------------------------------------------------------------------------


def join(instance: Instance, self_comm: Communicator, fd: int) -> Communicator:
    """``Comm.Join``: two processes joined by a connected socket ``fd`` swap port names over
    it; the one with the lower name accepts on its port, the other connects to that."""
    call = "Comm.Join"
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError as error:
        raise MPIException(ERR_ARG, f"{call}: fd {fd} is not a usable socket: {error}") from None
    port = open_port(instance)
    try:
        with sock:
            sock.setblocking(True)
            data = port.encode()
            sock.sendall(len(data).to_bytes(4, "big") + data)
            theirs = _read_exactly(
                sock, int.from_bytes(_read_exactly(sock, 4, call), "big"), call
            ).decode()
        if port < theirs:
            return connect_accept(self_comm, port, 0, ACCEPT, call)
        return connect_accept(self_comm, theirs, 0, CONNECT, call)
    finally:
        close_port(instance, port)


def _read_exactly(sock: socket.socket, size: int, call: str) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise MPIException(ERR_OTHER, f"{call}: the other process closed the socket")
        chunks += chunk
    return bytes(chunks)


def disconnect(comm: Communicator, barrier: Callable[[], None]) -> None:
    """``Comm.Disconnect``: wait until both sides are done with ``comm`` (``barrier``), then
    free it; the parent intercommunicator is forgotten by ``Get_parent``."""
    barrier()
    instance = comm.instance
    if instance.dpm.parent is comm:
        instance.dpm.parent = None
