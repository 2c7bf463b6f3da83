"""A pure-Python PMI client: PMI-2, or PMI-1 where only that is offered, over ``PMI_FD``.

A resource manager that launches the ranks itself (Slurm's ``srun --mpi=pmi2``) leaves each
one a connected socket, names its descriptor in ``PMI_FD`` and its place in ``PMI_RANK`` and
``PMI_SIZE`` (PMI-2 adds ``PMI_JOBID``).  Through it a rank publishes key-value pairs, waits
for all ranks (a fence, PMI-1's barrier), reads what the others published, reads job
attributes, and asks to end the job.  :func:`connect` negotiates the version with the server
(``init``) and returns a :class:`PmiClient` of the version agreed.

One request is in flight at a time (a lock serializes threads): the protocols have no request
ids, an answer belongs to the request before it.
"""

from __future__ import annotations

import abc
import os
import socket
import threading
from collections.abc import Mapping

from .wire import (
    LENGTH_DIGITS,
    PmiError,
    decode_line,
    decode_record,
    encode_line,
    encode_record,
)

__all__ = ["PMI_VARIABLES", "Pmi1Client", "Pmi2Client", "PmiClient", "PmiError", "connect"]

#: What a resource manager sets for a rank it launched with PMI.
PMI_VARIABLES = ("PMI_FD", "PMI_RANK", "PMI_SIZE")
#: PMI-2's largest value (PMI2_MAX_VALLEN of the interface); PMI-1 asks the server.
PMI2_VALUE_LIMIT = 1024
#: PMI-1's line buffer (PMIU_MAXLINE), which a put line with its value must fit.
PMI1_LINE_MAX = 1024
#: Room kept in a PMI-1 put line for the key.
PMI1_KEY_ROOM = 48


def _int_variable(environ: Mapping[str, str], name: str, minimum: int) -> int:
    text = environ.get(name)
    if text is None:
        raise PmiError(f"{name} is not set: not started by a PMI resource manager")
    try:
        value = int(text)
    except ValueError:
        raise PmiError(f"{name}={text!r} is not an integer") from None
    if value < minimum:
        raise PmiError(f"{name}={text!r} must be at least {minimum}")
    return value


