"""Our panel read from the catalog: a vendor's samples over a window, each run directory
read through `open_run` (checked as untrusted), pooled by `evalkit.analysis.panel`."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evalkit.analysis.jsonread import Json
from evalkit.analysis.panel import PanelSample, pool_panel, sample_figures
from evalkit.catalog.entries import state
from evalkit.catalog.paths import catalog_path
from evalkit.catalog.store import Catalog, Row
from evalkit.errors import EvalkitError, UsageError

#: the window Q6 asks about when it names none: last week
DEFAULT_WINDOW = timedelta(days=7)


def parse_span(text: str, option: str = "--window") -> timedelta:
    """'7d', '72h', '90m', '1w' as a span of time."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([wdhm])\s*", text or "")
    if m is None:
        raise UsageError(f"{option} takes a span such as 7d, 72h, 90m or 1w "
                         f"(got {str(text)[:40]!r})")
    value = float(m.group(1))
    span = {"w": timedelta(weeks=value), "d": timedelta(days=value),
            "h": timedelta(hours=value), "m": timedelta(minutes=value)}[m.group(2)]
    if span.total_seconds() <= 0:
        raise UsageError(f"{option} must be longer than nothing")
    return span


def _sample(row: Row) -> PanelSample:
    e = row.entry
    when = datetime.fromisoformat(e.started or row.registered)
    now, why = state(e)
    base = PanelSample(row.id, when.timestamp(), now, e.validity, e.path)
    if now != "present":
        return replace(base, excluded=f"{now}: {why}")
    from evalkit.rundir.run import open_run

    try:
        run = open_run(Path(e.path))
    except EvalkitError as exc:
        return replace(base, state="missing", excluded=f"unreadable: {str(exc)[:200]}")
    ramp = run.meta.settings.ramp
    concurrency = ramp.levels[0] if ramp is not None and ramp.levels else None
    return replace(base, figures=sample_figures(run.records), concurrency=concurrency)


def panel_samples(vendor: str, model: str | None, start: datetime, end: datetime,
                  catalog: str | Path | None = None) -> list[PanelSample]:
    """The vendor's panel samples (of `model`, when given) that started in [start, end)."""
    rows = Catalog(catalog_path(catalog)).rows(
        vendor=vendor, model=model, kind="panel",
        since=start.astimezone(UTC).isoformat(timespec="seconds"),
        until=end.astimezone(UTC).isoformat(timespec="seconds"))
    return [_sample(r) for r in rows]


def read_panel(vendor: str, model: str | None = None, window: timedelta = DEFAULT_WINDOW,
               end: datetime | None = None, catalog: str | Path | None = None,
               interval: timedelta | None = None) -> dict[str, Json]:
    """panel.json's dict for the vendor over the window ending at `end` (default: now)."""
    end = end or datetime.now(UTC)
    start = end - window
    samples = panel_samples(vendor, model, start, end, catalog)
    return pool_panel(samples, vendor=vendor, model=model, start_s=start.timestamp(),
                      end_s=end.timestamp(),
                      interval_s=interval.total_seconds() if interval else None)
