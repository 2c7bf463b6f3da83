"""The run-time's modex, fence and abort on top of a PMI key-value space.

PMI stores short text values under short keys, each key once per job.  The modex instead
commits whole dicts of msgpack values, may commit again (a key committed again is replaced),
and reads any rank's key.  So each commit is one *blob*: the msgpack of the committed dict,
base64 (URL-safe, unpadded: no ``;``, ``=`` or white space, which the wire protocols reserve),
cut into pieces that fit a PMI value.  Rank ``r``'s ``n``-th commit is stored as

* ``ompy.r.n``: ``<pieces>:<first piece>``, and
* ``ompy.r.n.i`` for the pieces ``i = 1 .. pieces - 1``.

A reader does not know how many commits a rank has made: it reads that rank's commits in
order until one is missing (one failed lookup), merges them, and remembers how far it got.
After each fence, anything may have been committed since, so the first read of a rank in a
new fence epoch looks for further commits before answering; answers are then served from the
merged copy.  A key never committed raises :class:`~ompy.orte.control.ModexKeyError`.

PMI carries one request at a time: a ``get`` that must ask the server while this rank waits
in a fence (MPI runs its last fences beside the progress engine) waits for that fence.  The
transports read every peer's card when they add the procs, right after the start-up fence, so
no lookup of theirs falls into a later fence.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from typing import Any

import attrs
import msgpack

from ompy.orte.control import ModexKeyError
from ompy.orte.mca.ess import JobServices

from .client import PmiClient
from .wire import PmiError

#: Room left in a PMI value for the ``<pieces>:`` prefix of a blob's first piece.
_PREFIX_ROOM = 16


def commit_key(rank: int, commit: int, piece: int = 0) -> str:
    return f"ompy.{rank}.{commit}" if piece == 0 else f"ompy.{rank}.{commit}.{piece}"


def encode_blob(data: dict[str, Any], limit: int) -> list[str]:
    """The pieces of one commit, each at most ``limit`` characters (first one prefixed)."""
    text = base64.urlsafe_b64encode(msgpack.packb(data, use_bin_type=True)).decode()
    text = text.rstrip("=")
    size = max(1, limit - _PREFIX_ROOM)
    pieces = [text[start : start + size] for start in range(0, len(text), size)] or [""]
    pieces[0] = f"{len(pieces)}:{pieces[0]}"
    return pieces


def decode_blob(pieces: list[str]) -> dict[str, Any]:
    text = "".join(pieces)
    text += "=" * (-len(text) % 4)
    data = msgpack.unpackb(base64.urlsafe_b64decode(text), raw=False)
    if not isinstance(data, dict):
        raise PmiError(f"a modex commit read from PMI is a {type(data).__name__}, not a dict")
    return data


@attrs.define
class _PeerView:
    """What this rank has read of one peer's commits."""

    data: dict[str, Any] = attrs.field(factory=dict)
    commits_read: int = 0
    epoch_read: int = -1


class PmiJobServices(JobServices):
    """:class:`JobServices` of a rank launched by a PMI resource manager."""

    def __init__(self, client: PmiClient) -> None:
        self.client = client
        self._commits = 0
        self._epoch = 0
        self._peers: dict[int, _PeerView] = {}
        self._lock = threading.Lock()
        self._finalized = False

    def commit(self, data: dict[str, Any]) -> None:
        if not data:
            return
        with self._lock:
            commit, self._commits = self._commits, self._commits + 1
        rank = self.client.rank
        for piece, text in enumerate(encode_blob(data, self.client.value_limit)):
            self.client.put(commit_key(rank, commit, piece), text)

    def fence(self) -> None:
        self.client.fence()
        with self._lock:
            self._epoch += 1

    def get(self, rank: int, key: str) -> Any:
        if not isinstance(rank, int) or not 0 <= rank < self.client.size:
            raise ModexKeyError(rank, key)
        with self._lock:
            view = self._peers.setdefault(rank, _PeerView())
            if view.epoch_read != self._epoch:
                self._read_new_commits(rank, view)
                view.epoch_read = self._epoch
            try:
                return view.data[key]
            except KeyError:
                raise ModexKeyError(rank, key) from None

    def _read_new_commits(self, rank: int, view: _PeerView) -> None:
        while True:
            first = self.client.get(commit_key(rank, view.commits_read))
            if first is None:
                return
            count_text, sep, head = first.partition(":")
            if not sep or not count_text.isdigit() or int(count_text) < 1:
                raise PmiError(f"rank {rank}'s modex commit {view.commits_read} is malformed")
            pieces = [head]
            for piece in range(1, int(count_text)):
                text = self.client.get(commit_key(rank, view.commits_read, piece))
                if text is None:
                    raise PmiError(
                        f"piece {piece} of rank {rank}'s modex commit {view.commits_read} "
                        f"is missing from the PMI key-value space"
                    )
                pieces.append(text)
            view.data.update(decode_blob(pieces))
            view.commits_read += 1

    def abort(self, code: int, message: str) -> None:
        with contextlib.suppress(PmiError, OSError):
            self.client.abort(code, message)

    def finalize(self) -> None:
        if self._finalized:
            return
        self._finalized = True
        self.client.finalize()
