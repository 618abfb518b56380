"""`evalkit runs`: the catalog of evaluations, listed, filtered and shown one by one."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from evalkit.cli.options import catalog_option, user_errors
from evalkit.errors import UsageError
from evalkit.sanitize import clean

if TYPE_CHECKING:
    from evalkit.questionnaire.model import Questionnaire
    from evalkit.review.ourpanel import OurPanel


def parse_since(text: str | None) -> str | None:
    """--since DATE (2026-09-01, or a full ISO time) as the catalog's UTC text."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since takes a date, e.g. 2026-09-01 (got {text[:40]!r})"
                         ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="seconds")


def row_json(row: Any) -> dict[str, Any]:
    """One catalog entry as `runs --json` gives it, with its state checked now."""
    from evalkit.catalog.entries import state
    from evalkit.catalog.voice import run_kind

    e = row.entry
    now, why = state(e)
    return {"id": row.id, "vendor": e.vendor, "model": e.model, "endpoint": e.endpoint,
            "path": e.path, "kind": e.kind,
            # a report's figures are its statuses: they do not say what its run measured
            "run_kind": run_kind(e.figures) if e.kind != "report" else None,
            "started": e.started, "ended": e.ended,
            "status": e.status, "validity": e.validity, "state": now,
            "state_reason": why or None, "suite_version": e.suite_version,
            "tool_version": e.tool_version, "figures": dict(e.figures),
            "source": e.source, "registered": row.registered}


def _cell(value: Any, width: int) -> str:
    text = clean(str(value), width) if value not in (None, "") else "-"
    return text[:width].ljust(width)


@click.group(invoke_without_command=True)
@click.option("--vendor", help="Only this vendor's entries.")
@click.option("--model", help="Only this model's entries.")
@click.option("--since", metavar="DATE", help="Only runs started on or after DATE "
                                              "(2026-09-01, or an ISO time; UTC).")
@click.option("--kind", type=click.Choice(["probe", "import", "report", "panel"]),
              help="Only entries of this kind.")
@click.option("--json", "as_json", is_flag=True,
              help="A JSON list of objects (vendor, model, path, kind, started, validity, "
                   "state, ...) instead of the table.")
@catalog_option
@click.pass_context
@user_errors
def runs(ctx: click.Context, vendor: str | None, model: str | None, since: str | None,
         kind: str | None, as_json: bool, catalog: str | None) -> None:
    """List the catalog of evaluations: every probe, import, report and panel sample.

    A voice run (`probe --api openai-realtime|gemini-live`) has a second line with its
    calls: the most concurrent calls within the voice SLO, the judged time to first
    audio p50 at the lowest judged level and what degraded first (a voice run has no
    text streams: no TTFT, no concurrent streams). `--json` gives each entry's
    `run_kind` (voice | text) and its figures.

    Each entry's files are checked as it is listed: `missing` when its directory (or a
    file) has gone, `edited` when a file changed since it was registered. Such entries
    are shown, never dropped.

    \b
    Examples:
      evalkit runs --vendor Acme --since 2026-09-01
      evalkit runs --json | jq '.[] | select(.state != "present")'
      evalkit runs show 12
    """
    ctx.ensure_object(dict)
    ctx.obj["catalog"] = catalog
    if ctx.invoked_subcommand is not None:
        return
    from evalkit.catalog.paths import catalog_path
    from evalkit.catalog.store import Catalog
    from evalkit.catalog.voice import VoiceHeadline

    rows = Catalog(catalog_path(catalog)).rows(vendor=vendor, model=model,
                                               since=parse_since(since), kind=kind)
    listed = [row_json(r) for r in rows]
    if as_json:
        click.echo(json.dumps(listed, indent=2))
        return
    if not listed:
        click.echo("no entries" + (" match" if vendor or model or since or kind else ""))
        return
    head = (f"{'id':>5}  {'kind':<6}  {'started':<25}  {'vendor':<16}  {'model':<20}  "
            f"{'validity':<8}  {'state':<7}  path")
    click.echo(head)
    for r in listed:
        click.echo(f"{r['id']:>5}  {_cell(r['kind'], 6)}  {_cell(r['started'], 25)}  "
                   f"{_cell(r['vendor'], 16)}  {_cell(r['model'], 20)}  "
                   f"{_cell(r['validity'], 8)}  {_cell(r['state'], 7)}  "
                   f"{clean(r['path'], 400)}")
        if (voice := VoiceHeadline.from_figures(r["figures"])) is not None:
            click.echo(f"{'':>7}{clean(voice.line(), 400)}")
    gone = [r for r in listed if r["state"] != "present"]
    for r in gone:
        click.echo(f"note: {r['id']} is {r['state']}: {clean(r['state_reason'], 300)}",
                   err=True)


