"""HTTP/1.1's framing rules, as the prober reads them: data in, data out, no I/O.

The request head as sent, a response head parsed (by httptools: llhttp, in C, strict
about what it accepts), how a body is framed by its head, a chunked body unframed read by
read, and where its end (trailers and all) ends. The transport that uses them is
`evalkit.probe.wire.http11`; the prober's pumped body reader is `evalkit.probe.wire.chunked`. Every
bound is here: a vendor's bytes never make a buffer grow past one of them. Errors are
the peer's protocol errors: a chunked body's in h11's words (a stream's record reads the
same whichever code framed its body), a head's in llhttp's. What h11 accepted and the
RFC lets a client accept is accepted (bare LF line ends, a length beside chunked, any
HTTP/1.x); what it would have misread is refused (a transfer coding other than chunked).
Still refused, where h11 accepted them: an obs-folded header line, two equal
content-length headers, more than `http11.MAX_INTERIM` interim answers.
"""

from __future__ import annotations

import re

import h11
import httpcore
import httptools
import httpx

#: a chunked body's trailers read at most this long
MAX_TRAILERS = 16 * 1024
#: the longest chunk-size line (size and extensions) we wait for: h11 would wait for 16 KiB
MAX_SIZE_LINE = 4096
#: h11's chunk header: 1-20 hex digits, extensions ignored, trailing blanks tolerated
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*")
_EOF = ("peer closed connection without sending complete message body "
        "(incomplete chunked read)")
_LINE_END = re.compile(rb"\r?\n")
#: an HTTP field name (RFC 9110 5.6.2: a token)
TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: a field value may hold any byte but the control characters (HTAB allowed)
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
#: a header value evalkit itself sends: printable ASCII and HTAB (httpx encodes values as
#: ASCII, so anything else would fail as the request is sent, not when it was given)
SENDABLE = re.compile(r"[\t\x20-\x7e]*")


def request_head(request: httpx.Request, chunked: bool = False) -> bytes:
    """The request line and headers, as bytes on the wire.

    A header name that is no token, or a value with a control character (a CR or LF
    would start a header of its own), is refused before anything is sent: the message
    names the header, never its value, which may be a credential."""
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), request.url.raw_path)]
    for name, value in request.headers.raw:
        if TOKEN.fullmatch(name) is None or _CONTROL.search(value) is not None:
            raise httpx.LocalProtocolError(
                f"illegal header {name[:40]!r}: a name must be a token and a value must "
                "hold no control character", request=request)
        if not chunked or name.lower() != b"content-length":
            lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    return b"".join(lines)


class _Head:
    """httptools' callbacks for one response head: what it said."""

    __slots__ = ("complete", "headers", "reason")

    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.reason = b""
        self.complete = False

    def on_status(self, status: bytes) -> None:
        self.reason = status  # once: the head is fed whole

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value.strip(b" \t")))  # llhttp keeps trailing blanks

    def on_headers_complete(self) -> None:
        self.complete = True


def parse_head(raw: bytes) -> tuple[int, bytes, list[tuple[bytes, bytes]], bool, str]:
    """(status, reason, headers, keep-alive, HTTP version) of one whole response head
    (through its blank line). Keep-alive is only what the head allows: a body read to
    the close ends the connection too (`Body`)."""
    head = _Head()
    parser = httptools.HttpResponseParser(head)
    # what h11 accepted too: bare LF line ends (RFC 9112 2.2: a recipient MAY), a length
    # beside chunked (transfer-encoding wins, `body_framing`), any HTTP/1.x version
    parser.set_dangerous_leniencies(lenient_optional_cr_before_lf=True,
                                    lenient_chunked_length=True, lenient_version=True)
    try:
        parser.feed_data(raw)
    except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
        if head.complete and parser.get_status_code() == 101:  # llhttp stops at any 101
            raise httpcore.RemoteProtocolError("the server switched protocols unasked "
                                               "(101)") from None
        raise httpcore.RemoteProtocolError(f"illegal response head: {exc}") from None
    # llhttp's should_keep_alive() reads False once a bodiless message is complete: so
    # as h11 does, HTTP/1.1 keeps the connection unless either side says close, 1.0 never
    version = parser.get_http_version()
    keep = version == "1.1" and not any(
        name.lower() == b"connection" and b"close" in value.lower()
        for name, value in head.headers)
    return parser.get_status_code(), head.reason, head.headers, keep, version


def body_framing(method: str, status: int, headers: list[tuple[bytes, bytes]]
                 ) -> tuple[bool, int | None]:
    """(chunked, length): how the body is framed (RFC 9112 6.3). A length of None with
    chunked False: read to the server's close. Raises for a framing that cannot be
    trusted (two different lengths, a transfer coding other than chunked)."""
    if method == "HEAD" or status in (204, 304) or status < 200:
        return False, 0
    codings: list[bytes] = []
    lengths: set[bytes] = set()
    for name, value in headers:
        low = name.lower()
        if low == b"transfer-encoding":
            codings += [c.strip().lower() for c in value.split(b",")]
        elif low == b"content-length":
            lengths |= {v.strip() for v in value.split(b",")}
    if codings:
        if codings != [b"chunked"]:  # what h11 reads: gzip, chunked would be gzip bytes
            raise httpcore.RemoteProtocolError(
                f"unsupported transfer-encoding {b', '.join(codings)[:60]!r}")
        return True, None
    if not lengths:
        return False, None
    if len(lengths) > 1 or not all(v.isdigit() and len(v) <= 18 for v in lengths):
        raise httpcore.RemoteProtocolError(f"bad content-length {sorted(lengths)[:2]!r}")
    return False, int(lengths.pop())


