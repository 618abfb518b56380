"""A group's new connections in words, beside its TTFT on the page (issue 43).

A customer's first request on a new connection waits for TCP's connect and the vendor's
TLS handshake before its TTFT begins. The probe keeps that cost out of every TTFT its
warm-up paid for, and says it where requests opened their own connections (the run's
first request, a keep-alive the vendor closed, an open loop): summary.json's
`connections` of a phase or level (`evalkit.analysis.stats.connection_cost`), typed
`Connections`.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.analysis.jsonread import Json, read_as
from evalkit.analysis.summary_levels import Connections
from evalkit.fmt import fmt_ms


def connection_words(conn: Connections | None) -> str | None:
    """'N of M requests opened a connection: X ms p50 (TLS handshake Y ms); their TTFT
    with it Z ms p50', or None when the group opened none (or says nothing readable)."""
    if conn is None:
        return None
    opened, requests, connect = conn.opened, conn.requests, conn.connect_s.p50
    if opened is None or opened < 1 or connect is None:
        return None
    tls = conn.tls_s.p50 if conn.tls_s is not None else None
    first = conn.first_ttft_s.p50
    total = requests if requests is not None and requests >= opened else opened
    text = (f"{opened}{f' of {total}' if total > opened else ''} "
            f"request{'' if total == 1 else 's'} opened a connection: {fmt_ms(connect)} p50"
            + (f" (TLS handshake {fmt_ms(tls)})" if tls is not None else " (plain TCP)"))
    if first is not None:
        text += f"; their TTFT with it {fmt_ms(first)} p50"
    return text


def connection_text(connections: Json | None) -> str | None:
    """`connection_words` of a group's `connections` as summary.json writes it: what the
    page's template holds (it reads the document as written), read here as `Connections`."""
    if not isinstance(connections, Mapping):
        return None
    return connection_words(read_as(Connections, connections))