@runs.command("show")
@click.argument("run_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="The entry as a JSON object.")
@catalog_option
@click.pass_context
@user_errors
def runs_show(ctx: click.Context, run_id: int, as_json: bool, catalog: str | None) -> None:
    """Show one catalog entry: what was probed, when, its figures, files and state."""
    from evalkit.catalog.paths import catalog_path
    from evalkit.catalog.store import Catalog
    from evalkit.catalog.voice import KIND_KEY, VoiceHeadline

    row = Catalog(catalog_path(catalog or ctx.obj.get("catalog"))).get(run_id)
    if row is None:
        raise UsageError(f"no catalog entry {run_id} (`evalkit runs` lists them)")
    doc = row_json(row)
    doc["files"] = {k: dict(v) for k, v in row.entry.files.items()}
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    voice = VoiceHeadline.from_figures(row.entry.figures)
    for key, value in doc.items():
        if key == "figures" and voice is not None:  # calls, said so: never a text figure
            click.echo("figures:")
            for label, words in voice.rows():
                click.echo(f"  {label}: {clean(words, 300)}")
        elif key == "run_kind":
            continue  # in the figures: a voice run's say so, a text run's are as before
        elif isinstance(value, dict):
            click.echo(f"{key}:")
            for k, v in value.items():
                if k != KIND_KEY:
                    click.echo(f"  {clean(str(k), 80)}: {clean(json.dumps(v), 300)}")
        else:
            click.echo(f"{key}: {clean(str(value), 400) if value is not None else '-'}")


def panel_finder(catalog: str | None, warn: Callable[[str], None]
                 ) -> Callable[[Questionnaire], OurPanel | None]:
    """For `report`: our own panel of a questionnaire's vendor and model over Q6's window
    (its dates, both days whole, UTC), else the last 7 days. A catalog that does not exist
    yet is a panel of no samples (the scorecard says how to start one); one that cannot
    be read is a warning and no panel."""

    def find(q: Questionnaire) -> OurPanel | None:
        from datetime import time, timedelta

        from evalkit.catalog.panel import DEFAULT_WINDOW, read_panel
        from evalkit.errors import EvalkitError
        from evalkit.questionnaire.dates import window_days
        from evalkit.review.ourpanel import OurPanel

        if not q.vendor:
            return None
        dist = q.q6.output_tokens_per_s
        days = window_days(q.q6.window or (dist.window if dist else None))
        if days is not None:
            start = datetime.combine(days[0], time(), UTC)
            end = datetime.combine(days[1] + timedelta(days=1), time(), UTC)
        else:
            end = datetime.now(UTC)
            start = end - DEFAULT_WINDOW
        try:
            doc = read_panel(q.vendor, q.model, end - start, end, catalog)
        except UsageError as exc:
            if "no catalog at" not in str(exc):
                warn(f"warning: our own panel not read: {exc}")
                return None
            doc = {"window": {"start": start.isoformat(timespec="seconds"),
                              "end": end.isoformat(timespec="seconds")}, "samples": 0}
        except (EvalkitError, OSError, sqlite3.Error) as exc:
            warn(f"warning: our own panel not read ({type(exc).__name__}: {exc})")
            return None
        return OurPanel.from_panel(doc)

    return find
