"""The handle side of dynamic processes: ``Comm.Get_parent/Disconnect/Join``,
``Intracomm.Spawn/Spawn_multiple/Accept/Connect`` and ``MPI.Open_port`` and friends.

The mixins check the arguments as mpi4py does and call :mod:`.dpm`, which does the work.  The
arguments of ``Spawn`` matter at the root only; a root that finds them wrong tells its group
(every member raises the same ``MPI.Exception``), so nobody waits for a spawn that never comes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ERR_ARG, ERR_COMM, ERR_INFO_VALUE, ERR_SPAWN, SUCCESS
from ..errors import Exception as MPIException
from ..instance import current
from . import dpm
from .checks import as_int
from .communicator import Communicator
from .info import INFO_NULL, Info, info_items

if TYPE_CHECKING:
    from .intercomm import Intercomm

#: The info keys ``Spawn`` reads (MPI's reserved ones ompy implements); others are ignored,
#: as MPI lets an implementation ignore hints.
SPAWN_KEYS = ("host", "wdir", "env")


def _command(command: object, call: str) -> str:
    if isinstance(command, bytes):
        command = os.fsdecode(command)
    elif isinstance(command, os.PathLike):
        command = os.fspath(command)
    if not isinstance(command, str):
        raise TypeError(
            f"{call}: command must be a str, bytes or path, not {type(command).__name__}"
        )
    if not command:
        raise MPIException(ERR_SPAWN, f"{call}: the command is empty")
    return command


def _args(args: object, call: str) -> list[str]:
    if args is None:
        return []
    if isinstance(args, (str, bytes)):  # one argument (mpi4py's rule)
        args = [args]
    result = []
    for given in args:  # type: ignore[attr-defined]
        arg = os.fsdecode(given) if isinstance(given, bytes) else given
        if not isinstance(arg, str):
            raise TypeError(f"{call}: every argument must be a str, not {type(arg).__name__}")
        result.append(arg)
    return result


def _app(
    command: object, args: object, maxprocs: object, info: object, call: str
) -> dict[str, Any]:
    """One application of a spawn, as the launcher's ``spawn`` request carries it."""
    count = as_int(maxprocs, f"{call}: maxprocs")
    if count < 1:
        raise MPIException(ERR_SPAWN, f"{call}: maxprocs must be at least 1, got {count}")
    hints = info_items(info, call)
    env: dict[str, str] = {}
    for line in hints.get("env", "").splitlines():
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise MPIException(
                ERR_INFO_VALUE, f"{call}: the info key 'env' needs NAME=value lines, got {line!r}"
            )
        env[name.strip()] = value
    app: dict[str, Any] = {
        "argv": [_command(command, call), *_args(args, call)],
        "maxprocs": count,
        "env": env,
    }
    for key in ("host", "wdir"):
        if key in hints:
            app[key] = hints[key]
    return app


def _fill(errcodes: object, counts: Sequence[int], nested: bool, call: str) -> None:
    """Fill mpi4py's ``errcodes`` list (one code per started process; every one succeeded)."""
    if errcodes is None:
        return
    if not isinstance(errcodes, list):
        raise TypeError(f"{call}: errcodes must be a list, not {type(errcodes).__name__}")
    codes: list[Any] = [[SUCCESS] * n for n in counts] if nested else [SUCCESS] * counts[0]
    errcodes[:] = codes


