"""The `evalkit` command: a thin shell over the library.

Each command parses its options, calls one library function, and prints where the
result went. `EvalkitError`s become `Error: …` with exit code 2; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from evalkit import __version__
from evalkit.errors import EvalkitError

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Turn an EvalkitError into a one-line message and exit code 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except EvalkitError as exc:
            click.echo(f"Error: {exc}", err=True)
            for problem in getattr(exc, "problems", []) or []:
                click.echo(f"  {problem}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="evalkit")
def cli() -> None:
    """Measure an inference vendor's streaming endpoint, read its capacity questionnaire,
    and reconcile the two in a PDF scorecard.

    \b
    Start here:
      evalkit demo                 the whole job on the built-in reference endpoint
      evalkit serve-reference      a local OpenAI-compatible endpoint to try things on
    """


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="out/demo",
              show_default=True, help="Where the demo writes its runs and scorecards.")
@user_errors
def demo(out_dir: str) -> None:
    """Run the whole job offline on the built-in reference endpoint.

    Starts the reference endpoint on a free port, probes it, pairs the runs with the
    sample questionnaires and writes one scorecard per sample vendor. No network.
    """
    from pathlib import Path

    from evalkit.demo import run_demo

    written = run_demo(Path(out_dir))
    if not written:
        click.echo("evalkit demo: nothing to run yet (the probe and report are not built); "
                   "wrote nothing.")
    for path in written:
        click.echo(str(path))


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":  # pragma: no cover
    main()
