"""OTLP export from the command line: `probe --otlp-endpoint URL` sends the run once it is
written, and `evalkit export otlp RUN_DIR` sends a run already on disk (again after a
collector was down, or an imported run)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from evalkit.cli.options import user_errors
from evalkit.errors import EvalkitError, UsageError
from evalkit.sanitize import clean

if TYPE_CHECKING:
    from evalkit.rundir.otlp.send import ExportOutcome, OtlpTarget

F = TypeVar("F", bound=Callable[..., Any])

ENDPOINT_HELP = (
    "Send the run's trace (a span per request, by the OpenTelemetry GenAI conventions, under "
    "spans for its levels and phases) and its figures as metrics to this OTLP/HTTP collector "
    "once the run is written, e.g. http://localhost:4318. Default: "
    "$OTEL_EXPORTER_OTLP_ENDPOINT (and the other OTEL_EXPORTER_OTLP_* variables: headers "
    "such as an API key only from OTEL_EXPORTER_OTLP_HEADERS). Nothing is sent while a "
    "stream is open; a collector that is down or slow costs a warning, never a figure or "
    "a record.")


def otlp_option(func: F) -> F:
    """--otlp-endpoint URL, shared by `probe` and `export`."""
    return click.option("--otlp-endpoint", "otlp_endpoint", metavar="URL",
                        help=ENDPOINT_HELP)(func)


def resolve(endpoint: str | None, *, probing: bool = True) -> OtlpTarget | None:
    """Where to send, from the flag and the environment; None when nothing asks. A bad
    endpoint is a usage error now, before anything is measured, and so is a missing SDK
    when the flag asks for an export; when only the environment does (a variable set for
    other programs), a probe says it will send nothing and goes on."""
    from evalkit.rundir.otlp.send import otlp_target, require_sdk

    target = otlp_target(endpoint, os.environ)
    if target is None:
        return None
    try:
        require_sdk()
    except UsageError as exc:
        if endpoint or not probing:
            raise
        click.echo(f"warning: OTEL_EXPORTER_OTLP_* is set, but nothing will be sent: {exc}",
                   err=True)
        return None
    return target


def say(outcome: ExportOutcome, run_dir: Path) -> None:
    """One line for a delivery, a warning naming what was lost for a failure."""
    if outcome.problem is None:
        click.echo(f"otlp: {outcome.spans_sent:,} spans and {outcome.metric_points:,} metric "
                   f"points sent to {outcome.collector} ({outcome.seconds:.1f} s)")
        return
    click.echo(f"warning: otlp: {outcome.collector}: {outcome.problem} "
               f"({outcome.seconds:.1f} s). Delivered "
               f"{outcome.spans_sent:,} of {outcome.spans:,} spans, "
               f"{'the' if outcome.metrics_sent else 'no'} metrics. The run is complete "
               f"and unchanged; `evalkit export otlp {clean(str(run_dir), 300)} "
               "--otlp-endpoint URL` sends it "
               "again.", err=True)


def export_after_run(run_dir: Path, target: OtlpTarget | None) -> None:
    """The probe's export, after its run directory is written: whatever goes wrong is a
    warning, never the probe's failure (its exit code is the run's)."""
    from evalkit.rundir.otlp.send import export_run
    from evalkit.rundir.store import RUN_FILE

    if target is None or not (run_dir / RUN_FILE).is_file():
        return
    try:
        say(export_run(run_dir, target), run_dir)
    except EvalkitError as exc:
        click.echo(f"warning: otlp: nothing sent: {exc}", err=True)
    except KeyboardInterrupt:  # a second Ctrl-C while waiting on the collector
        click.echo(f"warning: otlp: the export was interrupted; the run is complete; "
                   f"`evalkit export otlp {clean(str(run_dir), 300)}` sends it", err=True)


@click.group("export")
def export() -> None:
    """Send a run directory written before to another system (`export otlp`)."""


@export.command("otlp")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@otlp_option
@user_errors
def export_otlp(run_dir: str, otlp_endpoint: str | None) -> None:
    """Send a run directory to an OTLP/HTTP collector: its trace and its metrics.

    The run is read as `report` reads it (bounded, checked); one span per request, named
    and attributed by the OpenTelemetry GenAI conventions (gen_ai.provider.name,
    gen_ai.request.model, gen_ai.usage.*, gen_ai.response.finish_reasons,
    gen_ai.response.time_to_first_chunk: evalkit's TTFT), with the first chunk, stalls and
    the last chunk as events and every chunk's arrival as an attribute, under spans for
    its levels, phases and the run; the GenAI client histograms and the summary's figures
    as metrics. The same run sent twice is the same trace (its ids derive from the run).

    Exit 0 when everything was delivered, 1 when the collector failed (what reached it is
    said), 2 for bad input.

    \b
    Examples:
      evalkit export otlp out/acme --otlp-endpoint http://localhost:4318
      OTEL_EXPORTER_OTLP_ENDPOINT=https://otlp.example.com \\
      OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer%20...' evalkit export otlp out/acme
    """
    from evalkit.rundir.otlp.send import export_run

    target = resolve(otlp_endpoint, probing=False)
    if target is None:
        raise UsageError("no collector named: give --otlp-endpoint URL or set "
                         "OTEL_EXPORTER_OTLP_ENDPOINT")
    outcome = export_run(Path(run_dir), target)
    say(outcome, Path(run_dir))
    if outcome.problem is not None:
        sys.exit(1)
