"""`evalkit runs`: the catalog of evaluations, listed, filtered and shown one by one."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from evalkit.cli.options import catalog_option, user_errors
from evalkit.errors import UsageError
from evalkit.sanitize import clean


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

    e = row.entry
    now, why = state(e)
    return {"id": row.id, "vendor": e.vendor, "model": e.model, "endpoint": e.endpoint,
            "path": e.path, "kind": e.kind, "started": e.started, "ended": e.ended,
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

    row = Catalog(catalog_path(catalog or ctx.obj.get("catalog"))).get(run_id)
    if row is None:
        raise UsageError(f"no catalog entry {run_id} (`evalkit runs` lists them)")
    doc = row_json(row)
    doc["files"] = {k: dict(v) for k, v in row.entry.files.items()}
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    for key, value in doc.items():
        if isinstance(value, dict):
            click.echo(f"{key}:")
            for k, v in value.items():
                click.echo(f"  {clean(str(k), 80)}: {clean(json.dumps(v), 300)}")
        else:
            click.echo(f"{key}: {clean(str(value), 400) if value is not None else '-'}")
