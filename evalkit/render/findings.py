"""What the page says of requests that were neither served nor the load's failures: a
shape the endpoint refuses alone as under load (a configuration finding, with what to
change: `evalkit.analysis.configuration`), and requests sent again on a fresh connection
after the server closed a reused one unanswered (ours to repair:
`evalkit.probe.wire.reconnect`).

Pure: summary.json in, page text out. The finding's message is the vendor's: clipped and
made printable here, escaped by the template like all text.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.analysis.jsonread import Json
from evalkit.analysis.summary import Level, Summary, read_level
from evalkit.analysis.summary_sections import Configuration
from evalkit.sanitize import clean

#: page one names at most this many findings (summary.json keeps up to ten)
SHOWN = 3


def configuration_figures(summary: Summary | None) -> list[tuple[str, str]]:
    """Page one's rows for the configuration findings: what was refused, how often and
    where, that it was left out of the degradation order, and what to change."""
    config = (summary.sections.configuration if summary is not None else None) \
        or Configuration()
    rows = []
    for f in config.findings[:SHOWN]:
        phases = ", ".join(f"{clean(str(p), 20)} {n}" for p, n in f.phases.items() if n)
        rows.append(("Configuration finding",
                     f"HTTP {f.status or '?'} “{_text(f.message, 160)}” "
                     f"for {f.requests or 0} requests ({phases}), alone as "
                     "under load: a shape the endpoint never serves, left out of the "
                     f"degradation order. To change: {_text(f.change, 320)}"))
    return rows


def _text(value: str | None, limit: int) -> str:
    """A summary's text field as one printable line (none: nothing)."""
    return clean(value, limit) if value is not None else ""


def beside_level(level: Level) -> str:
    """What stands beside a level's outcomes: its requests sent again on a fresh
    connection, and those refused as a configuration finding ('' when neither)."""
    said = [f"{n} {what}" for n, what in ((level.reconnects, "reconnects"),
                                          (level.configuration_failures, "configuration"))
            if n >= 1]
    return f" ({', '.join(said)})" if said else ""


def beside_outcomes(group: Json | None) -> str:
    """`beside_level` of a level as summary.json writes it: what the page's template holds
    (it reads the document as written), read here as a `Level`."""
    return beside_level(read_level(group)) if isinstance(group, Mapping) else ""