class DynamicComm:
    """``Get_parent``, ``Disconnect`` and ``Join`` of :class:`~.comm.Comm`."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    @classmethod
    def Get_parent(cls) -> Intercomm:
        """Return the parent intercommunicator for this process (``COMM_NULL`` if it was not
        spawned, or disconnected from its parents)."""
        from .intercomm import Intercomm

        return Intercomm._of(current("Comm.Get_parent").dpm.parent)

    def Disconnect(self) -> None:
        """Disconnect from a communicator: wait until both sides are done with it, free it."""
        c = self._live("Comm.Disconnect")
        if c.predefined:
            raise MPIException(ERR_COMM, f"Comm.Disconnect: {c.name} is predefined")
        dpm.disconnect(c, self.Barrier)  # type: ignore[attr-defined]
        self.Free()  # type: ignore[attr-defined]

    @classmethod
    def Join(cls, fd: int) -> Intercomm:
        """Interconnect two processes connected by a socket (file descriptor ``fd``)."""
        from .comm import COMM_SELF
        from .intercomm import Intercomm

        fd = as_int(fd, "Comm.Join: fd")
        instance = current("Comm.Join")
        self_comm = COMM_SELF._live("Comm.Join")
        return Intercomm._of(dpm.join(instance, self_comm, fd))


class DynamicIntracomm:
    """``Spawn``, ``Spawn_multiple``, ``Accept`` and ``Connect`` of :class:`~.comm.Intracomm`."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    def Spawn(  # noqa: PLR0917 (mpi4py's signature)
        self,
        command: Any,
        args: Sequence[str] | None = None,
        maxprocs: int = 1,
        info: Info = INFO_NULL,
        root: int = 0,
        errcodes: list[int] | None = None,
    ) -> Intercomm:
        """Spawn instances of a single MPI application."""
        call = "Intracomm.Spawn"
        c, root = self._rooted(call, root)
        apps = None
        if c.rank == root:
            apps = _checked(lambda: [_app(command, args, maxprocs, info, call)])
        inter = self._spawn(c, apps, root, call)
        # Every process started (a spawn starts all or fails); each rank sizes the list by
        # its own maxprocs, as mpi4py does.
        if errcodes is not None:
            _fill(errcodes, [max(0, as_int(maxprocs, f"{call}: maxprocs"))], False, call)
        return inter

    def Spawn_multiple(  # noqa: PLR0917 (mpi4py's signature)
        self,
        command: Sequence[Any],
        args: Sequence[Sequence[str]] | None = None,
        maxprocs: Sequence[int] | None = None,
        info: Sequence[Info] | Info = INFO_NULL,
        root: int = 0,
        errcodes: list[list[int]] | None = None,
    ) -> Intercomm:
        """Spawn instances of multiple MPI applications."""
        call = "Intracomm.Spawn_multiple"
        c, root = self._rooted(call, root)
        apps = None
        if c.rank == root:
            apps = _checked(lambda: _apps(command, args, maxprocs, info, call))
        inter = self._spawn(c, apps, root, call)
        if isinstance(apps, list):
            _fill(errcodes, [app["maxprocs"] for app in apps], True, call)
        elif errcodes is not None:  # another rank (its arguments need not be valid)
            _fill(errcodes, _local_counts(command, maxprocs), True, call)
        return inter

    def Accept(self, port_name: str, info: Info = INFO_NULL, root: int = 0) -> Intercomm:
        """Accept a request to form a new intercommunicator."""
        return self._meet("Intracomm.Accept", dpm.ACCEPT, port_name, info, root)

    def Connect(self, port_name: str, info: Info = INFO_NULL, root: int = 0) -> Intercomm:
        """Make a request to form a new intercommunicator."""
        return self._meet("Intracomm.Connect", dpm.CONNECT, port_name, info, root)

    # -- helpers ---------------------------------------------------------------------------

    def _rooted(self, call: str, root: int) -> tuple[Communicator, int]:
        c = self._live(call)
        root = as_int(root, f"{call}: root")
        if not 0 <= root < c.size:
            raise MPIException(
                ERR_ARG if c.size else ERR_COMM,
                f"{call}: root {root} is not a rank of the communicator of size {c.size}",
            )
        return c, root

    def _spawn(self, c: Communicator, apps: Any, root: int, call: str) -> Intercomm:
        from .intercomm import Intercomm

        if isinstance(apps, Exception):
            error_class = apps.error_class if isinstance(apps, MPIException) else ERR_ARG
            problem = (error_class, str(apps))
            with contextlib.suppress(MPIException):  # the root raises its own error below
                dpm.connect_accept(c, "", root, dpm.ACCEPT, call, problem=problem)
            raise apps
        return Intercomm._of(dpm.spawn(c, apps, root, call))

    def _meet(self, call: str, side: str, port_name: Any, info: Any, root: int) -> Intercomm:
        from .intercomm import Intercomm

        c, root = self._rooted(call, root)
        problem = None
        port = ""
        if c.rank == root:
            info_items(info, call)
            try:
                port = dpm._text(port_name, call, "port_name")
            except MPIException as error:
                problem = (error.error_class, str(error))
        return Intercomm._of(dpm.connect_accept(c, port, root, side, call, problem=problem))


