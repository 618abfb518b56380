"""A Server-Sent Events parser that follows the WHATWG spec, fed bytes as they arrive.

Pure and incremental: the prober stamps each read with the clock *before* handing the
bytes here, so parsing cost never shows up in a measured time. Handles LF, CR and CRLF
line ends (even a CRLF split across two reads), comments (`: ping` keep-alives are
counted, not returned), multi-line `data:` fields, a leading BOM, and discards a final
event that was cut off before its blank line, as the spec requires.

Bounded: a vendor can send one endless line or one endless event. A partial line is kept
as a list of reads (joined once, when its end arrives: linear time, where re-joining the
buffer on every read was quadratic), and a line or an event's data beyond `max_bytes`
raises `SSETooLarge`, which the prober records as a protocol error.

    >>> p = SSEParser()
    >>> [e.data for e in p.feed(b"data: a\r\ndata: b\r\n\r\n: ping\n\n")]
    ['a\nb']
    >>> p.comments
    1
"""

from __future__ import annotations

from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"
#: the longest line, and the most data one event may carry (1 MiB: a token is bytes)
MAX_EVENT_BYTES = 1 << 20


class SSETooLarge(ValueError):
    """A line or an event grew past the parser's bound: the stream is not SSE we can read."""


class SSEEvent(NamedTuple):
    """One dispatched event: its type (default "message"), data and last event id.

    A named tuple: one is made per event, at half a frozen dataclass's cost."""

    data: str
    event: str = "message"
    id: str = ""


class SSEParser:
    """Incremental SSE parser: `feed(bytes)` returns the events those bytes completed."""

    __slots__ = ("_buf", "_data", "_data_bytes", "_event", "_id", "_parts", "_parts_bytes",
                 "_pending_cr", "_started", "comments", "max_bytes", "retry_ms", "saw_cr")

    def __init__(self, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buf = b""
        #: reads of a line whose end has not arrived yet (joined when it does)
        self._parts: list[bytes] = []
        self._parts_bytes = 0
        self._data: list[bytes] = []
        self._data_bytes = 0
        self._event = b""
        self._id = b""
        self._pending_cr = False
        self._started = False
        #: comment lines seen (keep-alives such as `: ping`); never events
        self.comments = 0
        #: the last valid `retry:` field, if any
        self.retry_ms: int | None = None
        #: CR or CRLF line ends were seen (a format fact the connect phase reports)
        self.saw_cr = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse the bytes of one read; return the events whose blank line arrived."""
        if not chunk:
            return []
        if (chunk.count(b"\n") == 2 and chunk[:6] == b"data: " and chunk[-2:] == b"\n\n"
                and self._started and not (self._buf or self._parts or self._data
                                           or self._event or self._pending_cr)
                and len(chunk) <= self.max_bytes and chunk.find(b"\r") < 0):
            # the common read: one whole event of one data line, nothing left over from
            # the last read. The same event the general path makes, without its line loop
            ident = self._id.decode("utf-8", errors="replace") if self._id else ""
            return [SSEEvent(chunk[6:-2].decode("utf-8", errors="replace"), "message", ident)]
        if self._pending_cr:
            # the previous read ended in CR: a LF now is the rest of that CRLF
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:  # nothing else: no partial line begins here
                    return []
        if b"\r" in chunk:
            self.saw_cr = True
            self._pending_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not self._started:
            buf = self._buf + chunk
            if len(buf) < len(_BOM) and _BOM.startswith(buf):
                self._buf = buf
                return []
            self._started = True
            self._buf = b""
            chunk = buf[len(_BOM):] if buf.startswith(_BOM) else buf
        if b"\n" not in chunk:
            self._parts.append(chunk)
            self._parts_bytes += len(chunk)
            if self._parts_bytes + len(self._buf) > self.max_bytes:
                raise SSETooLarge(f"an SSE line longer than {self.max_bytes:,} bytes")
            return []
        if self._parts:
            chunk = self._buf + b"".join(self._parts) + chunk
            self._parts, self._parts_bytes, self._buf = [], 0, b""
        elif self._buf:
            chunk = self._buf + chunk
        lines = chunk.split(b"\n")
        self._buf = lines.pop()
        if len(self._buf) > self.max_bytes:
            raise SSETooLarge(f"an SSE line longer than {self.max_bytes:,} bytes")
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                event = self._dispatch()
                if event is not None:
                    events.append(event)
            else:
                self._line(line)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a final event without its blank line is discarded (per spec)."""
        self._buf = b""
        self._parts, self._parts_bytes = [], 0
        self._data, self._data_bytes = [], 0
        self._event = b""
        return []

    @property
    def pending(self) -> bool:
        """True when bytes of an unfinished event are buffered (a cut-off if the stream ends)."""
        return bool(self._buf or self._parts or self._data or self._event)

    def _line(self, line: bytes) -> None:
        if line[:1] == b":":
            self.comments += 1
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            self._data_bytes += len(value) + 1
            if self._data_bytes > self.max_bytes:
                raise SSETooLarge(f"an SSE event carrying over {self.max_bytes:,} bytes of data")
        elif name == b"event":
            self._event = value
        elif name == b"id":
            if b"\x00" not in value:
                self._id = value
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value)
        # any other field name is ignored, as the spec says

    def _dispatch(self) -> SSEEvent | None:
        data, event = self._data, self._event
        self._data, self._data_bytes, self._event = [], 0, b""
        if not data:
            return None
        text = b"\n".join(data).decode("utf-8", errors="replace")
        name = event.decode("utf-8", errors="replace") if event else "message"
        return SSEEvent(text, name, self._id.decode("utf-8", errors="replace"))
