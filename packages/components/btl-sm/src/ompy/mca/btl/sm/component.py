"""The ``sm`` component: decides how this process talks to its neighbours and sets it up.

``query`` (once per process):

1. how many processes of the job share this node (``btl_sm_ring_count``, by default the run-time's
   count, the context's ``local_size``); alone on the node, sm stays out;
2. which ring protocol is sound here (``btl_sm_lockfree``: lock-free on x86-64 only) and whether
   cross-memory attach works (``btl_sm_use_cma``);
3. creates this process's receive segment through the shmem framework, named
   ``ompy-<jobid>-<random>-btl-sm-<rank>`` (mode 0600, created exclusively; every name starts
   with ``ompy-<jobid>-`` so the launcher can remove a crashed job's segments, and 64 random
   bits follow so that no other user can guess the name and create it first), binds the
   doorbell (a socket in the job's private session directory), and puts the contact card
   (segment descriptor, pid, doorbell, protocol, CMA probe) into the modex.  When peers share
   the node but the segment or the doorbell cannot be made, sm stays out with a *warning* that
   names the cause: the job then runs over tcp, but never silently.

**When segments disappear.**  A segment is unlinked as soon as every local peer that runs sm has
attached to it: each attacher sets its word in the segment header, the owner writes how many
peers it expects (in its ``add_procs``), both under a record lock on the segment file, and
whoever completes the set unlinks.  From then on, a crash (even SIGKILL) leaves nothing in
/dev/shm.  The window that remains is from ``query`` until the last local peer's ``add_procs``:
a process killed there leaves ``ompy-<jobid>-<random>-btl-sm-<rank>``, which the launcher
removes with the job's other files; a normal exit or an exception unlinks it in ``finalize`` or
at interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import secrets
import sys
from typing import Any

from ompy.opal import membarrier
from ompy.opal.mca import Offer
from ompy.opal.mca.btl import BtlComponent, BtlContext, BtlError, BtlModule, ModuleDefaults
from ompy.opal.mca.params import ParamType
from ompy.opal.mca.shmem import (
    InvalidSegmentNameError,
    Segment,
    SegmentDescriptor,
    ShmemError,
)
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.modex import ModexError

from . import __version__
from . import layout as L  # noqa: N812 (read as "the layout")
from .doorbell import btl_doorbell
from .module import SmBtlModule, SmEndpoint
from .sysdeps import CmaError, allow_ptrace_from_anyone, cma_problem, copy, lock_free_supported

MODEX_KEY = "btl.sm.card"


class SmBtlComponent(BtlComponent):
    """Shared memory between the processes of one node: one module per process."""

    name = "sm"
    version = __version__
    description = "shared memory between processes on one node (rings, doorbell, CMA get/put)"
    default_priority = 50
    # Eager up to 64 KiB of data (plus room for a PML header): below that, two copies through
    # a ring cost less than a rendezvous round trip in Python (64 KiB ping-pong: ~25 µs eager,
    # ~70 µs by RGET + CMA get).  Rings hold four such records.
    module_defaults = ModuleDefaults(
        eager_limit=64 * 1024 + 64,
        max_send_size=64 * 1024 + 64,
        rdma_pipeline_send_length=32 * 1024,
        rdma_pipeline_frag_size=1 << 30,
        min_rdma_pipeline_size=0,
        exclusivity=65534,
        latency=1,
        bandwidth=40_000,
    )

    @classmethod
    def preload(cls) -> None:
        """Register for membarrier in the fork server: ranks inherit it (cheap only there)."""
        membarrier.register()

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "fbox_size",
            ParamType.INT,
            256 * 1024,
            "Bytes of each per-sender ring (fast box) in a receiver's segment; a power of two "
            "that holds at least one fragment of btl_sm_max_send_size plus 8 bytes",
            level=4,
            minimum=1024,
        )
        self.register_param(
            "ring_count",
            ParamType.INT,
            0,
            "Rings per segment, one per process of the job on this node (0: the run-time's "
            "count of them); sm stays out when a process is alone on its node",
            level=5,
            minimum=0,
        )
        self.register_param(
            "lockfree",
            ParamType.ENUM,
            "auto",
            "Ring protocol: auto is lock-free where the processor orders memory strongly "
            "enough (x86-64), locked elsewhere; no forces a record lock around every ring update",
            level=5,
            choices=("auto", "no"),
        )
        self.register_param(
            "use_cma",
            ParamType.ENUM,
            "auto",
            "Cross-memory attach (process_vm_readv) for get/put: auto uses it where permitted, "
            "yes fails if it is not, no always sends large messages as fragments",
            level=4,
            choices=("auto", "yes", "no"),
        )
        self.register_param(
            "free_list_max",
            ParamType.INT,
            1024,
            "Most descriptors of each size the module has in use at once",
            level=9,
            minimum=1,
        )
        self.register_param(
            "finalize_timeout",
            ParamType.FLOAT,
            5.0,
            "Seconds finalize waits for queued sends to reach their peers' rings",
            level=7,
            minimum=0,
        )

    def open(self) -> None:
        self.module: SmBtlModule | None = None
        self._modex = None
        self._cards: dict[int, dict | None] = {}
        self._probe = ctypes.create_string_buffer(secrets.token_bytes(8), 8)
        self._shmem = None

    # -- query ------------------------------------------------------------------------------

    def query(self, context: BtlContext) -> Offer[list[BtlModule[Any]]] | None:
        if not sys.platform.startswith("linux"):
            self.log.debug("needs Linux (epoll, pidfd, abstract sockets)")
            return None
        me = context.proc
        rings = self.param("ring_count") or context.local_size
        if rings < 2:
            self.log.debug("this process is alone on its node (or the local size is unknown)")
            return None
        if me.local_rank >= rings:
            raise BtlError(
                f"sm: local rank {me.local_rank} needs at least {me.local_rank + 1} rings, but "
                f"{self.param_name('ring_count')} (or the run-time's local size) gives {rings}"
            )
        attributes = self.module_attributes()
        fbox = self.param("fbox_size")
        layout = L.Layout(rings, fbox)
        if L.record_size(attributes.max_send_size) > fbox:
            raise BtlError(
                f"sm: {self.param_name('max_send_size')} = {attributes.max_send_size} does not "
                f"fit in a ring of {self.param_name('fbox_size')} = {fbox} bytes (a fragment "
                f"needs {L.record_size(attributes.max_send_size)}); raise the ring size or "
                "lower the fragment size"
            )
        lock_free = self._lock_free()
        cma = self._cma()
        self._shmem = shmem_base.selection(self.registry)
        # The random part makes the name unpredictable: the job id is visible to every user
        # (/tmp, /proc), and a name another user can guess, they can create first.
        name = f"ompy-{me.jobid}-{secrets.token_hex(8)}-btl-sm-{me.rank}"
        try:
            segment = self._shmem.module.create(name, layout.size)
        except InvalidSegmentNameError as error:
            raise BtlError(
                f"sm: the job id {me.jobid!r} cannot be part of a segment name: {error}"
            ) from error
        except ShmemError as error:
            return self._unusable(rings, f"its shared-memory segment: {error}")
        fd = -1
        try:
            fd = os.open(segment.descriptor.path, os.O_RDWR | os.O_CLOEXEC)
            self._init_header(segment, layout, lock_free)
            doorbell = btl_doorbell(me.rank)
        except BaseException as error:
            with contextlib.suppress(ShmemError, FileNotFoundError):
                segment.unlink()
            if fd >= 0:
                os.close(fd)
            if isinstance(error, OSError):  # DoorbellError included
                return self._unusable(rings, f"its segment file or doorbell: {error}")
            raise
        atexit.register(self._unlink_at_exit, segment.descriptor)
        self.module = SmBtlModule(
            self,
            attributes,
            me=me,
            segment=segment,
            layout=layout,
            fd=fd,
            doorbell=doorbell,
            lock_free=lock_free,
            cma=cma,
            engine=context.progress,
            attach=lambda descriptor: shmem_base.attach(descriptor, self.registry),
            free_list_max=self.param("free_list_max"),
            finalize_timeout=self.param("finalize_timeout"),
        )
        self.progress = self.module.progress  # bound once: what the progress engine calls
        self._modex = context.modex
        card = {
            "segment": segment.descriptor.to_dict(),
            "pid": os.getpid(),
            "doorbell": doorbell.address,
            "protocol": L.PROTOCOL_LOCK_FREE if lock_free else L.PROTOCOL_LOCKED,
            "ring_count": rings,
            "fbox_size": fbox,
            "cma": cma,
            "probe": ctypes.addressof(self._probe),
            "nonce": self._probe.raw.hex(),
        }
        context.modex.put(MODEX_KEY, json.dumps(card).encode())
        context.node_transports.add(self.name)
        self.log.debug(
            "segment %s (%d bytes, %d rings of %d), %s rings, CMA %s",
            name,
            layout.size,
            rings,
            fbox,
            "lock-free" if lock_free else "locked",
            "on" if cma else "off",
        )
        return Offer(self.priority, [self.module])

    def _unusable(self, rings: int, cause: str) -> None:
        """sm was expected (peers share this node) but cannot run: say so, never silently."""
        self.log.warning(
            "shared memory cannot be used on this node (%d processes of the job share it), "
            "so they will talk through another transport (tcp), more slowly: could not create "
            "%s",
            rings,
            cause,
        )

    def _lock_free(self) -> bool:
        if self.param("lockfree") == "no":
            return False
        if lock_free_supported():
            return True
        self.log.debug("this processor does not order memory like x86-64: using locked rings")
        return False

    def _cma(self) -> bool:
        wanted = self.param("use_cma")
        if wanted == "no":
            return False
        allow_ptrace_from_anyone()
        problem = cma_problem()
        if problem is None:
            return True
        if wanted == "yes":
            raise BtlError(
                f"sm: {self.param_name('use_cma')} = yes, but cross-memory attach does not work "
                f"here: {problem}"
            )
        self.log.debug(
            "cross-memory attach unavailable (%s); large messages use fragments", problem
        )
        return False

    @staticmethod
    def _init_header(segment: Segment, layout: L.Layout, lock_free: bool) -> None:
        view = segment.buffer
        try:
            words = view[: layout.header_size].cast("Q")
            words[L.H_VERSION] = L.VERSION
            words[L.H_RINGS] = layout.ring_count
            words[L.H_FBOX] = layout.fbox_size
            words[L.H_PID] = os.getpid()
            words[L.H_PROTOCOL] = L.PROTOCOL_LOCK_FREE if lock_free else L.PROTOCOL_LOCKED
            words[L.H_MAGIC] = L.MAGIC
            words.release()
        finally:
            view.release()

    # -- peers ------------------------------------------------------------------------------

    def peer_info(self, rank: int) -> dict | None:
        """A peer's contact card from the modex (cached), or None if it does not run sm."""
        if rank not in self._cards:
            try:
                raw = self._modex.get(rank, MODEX_KEY)
            except ModexError:
                self._cards[rank] = None
            else:
                try:
                    card = json.loads(raw)
                    SegmentDescriptor.from_dict(card["segment"])
                except (ValueError, KeyError, TypeError, ShmemError) as error:
                    raise BtlError(
                        f"sm: rank {rank} published an unreadable contact card: {error}"
                    ) from None
                self._cards[rank] = card
        return self._cards[rank]

    def check_cma(self, endpoint: SmEndpoint, card: dict) -> None:
        """Read the peer's probe word; if that is refused, stop offering get/put (or fail)."""
        target = ctypes.create_string_buffer(8)
        problem = None
        if not card.get("cma"):
            problem = "the peer does not use cross-memory attach"
        else:
            try:
                copy(endpoint.pid, ctypes.addressof(target), card["probe"], 8, write=False)
            except CmaError as error:
                problem = f"reading its memory failed: {error.strerror}"
            else:
                if target.raw.hex() != card["nonce"]:
                    problem = "reading its memory returned the wrong bytes"
        if problem is None:
            return
        message = (
            f"cross-memory attach to rank {endpoint.proc.rank} (pid {endpoint.pid}): {problem}"
        )
        if self.param("use_cma") == "yes":
            raise BtlError(f"sm: {self.param_name('use_cma')} = yes, but {message}")
        self.log.debug("%s; get/put disabled, large messages use fragments", message)
        self.module.disable_cma()

    def _unlink_at_exit(self, descriptor: SegmentDescriptor) -> None:
        with contextlib.suppress(OSError):
            os.unlink(descriptor.path)

    def progress(self) -> int:
        return 0  # replaced by the module's progress once query made it

    def close(self) -> None:
        module = self.module
        if module is not None:
            atexit.unregister(self._unlink_at_exit)
            self.module = None