class _Channel:
    """The socket to the PMI server, read through a buffer; EOF is a clear error."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as error:
            raise PmiError(f"cannot write to the PMI server: {error}") from None

    def line(self) -> bytes:
        try:
            data = self.reader.readline()
        except OSError as error:
            raise PmiError(f"cannot read from the PMI server: {error}") from None
        if not data.endswith(b"\n"):
            raise PmiError("the PMI server closed the connection")
        return data

    def exactly(self, count: int) -> bytes:
        try:
            data = self.reader.read(count)
        except OSError as error:
            raise PmiError(f"cannot read from the PMI server: {error}") from None
        if len(data) != count:
            raise PmiError("the PMI server closed the connection")
        return data

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class PmiClient(abc.ABC):
    """What ompy needs from PMI, whichever version carries it."""

    #: The PMI version spoken (1 or 2).
    version: int

    def __init__(self, channel: _Channel, rank: int, size: int) -> None:
        self._channel = channel
        self._lock = threading.Lock()
        self.rank = rank
        self.size = size
        self.closed = False
        #: The longest value :meth:`put` accepts.
        self.value_limit = PMI2_VALUE_LIMIT

    @property
    @abc.abstractmethod
    def jobid(self) -> str:
        """The job's name in the PMI server's key-value space."""

    @abc.abstractmethod
    def put(self, key: str, value: str) -> None:
        """Publish ``value`` under ``key``, visible to every rank after the next fence."""

    @abc.abstractmethod
    def fence(self) -> None:
        """Wait until every rank entered the fence (PMI-1: the barrier)."""

    @abc.abstractmethod
    def get(self, key: str) -> str | None:
        """The value published under ``key`` before the last fence, or None if there is none."""

    @abc.abstractmethod
    def job_attribute(self, name: str) -> str | None:
        """A job attribute of the server (``PMI_process_mapping``), or None if it has none."""

    @abc.abstractmethod
    def abort(self, code: int, message: str) -> None:
        """Ask the server to end the whole job; no answer is awaited."""

    @abc.abstractmethod
    def finalize(self) -> None:
        """Say goodbye and close the connection (idempotent)."""

    def _check_put(self, key: str, value: str) -> None:
        if len(value) > self.value_limit:
            raise PmiError(
                f"PMI-{self.version} values are at most {self.value_limit} characters, "
                f"{key!r} has {len(value)}"
            )

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._channel.close()


class Pmi2Client(PmiClient):
    """PMI-2 records (see :mod:`.wire`)."""

    version = 2

    def __init__(self, channel: _Channel, environ: Mapping[str, str]) -> None:
        rank = _int_variable(environ, "PMI_RANK", 0)
        super().__init__(channel, rank, _int_variable(environ, "PMI_SIZE", 1))
        self._jobid = environ.get("PMI_JOBID", "")
        fields: dict[str, str | int] = {"pmirank": rank, "threaded": "FALSE"}
        if self._jobid:
            fields["pmijobid"] = self._jobid
        answer = self._request("fullinit", **fields)
        try:
            self.rank, self.size = int(answer["rank"]), int(answer["size"])
        except (KeyError, ValueError):
            raise PmiError(f"the PMI-2 fullinit answer lacks rank or size: {answer}") from None
        if not self._jobid:
            self._jobid = self._request("job-getid")["jobid"]

    @property
    def jobid(self) -> str:
        return self._jobid

    def _request(self, command: str, **fields: str | int) -> dict[str, str]:
        with self._lock:
            self._channel.send(encode_record(command, **fields))
            length = self._channel.exactly(LENGTH_DIGITS)
            try:
                size = int(length)
            except ValueError:
                raise PmiError(f"a PMI-2 answer starts with {length!r}, not a length") from None
            answer = decode_record(self._channel.exactly(size))
        if answer.get("rc", "0") != "0":
            raise PmiError(
                f"the PMI-2 server refused {command} (rc={answer['rc']}"
                f"{': ' + answer['errmsg'] if answer.get('errmsg') else ''})"
            )
        return answer

    def put(self, key: str, value: str) -> None:
        self._check_put(key, value)
        self._request("kvs-put", key=key, value=value)

    def fence(self) -> None:
        self._request("kvs-fence")

    def get(self, key: str) -> str | None:
        answer = self._request("kvs-get", jobid=self._jobid, srcid=-1, key=key)
        return answer.get("value") if answer.get("found") == "TRUE" else None

    def job_attribute(self, name: str) -> str | None:
        answer = self._request("info-getjobattr", key=name)
        return answer.get("value") if answer.get("found") == "TRUE" else None

    def abort(self, code: int, message: str) -> None:
        with self._lock:
            self._channel.send(encode_record("abort", isworld="TRUE", msg=message or "abort"))

    def finalize(self) -> None:
        if not self.closed:
            try:
                self._request("finalize")
            finally:
                self.close()


class Pmi1Client(PmiClient):
    """PMI-1 lines (see :mod:`.wire`); the init was done by :func:`connect`."""

    version = 1

    def __init__(self, channel: _Channel, environ: Mapping[str, str]) -> None:
        rank = _int_variable(environ, "PMI_RANK", 0)
        super().__init__(channel, rank, _int_variable(environ, "PMI_SIZE", 1))
        maxes = self._request("get_maxes", expect="maxes")
        try:
            # room for what the server adds around a value on its own lines
            value_max = int(maxes["vallen_max"]) - 1
        except (KeyError, ValueError):
            raise PmiError(f"the PMI-1 get_maxes answer lacks vallen_max: {maxes}") from None
        self._kvsname = self._request("get_my_kvsname", expect="my_kvsname")["kvsname"]
        # The whole put line must fit the server's line buffer too (Slurm's is PMI-1's 1024
        # bytes, the same as its largest value): leave room for the command, the kvs name and
        # a key of ours (``ompy.<rank>.<commit>.<piece>``).
        line_room = PMI1_LINE_MAX - len(f"cmd=put kvsname={self._kvsname} key= value=\n")
        self.value_limit = min(value_max, line_room - PMI1_KEY_ROOM)

    @property
    def jobid(self) -> str:
        return self._kvsname

    def _request(self, command: str, *, expect: str, **fields: str | int) -> dict[str, str]:
        with self._lock:
            self._channel.send(encode_line(command, **fields))
            answer = decode_line(self._channel.line())
        if answer["cmd"] != expect:
            raise PmiError(f"the PMI-1 server answered {command} with {answer['cmd']}")
        return answer

    def _checked(self, command: str, *, expect: str, **fields: str | int) -> dict[str, str]:
        answer = self._request(command, expect=expect, **fields)
        if answer.get("rc", "0") != "0":
            raise PmiError(
                f"the PMI-1 server refused {command} (rc={answer['rc']}"
                f"{': ' + answer['msg'] if answer.get('msg') else ''})"
            )
        return answer

    def put(self, key: str, value: str) -> None:
        self._check_put(key, value)
        self._checked("put", expect="put_result", kvsname=self._kvsname, key=key, value=value)

    def fence(self) -> None:
        self._checked("barrier_in", expect="barrier_out")

    def get(self, key: str) -> str | None:
        answer = self._request("get", expect="get_result", kvsname=self._kvsname, key=key)
        return answer.get("value") if answer.get("rc", "0") == "0" else None

    def job_attribute(self, name: str) -> str | None:
        return self.get(name)  # PMI-1 servers publish job attributes as keys

    def abort(self, code: int, message: str) -> None:
        with self._lock:
            self._channel.send(encode_line("abort", exitcode=code))

    def finalize(self) -> None:
        if not self.closed:
            try:
                self._checked("finalize", expect="finalize_ack")
            finally:
                self.close()


def _open_channel(environ: Mapping[str, str]) -> _Channel:
    fd = _int_variable(environ, "PMI_FD", 0)
    try:
        sock = socket.socket(fileno=fd)
    except OSError as error:
        raise PmiError(f"PMI_FD={fd} is not an open socket: {error.strerror or error}") from None
    os.set_inheritable(fd, False)  # the processes a rank starts must not talk on it
    return _Channel(sock)


def _init(channel: _Channel, version: int) -> dict[str, str]:
    subversion = 0 if version == 2 else 1
    channel.send(encode_line("init", pmi_version=version, pmi_subversion=subversion))
    answer = decode_line(channel.line())
    if answer["cmd"] != "response_to_init":
        raise PmiError(f"the PMI server answered init with {answer['cmd']}")
    return answer


def connect(environ: Mapping[str, str], version: str = "auto") -> PmiClient:
    """Connect over ``environ['PMI_FD']``; ``version`` is ``"2"``, ``"1"`` or ``"auto"``.

    ``auto`` asks for PMI-2 and settles for PMI-1 when the server offers only that.
    """
    if version not in {"auto", "1", "2"}:
        raise PmiError(f"the PMI version must be auto, 1 or 2, not {version!r}")
    channel = _open_channel(environ)
    try:
        if version in {"auto", "2"}:
            answer = _init(channel, 2)
            if answer.get("rc") == "0" and answer.get("pmi_version") == "2":
                return Pmi2Client(channel, environ)
            if version == "2":
                raise PmiError(
                    f"the PMI server does not speak PMI-2 (it answered {answer}); set "
                    f"ess_pmi_version to auto or 1"
                )
        answer = _init(channel, 1)
        if answer.get("rc") != "0":
            raise PmiError(f"the PMI server refused PMI-1 too (it answered {answer})")
        return Pmi1Client(channel, environ)
    except BaseException:
        channel.close()
        raise