class ChunkedDecoder:
    """HTTP/1.1 chunked framing (RFC 9112 7.1) fed socket reads, bounded and strict.

    `feed` returns the chunk data each read completed, piece by piece (one piece per
    chunk, so one read of two token chunks gives the SSE parser two one-event reads).
    When the last chunk's size line (`0`) arrives, `tail` holds everything from it on,
    for h11 to read the trailers and the end. Data is never buffered here: only a size
    line cut between reads (at most `MAX_SIZE_LINE` bytes) or the CRLF after a chunk.
    A huge chunk size is only a long chunk, its data passed on as it arrives.

        >>> d = ChunkedDecoder()
        >>> d.feed(b"5\\r\\nhello\\r\\n3\\r\\n ab"), d.feed(b"\\r\\n0\\r\\n\\r\\n"), d.tail
        ([b'hello', b' ab'], [], b'0\\r\\n\\r\\n')
    """

    __slots__ = ("_buf", "_footer", "_left", "error", "tail")

    def __init__(self) -> None:
        self._buf = b""  # the start of a size line cut off by the end of a read
        self._left = 0  # data bytes still due in the current chunk
        self._footer = b""  # what is still due of the CRLF after a chunk's data
        #: bad framing found after good data in one read: raised at the next feed, so
        #: the data before it is read first (as h11 does: it frames chunk by chunk)
        self.error: h11.RemoteProtocolError | None = None
        #: from the last chunk's size line on (None: not there yet)
        self.tail: bytes | None = None

    def feed(self, data: bytes) -> list[bytes]:
        """The chunk data in this read; raises h11's RemoteProtocolError on bad framing."""
        if self.error is not None:
            raise self.error
        if self.tail is not None:
            self.tail += data
            return []
        if not (self._buf or self._left or self._footer):
            # the common read: one whole chunk, nothing left over from the last read
            i = data.find(b"\r\n", 0, MAX_SIZE_LINE)
            if i > 0:
                m = _SIZE_LINE.fullmatch(data, 0, i)
                if m is not None:
                    end = i + 2 + int(m[1], 16)
                    if end + 2 == len(data) and data[end:] == b"\r\n" and end > i + 2:
                        return [data[i + 2:end]]
        out: list[bytes] = []
        try:
            self._general(self._buf + data if self._buf else data, out)
        except h11.RemoteProtocolError as exc:
            if not out:
                raise
            self.error = exc
        return out

    def _general(self, buf: bytes, out: list[bytes]) -> None:
        pos, end = 0, len(buf)
        while pos < end:
            if self._footer:
                got = buf[pos:pos + len(self._footer)]
                if got != self._footer[:len(got)]:
                    raise h11.RemoteProtocolError(
                        f"malformed chunk footer: {got!r} (expected {self._footer!r})")
                self._footer = self._footer[len(got):]
                pos += len(got)
            elif self._left:
                piece = buf[pos:pos + self._left]
                out.append(piece)
                self._left -= len(piece)
                pos += len(piece)
                if not self._left:
                    self._footer = b"\r\n"
            else:
                i = buf.find(b"\r\n", pos, pos + MAX_SIZE_LINE)
                if i < 0:
                    if end - pos >= MAX_SIZE_LINE:
                        raise h11.RemoteProtocolError(
                            f"illegal chunk header: {buf[pos:pos + 40]!r}... (no line end "
                            f"in {MAX_SIZE_LINE} bytes)")
                    break  # the rest of the size line is in the next read
                m = _SIZE_LINE.fullmatch(buf, pos, i)
                if m is None:
                    raise h11.RemoteProtocolError(
                        f"illegal chunk header: {buf[pos:min(i, pos + 80)]!r}")
                size = int(m[1], 16)
                if size == 0:
                    self.tail = buf[pos:]
                    return
                self._left = size
                pos = i + 2
        self._buf = buf[pos:]


def chunked_end(tail: bytes) -> int | None:
    """Where a chunked body's end ends: `tail` is from its last chunk's `0` line on (the
    line, the trailers, the blank line, whatever came after). None: not all of it yet.
    Raises for a trailer that is no header line, or trailers past `MAX_TRAILERS`."""
    first = _LINE_END.search(tail, 0, MAX_SIZE_LINE + 2)
    if first is None:  # (`ChunkedDecoder` hands over a whole line: only if misused)
        if len(tail) > MAX_SIZE_LINE:
            raise httpcore.RemoteProtocolError("the last chunk's line does not end")
        return None
    pos = first.end()
    while True:
        line = _LINE_END.search(tail, pos, pos + MAX_TRAILERS)
        if line is None:
            if len(tail) - first.end() > MAX_TRAILERS:
                raise httpcore.RemoteProtocolError(f"trailers longer than {MAX_TRAILERS} bytes")
            return None
        if line.start() == pos:  # the blank line: the end
            return line.end()
        name, colon, value = tail[pos:line.start()].partition(b":")
        if not colon or TOKEN.fullmatch(name) is None or _CONTROL.search(value):
            raise httpcore.RemoteProtocolError(
                f"illegal header line in the trailers: {tail[pos:line.start()][:60]!r}")
        pos = line.end()
