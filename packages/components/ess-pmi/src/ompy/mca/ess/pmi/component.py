"""Offer when a PMI resource manager started this process; build its identity through PMI.

``query`` only looks for ``PMI_FD`` (with ``PMI_RANK`` and ``PMI_SIZE``); the connection is made
by :meth:`PmiEssModule.identity`, so that a broken PMI setup stops the rank with a message
about PMI instead of quietly making it a singleton.  The identity needs a job secret (the
transports authenticate peers with it) and PMI has none: rank 0 draws one and publishes it in
the job's key-value space, which only the job's ranks can read; everyone reads it after a
fence.  That is one fence more than a rank of ``ompy run`` makes.

No launcher makes a session directory either.  The ranks of a job on one host share one,
``ompy-session-<jobid>-<digest of the secret>`` under the temporary directory (the digest
makes it unique even when a resource manager's job ids start again from 1): each creates it
if missing (mode 0700) and refuses one it does not own.  The run-time removes it when the job
ends normally (local rank 0, after the final fence), when a rank aborts the job, and when a
rank is sent SIGTERM; a rank killed outright cannot remove anything.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Mapping

from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType
from ompy.opal.session import SESSION_DIR_VAR
from ompy.orte.mca.ess import SECRET_SIZE, EssComponent, EssModule, Identity, JobServices

from . import __version__
from .client import PMI_VARIABLES, PmiClient, connect
from .placement import from_mapping, from_slurm, has_slurm_layout
from .services import PmiJobServices
from .wire import PmiError

SECRET_KEY = "ompy.secret"


class PmiEssModule(EssModule):
    """Identity and job services from the PMI server of the resource manager."""

    def __init__(
        self,
        environ: Mapping[str, str],
        version: str,
        forget: bool,
        log: logging.Logger | None = None,
    ) -> None:
        self._environ = dict(environ)
        self._log = log if log is not None else logging.getLogger("ompy.ess.pmi")
        self._version = version
        self._forget = forget
        self._client: PmiClient | None = None
        self._services: PmiJobServices | None = None

    @property
    def client(self) -> PmiClient | None:
        """The connection, once :meth:`identity` made it."""
        return self._client

    def identity(self) -> Identity:
        try:
            return self._identity()
        except PmiError as error:
            if self._client is not None:
                self._client.close()
            raise ValueError(f"ess pmi: {error}") from None

    def _identity(self) -> Identity:
        client = self._client = connect(self._environ, self._version)
        if self._forget:
            # The processes this rank starts must not take themselves for PMI ranks.
            for name in (*PMI_VARIABLES, "PMI_JOBID"):
                os.environ.pop(name, None)
        if client.rank == 0:
            client.put(SECRET_KEY, secrets.token_hex(SECRET_SIZE))
        client.fence()
        secret_text = client.get(SECRET_KEY)
        if secret_text is None:
            raise PmiError("rank 0's job secret is not in the PMI key-value space after a fence")
        if has_slurm_layout(self._environ):
            placement = from_slurm(self._environ)
        else:
            mapping = client.job_attribute("PMI_process_mapping")
            if mapping is None:
                raise PmiError(
                    "the PMI server gives no PMI_process_mapping and the Slurm step "
                    "variables are missing: where the ranks run is unknown"
                )
            placement = from_mapping(mapping, client.rank, client.size)
        jobid = "pmi" + re.sub(r"[^A-Za-z0-9]", "_", client.jobid)
        secret = bytes.fromhex(secret_text)
        session = self._session_directory(jobid, secret)
        self._log.info(
            "PMI-%d: rank %d of %d, job %s, node %s (local rank %d of %d)%s",
            client.version,
            client.rank,
            client.size,
            client.jobid,
            placement.node_name,
            placement.local_rank,
            placement.local_size,
            "" if placement.rank_nodes else "; the other ranks' nodes come from the modex",
        )
        return Identity(
            jobid=jobid,
            rank=client.rank,
            size=client.size,
            local_rank=placement.local_rank,
            local_size=placement.local_size,
            node_id=placement.node_id,
            node_name=placement.node_name,
            oversubscribed=placement.local_size > len(os.sched_getaffinity(0)),
            session_dir=session,
            secret=secret,
            direct=True,
            rank_nodes=placement.rank_nodes,
            node_names=placement.node_names if placement.rank_nodes else (),
        )

    def _session_directory(self, jobid: str, secret: bytes) -> str:
        digest = hashlib.sha256(secret).hexdigest()[:12]
        path = os.path.join(tempfile.gettempdir(), f"ompy-session-{jobid}-{digest}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                raise PmiError(
                    f"the session directory {path} exists and is not a directory of this user"
                ) from None
        if self._forget:
            os.environ[SESSION_DIR_VAR] = path  # where opal puts this job's files
        return path

    def job_services(self, identity: Identity) -> JobServices | None:
        if self._client is None:
            raise RuntimeError("ess pmi: job_services() before identity()")
        if self._services is None:
            self._services = PmiJobServices(self._client)
        return self._services


class PmiEssComponent(EssComponent):
    """Identity of a rank started by a resource manager that speaks PMI (``srun --mpi=pmi2``)."""

    name = "pmi"
    version = __version__
    description = "a rank started directly by a resource manager (srun --mpi=pmi2), over PMI_FD"
    default_priority = 40

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "version",
            ParamType.ENUM,
            "auto",
            "PMI version to speak: auto (PMI-2, else PMI-1 if the server offers only that), 2 or 1",
            choices=("auto", "1", "2"),
            level=5,
        )

    def query(self, context: Mapping[str, str] | None) -> Offer[EssModule] | None:
        environ = os.environ if context is None else context
        if not all(environ.get(name) for name in PMI_VARIABLES):
            return None
        module = PmiEssModule(
            environ, self.param("version"), forget=environ is os.environ, log=self.log
        )
        return Offer(self.priority, module)
