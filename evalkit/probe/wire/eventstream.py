"""The AWS event-stream binary framing (Bedrock's streaming responses), fed the stamped
reads of a body as they arrive, its messages decoded by botocore's own parser.

Why botocore's: the framing is a prelude (total and header lengths, their CRC32), typed
headers, a payload and the message's CRC32. The AWS SDKs' parser checks every length and
both checksums; ours would be the one nobody else runs. What stays ours is the clock: the
prober stamps each socket read before handing its bytes here, and a message completed by
a read carries that read's stamp, as an SSE event does (`evalkit.probe.wire.sse`).

Only the first four bytes of a message (its total length, big-endian) are read here, to
hand botocore whole messages: botocore's buffer joins every read to the bytes before it,
so a message trickled a byte a read would be copied once per byte (quadratic). Here a
partial message is a list of reads, joined once, when its last byte arrives, and a
message longer than `MAX_MESSAGE_BYTES` is refused before it is buffered.

    >>> from evalkit.reference.eventstream import encode
    >>> f = EventStreamFramer()
    >>> [(e.event, e.data) for e in f.feed(encode({":message-type": "event",
    ...     ":event-type": "messageStop"}, b'{"stopReason":"end_turn"}'))]
    [('messageStop', '{"stopReason":"end_turn"}')]
"""

from __future__ import annotations

import struct
from typing import Any

from evalkit.probe.wire.sse import MAX_EVENT_BYTES, SSEEvent, SSETooLarge

#: the longest message taken (the payload of one event of generated text is bytes; 1 MiB,
#: as SSE's bound: botocore's own bound, 24 MiB, is for any AWS service)
MAX_MESSAGE_BYTES = MAX_EVENT_BYTES
#: the prelude (two lengths and their CRC) and the message CRC: no message is shorter
_MIN_MESSAGE = 16
#: what `SSEEvent.event` is for a message that is not an event: `exception:<type>` (a
#: modelled error, e.g. `exception:throttlingException`) and `error:<code>`
EXCEPTION, ERROR = "exception:", "error:"


class EventStreamError(SSETooLarge):
    """A message botocore could not read (a bad checksum, a length past the bound): the
    stream is no event stream we can read, a protocol error on that request."""


class EventStreamFramer:
    """`feed(bytes)` returns the messages those bytes completed, as `SSEEvent`s: `event`
    is the message's `:event-type` (or `exception:`/`error:` and its type), `data` its
    payload as text. The same face as `SSEParser`, so the prober reads both alike."""

    __slots__ = ("_need", "_parts", "_size", "comments", "saw_cr")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        #: the length of the message being gathered (None: its first 4 bytes are not in)
        self._need: int | None = None
        #: SSE's format facts, which a binary framing never has (the connect report)
        self.comments = 0
        self.saw_cr = False

    @property
    def pending(self) -> bool:
        """Bytes of an unfinished message are buffered (a cut-off if the stream ends)."""
        return self._size > 0

    def feed(self, data: bytes) -> list[SSEEvent]:
        """The messages whose last byte is in `data` (raises EventStreamError)."""
        if not data:
            return []
        self._parts.append(data)
        self._size += len(data)
        events: list[SSEEvent] = []
        while True:
            if self._need is None:
                if self._size < 4:
                    return events
                head = self._parts[0] if len(self._parts[0]) >= 4 else self._join()
                (self._need,) = struct.unpack_from(">I", head)
                if not _MIN_MESSAGE <= self._need <= MAX_MESSAGE_BYTES:
                    raise EventStreamError(
                        f"an event-stream message of {self._need:,} bytes (a message "
                        f"holds {_MIN_MESSAGE} to {MAX_MESSAGE_BYTES:,})")
            if self._size < self._need:
                return events
            whole = self._join()
            message, rest = whole[:self._need], whole[self._need:]
            self._parts, self._size, self._need = ([rest] if rest else []), len(rest), None
            events.append(_event(message))

    def _join(self) -> bytes:
        joined = b"".join(self._parts)
        self._parts = [joined]
        return joined


def _event(message: bytes) -> SSEEvent:
    """One whole message, checked and decoded by botocore."""
    from botocore.eventstream import EventStreamBuffer, ParserError

    buffer = EventStreamBuffer()
    buffer.add_data(message)
    try:
        parsed = next(buffer)
    except StopIteration:  # the lengths inside disagree with the total
        raise EventStreamError("an event-stream message shorter than its own lengths "
                               "say") from None
    except (ParserError, struct.error, UnicodeDecodeError, KeyError, IndexError) as exc:
        # (KeyError: a header of a type the format has not; struct.error: cut short)
        raise EventStreamError(f"an unreadable event-stream message: "
                               f"{type(exc).__name__}: {str(exc)[:80]}") from None
    headers: dict[str, Any] = parsed.headers
    kind = headers.get(":message-type")
    payload = bytes(parsed.payload).decode("utf-8", errors="replace")
    if kind == "exception":
        return SSEEvent(payload, EXCEPTION + _text(headers.get(":exception-type")))
    if kind == "error":
        message_text = _text(headers.get(":error-message"))
        return SSEEvent(message_text or payload, ERROR + _text(headers.get(":error-code")))
    return SSEEvent(payload, _text(headers.get(":event-type")) or "message")


def _text(value: Any) -> str:
    """A header value as text (a vendor may type a header as it likes), bounded."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return str(value)[:200] if value is not None else ""
