"""Errors of the byte transfer layer, each naming the transport, the peer and what to do."""

from __future__ import annotations


class BtlError(Exception):
    """Base class of BTL errors."""


class BtlTagError(BtlError, ValueError):
    """A tag outside 0..255, or a tag registered twice."""


class BtlUnsupportedError(BtlError, NotImplementedError):
    """An operation (put, get, sendi) that this module does not offer (see its ``flags``)."""


class BtlSizeError(BtlError, ValueError):
    """A descriptor larger than the module's ``max_send_size``."""


class BtlPeerError(BtlError, ConnectionError):
    """A peer cannot be reached any more: it disconnected, or never proved the job secret.

    Delivered to the error callbacks registered with :meth:`BtlModule.register_error` and raised
    by later sends to the same endpoint.
    """