def _checked(build: Any) -> Any:
    """The root's applications, or the error that tells its group why not (the root raises
    it as it is, mpi4py's ``ValueError`` or ``TypeError`` included; the others raise it as
    an ``MPI.Exception``)."""
    try:
        return build()
    except (MPIException, TypeError, ValueError) as error:
        return error


def _apps(command: Any, args: Any, maxprocs: Any, info: Any, call: str) -> list[dict[str, Any]]:
    """The applications of ``Spawn_multiple``, by mpi4py's rules: ``command`` a sequence;
    ``args`` None, one string for all, or one argument list per command; ``maxprocs`` None
    (1 each), one int for all, or one per command; ``info`` one Info for all or one per
    command.  A length that does not match is a ``ValueError``, as in mpi4py."""
    if isinstance(command, (str, bytes, os.PathLike)):
        raise ValueError(f"{call}: expecting a sequence of commands, not a single command")
    commands = list(command)
    count = len(commands)
    if count == 0:
        raise MPIException(ERR_SPAWN, f"{call}: no command given")
    arglists = _each(args, count, "args", call, single=lambda a: isinstance(a, (str, bytes)))
    counts = _each(maxprocs, count, "maxprocs", call, single=_is_count)
    infos = _each(info, count, "info", call, single=lambda i: isinstance(i, Info))
    return [
        _app(cmd, a, 1 if n is None else n, i, call)
        for cmd, a, n, i in zip(commands, arglists, counts, infos, strict=True)
    ]


def _local_counts(command: Any, maxprocs: Any) -> list[int]:
    """How a rank other than the root sizes ``errcodes``: its own ``maxprocs`` if it is a
    list, else its ``maxprocs`` (or 1) per command it passed; nothing it cannot tell."""
    if maxprocs is not None and not _is_count(maxprocs):
        return [max(0, int(n)) for n in maxprocs]
    if command is None or isinstance(command, (str, bytes)):
        return []
    each = 1 if maxprocs is None else max(0, maxprocs)
    return [each] * len(command)


def _is_count(value: Any) -> bool:
    return isinstance(value, int)


def _each(value: Any, count: int, what: str, call: str, *, single: Any) -> list[Any]:
    if value is None or single(value):
        return [value] * count
    values = list(value)
    if len(values) != count:
        raise ValueError(f"{call}: expecting {count} items in {what}, got {len(values)}")
    return values


# -- module functions (MPI.Open_port, ...) ---------------------------------------------------------


def Open_port(info: Info = INFO_NULL) -> str:
    """Return an address to connect to (``Intracomm.Accept``/``Connect``)."""
    info_items(info, "Open_port")
    return dpm.open_port(current("Open_port"))


def Close_port(port_name: str) -> None:
    """Close a port."""
    dpm.close_port(current("Close_port"), port_name)


def Publish_name(service_name: str, port_name: str, info: Info = INFO_NULL) -> None:
    """Publish a service name (served by the launcher for all its jobs)."""
    info_items(info, "Publish_name")
    dpm.publish_name(current("Publish_name"), service_name, port_name)


def Unpublish_name(service_name: str, port_name: str, info: Info = INFO_NULL) -> None:
    """Unpublish a service name."""
    info_items(info, "Unpublish_name")
    dpm.unpublish_name(current("Unpublish_name"), service_name, port_name)


def Lookup_name(service_name: str, info: Info = INFO_NULL) -> str:
    """Lookup a port name given a service name."""
    info_items(info, "Lookup_name")
    return dpm.lookup_name(current("Lookup_name"), service_name)
