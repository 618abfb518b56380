"""The wire: the socket and its clock (stamped sends, kernel-stamped reads, our TLS on
them), the httpx transport over them, HTTP/1.1 framed here, chunked bodies pumped in the
reader callback, SSE and AWS's event-stream framing (botocore reads each message), a
reused connection's closes and the vendor's short replies. The
bottom room: it imports no other room of the probe."""
