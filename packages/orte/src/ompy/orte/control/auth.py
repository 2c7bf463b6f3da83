"""The handshake that proves a peer knows the job secret before anything else is accepted.

The server sends a fresh random nonce; the client answers ``HMAC-SHA256(secret, nonce + who)``
where ``who`` names the role and rank it claims (``b"rank:3"``).  Binding the claim into the
proof means a recorded answer cannot be replayed for another rank, and the fresh nonce means it
cannot be replayed at all.  The secret itself never crosses the wire.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

NONCE_SIZE = 32
#: An application rank.
ROLE_RANK = "rank"
#: A node daemon (``ompy daemon``); the number it claims is its node id.
ROLE_DAEMON = "daemon"


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_SIZE)


def claim(role: str, rank: int) -> bytes:
    """The bytes that name what a client claims to be."""
    return f"{role}:{rank}".encode()


def proof(secret: bytes, nonce: bytes, role: str, rank: int) -> bytes:
    """The client's answer to a challenge."""
    return hmac.new(secret, nonce + claim(role, rank), hashlib.sha256).digest()


def verify(secret: bytes, nonce: bytes, role: str, rank: int, answer: bytes) -> bool:
    """Whether ``answer`` proves knowledge of ``secret`` for this claim (constant time)."""
    return hmac.compare_digest(proof(secret, nonce, role, rank), answer)
