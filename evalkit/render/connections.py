"""A group's new connections in words, beside its TTFT on the page (issue 43).

A customer's first request on a new connection waits for TCP's connect and the vendor's
TLS handshake before its TTFT begins. The probe keeps that cost out of every TTFT its
warm-up paid for, and says it where requests opened their own connections (the run's
first request, a keep-alive the vendor closed, an open loop): summary.json's
`connections` of a phase or level (`evalkit.analysis.stats.connection_cost`).
"""

from __future__ import annotations

from typing import Any

from evalkit.analysis.summary import as_count, as_mapping, as_number
from evalkit.fmt import fmt_ms


def connection_text(connections: Any) -> str | None:
    """'N of M requests opened a connection: X ms p50 (TLS handshake Y ms); their TTFT
    with it Z ms p50', or None when the group opened none (or says nothing readable)."""
    conn = as_mapping(connections)
    opened, requests = as_count(conn.get("opened"), least=1), as_count(conn.get("requests"))
    connect = as_number(as_mapping(conn.get("connect_s")).get("p50"))
    if opened is None or connect is None:
        return None
    tls = as_number(as_mapping(conn.get("tls_s")).get("p50"))
    first = as_number(as_mapping(conn.get("first_ttft_s")).get("p50"))
    total = requests if requests is not None and requests >= opened else opened
    text = (f"{opened}{f' of {total}' if total > opened else ''} "
            f"request{'' if total == 1 else 's'} opened a connection: {fmt_ms(connect)} p50"
            + (f" (TLS handshake {fmt_ms(tls)})" if tls is not None else " (plain TCP)"))
    if first is not None:
        text += f"; their TTFT with it {fmt_ms(first)} p50"
    return text
