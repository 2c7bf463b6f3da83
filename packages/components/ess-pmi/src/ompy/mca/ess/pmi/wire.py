"""The two PMI wire protocols spoken over the socket a resource manager passes as ``PMI_FD``.

Both start with the same text line, ``cmd=init pmi_version=V pmi_subversion=S``, answered by
``cmd=response_to_init rc=0 pmi_version=V ...``; the server's answer decides which follows.

* **PMI-1**: every request and every answer is one line of space-separated ``key=value``
  words, the first being ``cmd=<name>``.  Values cannot contain white space.
* **PMI-2**: every message is a record: its body's length as 6 ASCII characters (decimal,
  padded with spaces), then the body ``cmd=<name>;key=value;...;``.  A ``;`` inside a value is
  written twice.

An answer's ``rc`` other than ``0`` is the server's refusal; :class:`PmiError` carries it with
the request that was refused.
"""

from __future__ import annotations

__all__ = [
    "LENGTH_DIGITS",
    "PmiError",
    "decode_line",
    "decode_record",
    "encode_line",
    "encode_record",
]

#: Width of a PMI-2 record's length field.
LENGTH_DIGITS = 6


class PmiError(RuntimeError):
    """The PMI server refused a request, answered nonsense, or went away."""


def encode_line(command: str, **fields: str | int) -> bytes:
    """A PMI-1 request line: ``cmd=<command> k=v ...\\n``."""
    words = [f"cmd={command}"]
    for key, value in fields.items():
        text = str(value)
        if not text or any(char.isspace() for char in text) or "=" in key:
            raise PmiError(f"PMI-1 cannot carry {key}={text!r} (empty, or white space)")
        words.append(f"{key}={text}")
    return (" ".join(words) + "\n").encode()


def decode_line(line: bytes) -> dict[str, str]:
    """The ``key=value`` words of a PMI-1 answer line (words without ``=`` are ignored)."""
    try:
        text = line.decode()
    except UnicodeDecodeError:
        raise PmiError(f"the PMI-1 server answered undecodable bytes {line[:80]!r}") from None
    fields = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep:
            fields[key] = value
    if "cmd" not in fields:
        raise PmiError(f"the PMI-1 server's answer has no cmd: {text.strip()!r}")
    return fields


def encode_record(command: str, **fields: str | int) -> bytes:
    """A PMI-2 record: the 6-character length, then ``cmd=<command>;k=v;...;``."""
    parts = [f"cmd={command};"]
    for key, value in fields.items():
        parts.append(f"{key}={str(value).replace(';', ';;')};")
    body = "".join(parts).encode()
    if len(body) >= 10**LENGTH_DIGITS:
        raise PmiError(f"a PMI-2 {command} record of {len(body)} bytes is too long")
    return f"{len(body):<{LENGTH_DIGITS}d}".encode() + body


def decode_record(body: bytes) -> dict[str, str]:
    """The fields of a PMI-2 record's body (after its length), ``;;`` read as one ``;``."""
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise PmiError(f"the PMI-2 server answered undecodable bytes {body[:80]!r}") from None
    fields: dict[str, str] = {}
    index, end = 0, len(text)
    while index < end:
        equals = text.find("=", index)
        if equals < 0:
            raise PmiError(f"the PMI-2 record {text!r} has a field without '='")
        key = text[index:equals]
        value, cursor = [], equals + 1
        while True:
            semi = text.find(";", cursor)
            if semi < 0:
                raise PmiError(f"the PMI-2 record {text!r} has a field without ';'")
            value.append(text[cursor:semi])
            if text.startswith(";;", semi):
                value.append(";")
                cursor = semi + 2
                continue
            cursor = semi + 1
            break
        fields[key] = "".join(value)
        index = cursor
    if "cmd" not in fields:
        raise PmiError(f"the PMI-2 record {text!r} has no cmd")
    return fields
