"""Errors of the control plane, each saying what happened and, where it helps, what to do."""

from __future__ import annotations


class ControlError(Exception):
    """Base class: something went wrong talking to the launcher's control server."""


class AuthenticationError(ControlError):
    """The server refused this client (wrong secret, bad claim) or the handshake failed."""


class ConnectionLostError(ControlError):
    """The control connection closed: the launcher is gone or dropped this rank."""


class RequestError(ControlError, ValueError):
    """A request was refused as invalid: an unknown rank, a malformed message, bad order."""


class FenceError(ControlError):
    """A fence cannot complete, e.g. because a rank finalized or died without entering it."""


class ModexKeyError(ControlError, KeyError):
    """``get(rank, key)`` asked for a key that ``rank`` has not committed."""

    def __init__(self, rank: int, key: str) -> None:
        self.rank, self.key = rank, key
        super().__init__(rank, key)

    def __str__(self) -> str:
        return (
            f"rank {self.rank} has not committed the modex key {self.key!r} (committed data is "
            f"guaranteed visible to every rank only after a fence that follows the commit)"
        )


class PortError(RequestError):
    """A port that is not open was used, or closed while a rank waited on it."""


class ServiceError(RequestError):
    """A service name cannot be published or unpublished (taken, unknown, other port)."""


class NameLookupError(RequestError):
    """``lookup`` named a service nobody published."""


class SpawnError(RequestError):
    """The launcher could not start the processes a spawn asked for."""


#: The refusals that travel by class name (see :mod:`.protocol`).
DPM_ERRORS: dict[str, type[RequestError]] = {
    cls.__name__: cls for cls in (PortError, ServiceError, NameLookupError, SpawnError)
}
