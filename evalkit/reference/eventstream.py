"""The AWS event-stream binary framing, written: one message per event of a Bedrock
stream, as the service frames `ConverseStream`.

A message is a prelude (total length, headers length, both big-endian u32, then the
CRC32 of those 8 bytes), the headers (each a name's length as a byte, the name, a type
byte, 7 for a string, the value's length as a u16 and the value), the payload and the
CRC32 of everything before it. Written here by hand, from the format's documentation,
and read by the prober with botocore's parser: two implementations, so a mistake in
either shows as a checksum or a length the other refuses (tests/probe/apis/test_clouds.py).
"""

from __future__ import annotations

import struct
from zlib import crc32

_STRING = 7


def encode(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string `headers` and `payload`."""
    head = b"".join(struct.pack(">B", len(k)) + k.encode() + struct.pack(">BH", _STRING, len(v))
                    + v.encode() for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", crc32(body))


def event(event_type: str, payload: bytes) -> bytes:
    """An event message (`:message-type` event), JSON payload."""
    return encode({":event-type": event_type, ":content-type": "application/json",
                   ":message-type": "event"}, payload)


def exception(exception_type: str, payload: bytes) -> bytes:
    """A modelled exception mid-stream (`:message-type` exception)."""
    return encode({":exception-type": exception_type, ":content-type": "application/json",
                   ":message-type": "exception"}, payload)
