"""`python -m evalkit.reference`: the subprocess that `ReferenceServer` starts.

Prints the base URL as its first stdout line (the port is chosen by the kernel), then
serves until SIGTERM. Humans use `evalkit serve-reference` instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evalkit.errors import EvalkitError
from evalkit.reference import server


def main(argv: list[str] | None = None) -> int:
    """Parse the few options ReferenceServer passes and serve."""
    parser = argparse.ArgumentParser(prog="python -m evalkit.reference")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--profile", default="gpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overrides", default="{}", help="JSON object of parameter values")
    parser.add_argument("--truth-log", type=Path, default=None)
    parser.add_argument("--tls-cert", type=Path, default=None)
    parser.add_argument("--tls-key", type=Path, default=None)
    parser.add_argument("--asyncio-tls", action="store_true",
                        help="asyncio's SSL transport, not TLS on the stamped socket")
    args = parser.parse_args(argv)
    server.LEAN_TLS = not args.asyncio_tls
    try:
        server.serve(args.host, args.port, args.profile, json.loads(args.overrides),
                     args.truth_log, args.seed, announce=lambda url: print(url, flush=True),
                     tls=(args.tls_cert, args.tls_key) if args.tls_cert and args.tls_key
                     else None)
    except EvalkitError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
