"""Benchmark: what one TLS read costs the prober's reader callback, against a plain one.

A stream's every chunk is one socket read, stamped and handed on inside the reader
callback (`KernelStampedStream._on_readable`); over HTTPS the read is a TLS record too,
decrypted there after its stamp. This counts the instructions of that callback per read
with valgrind's callgrind (`apt-get install valgrind`): repeatable on a loaded machine,
where CPU times are not. A socketpair carries token chunks of the reference endpoint's
shape; the TLS records are made beforehand by a server-side `ssl.SSLObject` in the same
process, so only the reader's work is counted: the run with the reads minus the same
run without them, over `reads` reads, for plain and TLS. It prints each, their
difference, and the CPU time per read of the same loop without valgrind (noisy on a
shared machine; instructions are the figure to compare). The children run one thread
(OpenBLAS's idle workers spin, and callgrind counts every thread).

Run: `.venv/bin/python bench/bench_tls_read.py [reads]`, default 2000. Skipped (exit 0)
without valgrind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_floor import chunk  # this folder: run as bench/bench_*.py
from bench_hotpath import throwaway_certificate
from truth import machine

from evalkit.probe.wire.kernel_stream import KernelStampedStream


def reads(mode: str, n: int, loop_them: bool, cert: Path, key: Path) -> float:
    """Set a stream up (TLS handshaken over memory BIOs for `tls`), make `n` chunks' bytes,
    and (`loop_them`) send and read each: the CPU seconds of the reads."""
    loop = asyncio.new_event_loop()
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    stream = KernelStampedStream(ours, loop)
    body = chunk()
    records = [body] * n
    if mode == "tls":
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(cert, key)
        s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        srv = server.wrap_bio(s_in, s_out, server_side=True)
        stream._tls_in, stream._tls_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        client = ssl.create_default_context(cafile=str(cert))
        stream._tls = client.wrap_bio(stream._tls_in, stream._tls_out,
                                      server_hostname="localhost")
        stream._tls_read = stream._tls._sslobj.read  # as start_tls sets it
        for _ in range(10):  # the handshake, both ends in this process
            for end in (stream._tls, srv):
                with contextlib.suppress(ssl.SSLWantReadError):
                    end.do_handshake()
            s_in.write(stream._tls_out.read())
            stream._tls_in.write(s_out.read())
        with contextlib.suppress(ssl.SSLWantReadError):
            stream._tls.read(65536)  # the server's session tickets
        records = []
        for _ in range(n):
            srv.write(body)
            records.append(s_out.read())
    got = [0]

    def sink(_at: int, data: bytes, _delay: int | None) -> bool:
        got[0] += len(data)
        return False

    stream._sink = sink
    cpu = time.process_time()
    if loop_them:
        send, read = theirs.send, stream._on_readable
        for record in records:
            send(record)
            read()
        assert got[0] == n * len(body), (got[0], n * len(body))
    cpu = time.process_time() - cpu
    ours.close()
    theirs.close()
    loop.close()
    return cpu


def instructions(mode: str, n: int, loop_them: bool, cert: Path, key: Path) -> int:
    """callgrind's instruction count of one child run."""
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, __file__, "--child", mode, str(n),
                          "1" if loop_them else "0", str(cert), str(key)],
                         capture_output=True, text=True, timeout=1800,
                         # one thread: callgrind counts every thread's, and OpenBLAS's idle
                         # workers spin (thousands of instructions a read, by chance)
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1",
                              "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise SystemExit(f"callgrind said: {out.stderr[-500:]}")
    return int(found.group(1))


def main(argv: list[str]) -> int:
    """Plain and TLS reads, instructions each (callgrind) and CPU time each."""
    if argv[:1] == ["--child"]:
        mode, n, loop_them, cert, key = argv[1:6]
        reads(mode, int(n), loop_them == "1", Path(cert), Path(key))
        return 0
    n = int(argv[0]) if argv else 2000
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = throwaway_certificate(Path(tmp))
        cpu = {mode: min(reads(mode, 20_000, True, cert, key) for _ in range(3)) / 20_000
               for mode in ("plain", "tls")}
        print(f"CPU per read (best of 3 x 20,000, {len(chunk())}-byte chunks): plain "
              f"{cpu['plain'] * 1e6:.2f} µs, TLS {cpu['tls'] * 1e6:.2f} µs")
        if shutil.which("valgrind") is None:
            print("valgrind is not installed (apt-get install valgrind): instruction counts "
                  "skipped")
            return 0
        per_read = {mode: (instructions(mode, n, True, cert, key)
                           - instructions(mode, n, False, cert, key)) / n
                    for mode in ("plain", "tls")}
    print(f"instructions per read of the reader callback (callgrind, {n} reads): plain "
          f"{per_read['plain']:,.0f}, TLS {per_read['tls']:,.0f}, TLS adds "
          f"{per_read['tls'] - per_read['plain']:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
