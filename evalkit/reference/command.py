"""The `evalkit serve-reference` command, built from the profile schema.

One `--param-name VALUE` option per parameter in `profiles.json`, so `--help` explains
every parameter (meaning, unit, default) and every profile (story, what it changes).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from evalkit.reference.params import DEFAULT_PROFILE, load_profiles, param_specs

_TYPES: dict[type, Any] = {bool: click.BOOL, int: click.INT, float: click.FLOAT,
                           str: click.STRING}


def _shown(value: Any) -> str:
    """A default as --help prints it (a name in quotes, so an empty one shows)."""
    return f'"{value}"' if isinstance(value, str) else str(value)


def _epilog() -> str:
    specs = param_specs()
    lines = ["\b", "Profiles (--profile):"]
    for name, prof in load_profiles().items():
        changed = [f"{k}={_shown(v)}" for k, v in prof.params.items()
                   if v != specs[k].default]
        lines.append(f"  {name:<10} {prof.story}")
        if changed:
            lines.append(f"  {'':<10} sets: {', '.join(changed)}")
    lines += ["", "\b", "Examples:", "  evalkit serve-reference --profile queueing --max-batch 8 "
              "--truth-log truth.jsonl",
              "  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \\",
              "    -addext subjectAltName=DNS:localhost -keyout key.pem -out cert.pem",
              "  evalkit serve-reference --tls-cert cert.pem --tls-key key.pem   "
              "# https://127.0.0.1:8000/v1",
              "  SSL_CERT_FILE=cert.pem evalkit probe --base-url https://localhost:8000/v1 "
              "--model evalkit-reference ..."]
    return "\n".join(lines)


def _run(host: str, port: int, profile: str, truth_log: str | None, seed: int,
         sets: tuple[str, ...], tls_cert: str | None, tls_key: str | None,
         **params: Any) -> None:
    from evalkit.errors import UsageError
    from evalkit.reference.server import serve

    if (tls_cert is None) != (tls_key is None):
        raise UsageError("HTTPS needs both --tls-cert and --tls-key")
    overrides: dict[str, Any] = {}
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"--set expects PARAM=VALUE, got {item!r}")
        overrides[key.strip().replace("-", "_")] = value.strip()
    overrides.update({k: v for k, v in params.items() if v is not None})

    def announce(url: str) -> None:
        click.echo(f"evalkit reference endpoint ({profile}): {url}  (Ctrl-C to stop)")

    serve(host, port, profile, overrides, Path(truth_log) if truth_log else None, seed,
          announce=announce, tls=(tls_cert, tls_key) if tls_cert and tls_key else None)


def build_command(user_errors: Callable[[Callable[..., None]], Callable[..., None]]
                  ) -> click.Command:
    """The click command; `user_errors` is the CLI's EvalkitError handler."""
    params: list[click.Parameter] = [
        click.Option(["--host"], default="127.0.0.1", show_default=True,
                     help="Interface to listen on (loopback by default)."),
        click.Option(["--port"], type=int, default=8000, show_default=True,
                     help="TCP port; 0 picks a free one."),
        click.Option(["--profile"], type=click.Choice(list(load_profiles())),
                     default=DEFAULT_PROFILE, show_default=True,
                     help="Engine behaviour to start from (see Profiles below)."),
        click.Option(["--truth-log"], type=click.Path(dir_okay=False),
                     help="Append one JSON line per request with the server's own timings "
                          "(perf_counter_ns): received, queued, admitted, each write "
                          "(actual and scheduled), end, outcome, faults."),
        click.Option(["--seed"], type=int, default=0, show_default=True,
                     help="Same seed and request order, same behaviour."),
        click.Option(["--set", "sets"], multiple=True, metavar="PARAM=VALUE",
                     help="Override any parameter by name (repeatable)."),
        click.Option(["--tls-cert"], type=click.Path(dir_okay=False), metavar="PEM",
                     help="Serve HTTPS with this certificate (with --tls-key), as every "
                          "vendor does, to measure the client's TLS path against the "
                          "truth log. The certificate must name the host clients use."),
        click.Option(["--tls-key"], type=click.Path(dir_okay=False), metavar="PEM",
                     help="The certificate's private key (PEM, unencrypted)."),
    ]
    for spec in param_specs().values():
        flag = "--" + spec.name.replace("_", "-")
        params.append(click.Option(
            [flag, spec.name], type=_TYPES[type(spec.default)], default=None,
            metavar=spec.unit.upper().replace(" ", "_").replace("/", "_PER_"),
            help=f"{spec.help} [{spec.unit}; default {_shown(spec.default)}]"))
    return click.Command(
        "serve-reference", callback=user_errors(_run), params=params, epilog=_epilog(),
        help="Serve the built-in reference endpoint: a local OpenAI-compatible server "
             "(GET /v1/models, POST /v1/chat/completions and /v1/completions, streaming "
             "or not) that models a continuous-batching engine with known, logged timing.\n\n"
             "Start from a --profile and change any parameter with its own option or "
             "--set. Prompt tokens are counted with o200k_base; each generated token is "
             "one short word, and the words follow from the prompt (the same prompt, the "
             "same answer; logprobs when asked). Prints the base URL, then serves until "
             "Ctrl-C.")
