"""Everything the tcp BTL puts on the wire: frame headers, the handshake and the contact card.

Frames: an 8-byte header ``!IBB2x`` (payload length, kind, BTL tag, padding) and the payload.
``DATA`` frames go to the tag's callback; ``BYE`` says the sender is closing in order, so the EOF
that follows is not an error.

RDMA get over a stream (the tag byte is unused, 0)::

    GET        get id, key, offset, length            asks the peer for part of a region it
                                                      registered (``!QQQQ``, 32 bytes)
    GET_REPLY  get id, position, then the data        the bytes at ``position`` of that get
                                                      (``!QQ`` + data; a long get is answered
                                                      in several replies of at most
                                                      :data:`REPLY_CHUNK` bytes)
    GET_ERROR  get id, then a UTF-8 message           the peer cannot answer (unknown key, range)

Handshake (the connector speaks first; every message has a fixed size, all checked with HMAC-SHA256
keyed with the job secret, so both sides prove they belong to the job before any frame is read)::

    connector -> acceptor  HELLO      magic, connector nonce, connector rank, link   (32 bytes)
    acceptor  -> connector CHALLENGE  acceptor nonce, acceptor rank, MAC_a           (56 bytes)
    connector -> acceptor  RESPONSE   MAC_c                                          (32 bytes)
    acceptor  -> connector VERDICT    ACCEPT, or DUPLICATE when the acceptor keeps   (8 bytes)
                                      its own outgoing connection instead

``MAC_a = HMAC(secret, "acceptor" + HELLO + nonce_a + rank_a)`` and
``MAC_c = HMAC(secret, "connector" + HELLO + CHALLENGE)``.

Contact card (published in the modex under :data:`MODEX_KEY`): JSON list of this process's
listening addresses, one per module, in module order.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import struct

import attrs

FRAME = struct.Struct("!IBB2x")
FRAME_SIZE = FRAME.size
KIND_DATA = 1
KIND_BYE = 2
KIND_GET = 3
KIND_GET_REPLY = 4
KIND_GET_ERROR = 5

GET_REQUEST = struct.Struct("!QQQQ")
GET_REPLY = struct.Struct("!QQ")
GET_ERROR = struct.Struct("!Q")
#: Most data bytes one GET_REPLY frame carries (its length must fit the header's 32 bits).
REPLY_CHUNK = 1 << 30

MAGIC = b"OMPYTCP1"
HELLO = struct.Struct("!8s16sIH2x")
CHALLENGE_BODY = struct.Struct("!16sI4x")
MAC_SIZE = 32
CHALLENGE_SIZE = CHALLENGE_BODY.size + MAC_SIZE
RESPONSE_SIZE = MAC_SIZE
VERDICT = struct.Struct("!B7x")
VERDICT_ACCEPT = 1
VERDICT_DUPLICATE = 2

MODEX_KEY = "btl.tcp.1"


class HandshakeError(ConnectionError):
    """A peer that did not complete the handshake, or failed to prove the job secret."""


def mac(secret: bytes, label: bytes, *parts: bytes) -> bytes:
    digest = hmac.new(secret, label, hashlib.sha256)
    for part in parts:
        digest.update(part)
    return digest.digest()


def parse_hello(data: bytes) -> tuple[bytes, int, int]:
    """``(nonce, rank, link)`` of a HELLO, or :class:`HandshakeError` for a stranger."""
    magic, nonce, rank, link = HELLO.unpack(data)
    if magic != MAGIC:
        raise HandshakeError(f"the connecting peer is not an ompy tcp btl (greeting {magic!r})")
    return nonce, rank, link


@attrs.frozen
class ContactAddress:
    """One listening address of a peer's module."""

    interface: str
    address: str
    prefixlen: int
    port: int
    loopback: bool
    #: The publishing process's network stack (:func:`ompy.opal.net.stack_identity`).
    stack: str = ""

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"{self.address}/{self.prefixlen}", strict=False)


def encode_card(addresses: list[ContactAddress]) -> bytes:
    return json.dumps([attrs.asdict(address) for address in addresses]).encode()


def decode_card(data: bytes, *, rank: int) -> list[ContactAddress]:
    """Parse a peer's contact card, with an error that names the peer when it is malformed."""
    try:
        return [ContactAddress(**item) for item in json.loads(data)]
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"rank {rank} published a malformed tcp contact card under '{MODEX_KEY}': {error}"
        ) from None
