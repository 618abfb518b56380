"""A Server-Sent Events parser that follows the WHATWG spec, fed bytes as they arrive.

Pure and incremental: the prober stamps each read with the clock *before* handing the
bytes here, so parsing cost never shows up in a measured time. Handles LF, CR and CRLF
line ends (even a CRLF split across two reads), comments (`: ping` keep-alives are
counted, not returned), multi-line `data:` fields, a leading BOM, and discards a final
event that was cut off before its blank line, as the spec requires.

    >>> p = SSEParser()
    >>> [e.data for e in p.feed(b"data: a\\r\\ndata: b\\r\\n\\r\\n: ping\\n\\n")]
    ['a\\nb']
    >>> p.comments
    1
"""

from __future__ import annotations

from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its type (default "message"), data and last event id."""

    data: str
    event: str = "message"
    id: str = ""


class SSEParser:
    """Incremental SSE parser: `feed(bytes)` returns the events those bytes completed."""

    __slots__ = ("_buf", "_data", "_event", "_id", "_pending_cr", "_started", "comments",
                 "retry_ms", "saw_cr")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []
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
        if self._pending_cr:
            # the previous read ended in CR: a LF now is the rest of that CRLF
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self.saw_cr = True
            self._pending_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        if not self._started:
            if len(buf) < len(_BOM) and _BOM.startswith(buf):
                self._buf = buf
                return []
            self._started = True
            if buf.startswith(_BOM):
                buf = buf[len(_BOM):]
        if b"\n" not in buf:
            self._buf = buf
            return []
        lines = buf.split(b"\n")
        self._buf = lines.pop()
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
        self._data = []
        self._event = b""
        return []

    @property
    def pending(self) -> bool:
        """True when bytes of an unfinished event are buffered (a cut-off if the stream ends)."""
        return bool(self._buf or self._data or self._event)

    def _line(self, line: bytes) -> None:
        if line[:1] == b":":
            self.comments += 1
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
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
        self._data, self._event = [], b""
        if not data:
            return None
        text = b"\n".join(data).decode("utf-8", errors="replace")
        name = event.decode("utf-8", errors="replace") if event else "message"
        return SSEEvent(text, name, self._id.decode("utf-8", errors="replace"))
