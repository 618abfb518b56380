"""vendor_scrapes.jsonl read back, bounded, and digested against the records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.analysis.vendor_metrics import (
    MAX_LOG_BYTES,
    MAX_PAGE_BYTES,
    MAX_SAMPLES,
    MAX_UNKNOWN_NAMES,
    SCRAPES_SCHEMA,
    _Scrape,
    digest,
    page_names,
)
from evalkit.sanitize import clean


def read_log(path: Path) -> tuple[str | None, list[_Scrape], int]:
    """A scrape log read back, bounded: (its URL, its scrapes, lines that were not one).

    The log is input like any file in a run directory: a line that is not a scrape (torn
    by the kill, or edited) is skipped and counted, text is kept as text, and at most
    MAX_LOG_BYTES are read.
    """
    url: str | None = None
    scrapes: list[_Scrape] = []
    bad = 0
    with path.open("rb") as fh:
        for i, raw in enumerate(fh.read(MAX_LOG_BYTES).splitlines()):
            try:
                d = json.loads(raw)
            except (ValueError, RecursionError):
                bad += 1
                continue
            if not isinstance(d, dict):
                bad += 1
            elif i == 0 and d.get("schema") == SCRAPES_SCHEMA:
                url = clean(str(d.get("url") or ""), 300) or None
            elif _is_scrape(d) and len(scrapes) < 2 * MAX_SAMPLES:
                level = d.get("level")
                text, error = d.get("text"), d.get("error")
                names = d.get("names")
                scrapes.append(_Scrape(
                    clean(d["phase"], 40), level, d["when"], int(d.get("t_ns") or 0),
                    text[:MAX_PAGE_BYTES] if isinstance(text, str) else None,
                    clean(error, 200) if isinstance(error, str) else None,
                    # the names as a page would give them: valid ones only, bounded
                    page_names("\n".join(n for n in names[:MAX_UNKNOWN_NAMES]
                                          if isinstance(n, str)))
                    if isinstance(names, list) else ()))
            else:
                bad += 1
    return url, scrapes, bad


def _is_scrape(d: dict[str, Any]) -> bool:
    level = d.get("level")
    return (isinstance(d.get("phase"), str) and d.get("when") in ("before", "during", "after")
            and (level is None or (isinstance(level, int) and not isinstance(level, bool)
                                   and 0 < level <= 10**7))
            and (isinstance(d.get("text"), str) or isinstance(d.get("error"), str))
            and isinstance(d.get("t_ns", 0), int))


def digest_log(path: Path, records: Sequence[Any]) -> dict[str, Any] | None:
    """`vendor_metrics` re-derived from a run's scrape log and its records (None: the log
    holds no scrape). Said in `rebuilt_from`, with lines skipped."""
    url, scrapes, bad = read_log(path)
    if not scrapes:
        return None
    out = digest(url or "(not recorded)", scrapes, records)
    out["rebuilt_from"] = {"file": path.name, "scrapes": len(scrapes), "skipped_lines": bad}
    return out
