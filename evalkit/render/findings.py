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
from typing import Any

from evalkit.analysis.summary import as_count, as_mapping
from evalkit.sanitize import clean

#: page one names at most this many findings (summary.json keeps up to ten)
SHOWN = 3


def configuration_figures(summary: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """Page one's rows for the configuration findings: what was refused, how often and
    where, that it was left out of the degradation order, and what to change."""
    findings = as_mapping(as_mapping(summary).get("configuration")).get("findings")
    rows = []
    for f in (findings if isinstance(findings, list) else [])[:SHOWN]:
        f = as_mapping(f)
        phases = ", ".join(f"{clean(str(p), 20)} {n}" for p, n in
                           as_mapping(f.get("phases")).items() if as_count(n))
        rows.append(("Configuration finding",
                     f"HTTP {as_count(f.get('status')) or '?'} “{_text(f.get('message'), 160)}” "
                     f"for {as_count(f.get('requests')) or 0} requests ({phases}), alone as "
                     "under load: a shape the endpoint never serves, left out of the "
                     f"degradation order. To change: {_text(f.get('change'), 320)}"))
    return rows


def _text(value: Any, limit: int) -> str:
    """A summary's text field as one printable line (anything else: nothing)."""
    return clean(value, limit) if isinstance(value, str) else ""


def beside_outcomes(group: Mapping[str, Any]) -> str:
    """What stands beside a level's outcomes: its requests sent again on a fresh
    connection, and those refused as a configuration finding ('' when neither)."""
    said = [f"{n} {what}" for key, what in (("reconnects", "reconnects"),
                                            ("configuration_failures", "configuration"))
            if (n := as_count(as_mapping(group).get(key), least=1))]
    return f" ({', '.join(said)})" if said else ""
