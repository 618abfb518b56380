"""`python -m evalkit.reference.realtime`: the realtime reference endpoint in a process.

Prints its base URL as the first stdout line (the port is the kernel's choice), then
serves until SIGTERM or Ctrl-C. `--set NAME=VALUE` changes a parameter
(`evalkit.reference.realtime.params.RealtimeParams`); `--truth-log FILE` keeps the truth.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

from evalkit.errors import EvalkitError
from evalkit.reference.realtime.params import RealtimeParams
from evalkit.reference.realtime.serve import serve_realtime


def main(argv: list[str] | None = None) -> int:
    """Parse the options and serve."""
    parser = argparse.ArgumentParser(prog="python -m evalkit.reference.realtime")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        metavar="NAME=VALUE")
    parser.add_argument("--truth-log", type=Path, default=None)
    parser.add_argument("--tls-cert", type=Path, default=None)
    parser.add_argument("--tls-key", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        params = RealtimeParams.of(dict(s.split("=", 1) for s in args.sets if "=" in s))
    except EvalkitError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        print(url, flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_realtime(args.host, args.port, params, args.truth_log, args.seed,
                                   ready, (args.tls_cert, args.tls_key)
                                   if args.tls_cert and args.tls_key else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
