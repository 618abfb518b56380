"""A new connection's cost beside the TTFT of the group that opened it (issue 43):
`connection_cost` over a phase's or level's requests, and its words on the page."""

from __future__ import annotations

import json

import pytest

from evalkit.analysis.frames import frames
from evalkit.analysis.stats import connection_cost
from evalkit.analysis.summarize import summarize
from evalkit.analysis.thresholds import Tolerances
from evalkit.render import pdf
from evalkit.render.connections import connection_text
from evalkit.render.page import build_page, page_fields
from evalkit.review.scorecard import build_card
from evalkit.rundir.run import RunDir
from tests.analysis.helpers import closed_loop, stream
from tests.review.helpers import RUN, q, typed
from tests.rundir.helpers import RUN_DIR as REPORT_RUN


def _opened(rid: str, phase: str, level: int, *, connect: float, tls: float | None,
            sent: float, ttft: float = 0.2) -> object:
    return stream(rid, phase, level, ttft=ttft, connect_s=connect, tls_s=tls, sent_s=sent)


class TestCost:
    def test_none_when_every_request_left_on_an_open_connection(self) -> None:
        """A level the warm-up opened every connection for: nothing to show, no figure."""
        req, _ = frames(closed_loop("ramp", 4, 3))
        assert connection_cost(req) is None

    def test_a_closed_loop_adds_the_connection_to_the_first_ttft(self) -> None:
        """Closed loop: t0 is the first byte sent, after the connection (`sent_s` 0), so
        the customer's first TTFT is the connection plus the TTFT; the handshake's part
        is apart, and only requests that opened one count."""
        recs = [*closed_loop("ramp", 4, 2),
                _opened("a", "ramp", 4, connect=0.050, tls=0.040, sent=0.0),
                _opened("b", "ramp", 4, connect=0.070, tls=0.060, sent=0.0)]
        got = connection_cost(frames(recs)[0])
        assert got is not None
        assert (got["opened"], got["requests"]) == (2, 10)
        assert got["connect_s"]["p50"] == pytest.approx(0.060)
        assert got["tls_s"]["p50"] == pytest.approx(0.050)
        assert got["first_ttft_s"]["p50"] == pytest.approx(0.2 + 0.060)

    def test_an_open_loop_ttft_holds_the_connection_already(self) -> None:
        """Open loop: t0 is the schedule, before the connection (`sent_s` is the send
        lag): its TTFT has it in already, and it is not added twice. Plain HTTP has no
        handshake to show."""
        recs = [_opened("a", "rate", 0, connect=0.003, tls=None, sent=0.004)]
        got = connection_cost(frames(recs)[0])
        assert got is not None and got["tls_s"] is None
        assert got["first_ttft_s"]["p50"] == pytest.approx(0.2)

    def test_every_group_of_the_summary_says_it(self) -> None:
        """The connect phase (the run's first request opened its connection) and a ramp
        level that opened some carry `connections`; a level that opened none has None."""
        recs = [_opened("c", "connect", 1, connect=0.045, tls=0.030, sent=0.0),
                *closed_loop("ramp", 2, 3),
                *closed_loop("ramp", 4, 3),
                _opened("r", "ramp", 4, connect=0.050, tls=0.040, sent=0.0)]
        summary = summarize(recs)
        assert summary["connect"]["connections"]["opened"] == 1
        levels = {lv["concurrency"]: lv for lv in summary["ramp"]["levels"]}
        assert levels[2]["connections"] is None
        assert levels[4]["connections"]["opened"] == 1


class TestPage:
    def test_the_words(self) -> None:
        assert connection_text({"opened": 2, "requests": 120, "connect_s": {"p50": 0.041},
                                "tls_s": {"p50": 0.035}, "first_ttft_s": {"p50": 0.25}}) == (
            "2 of 120 requests opened a connection: 41.0 ms p50 (TLS handshake 35.0 ms); "
            "their TTFT with it 250 ms p50")
        assert connection_text({"opened": 1, "requests": 1, "connect_s": {"p50": 0.0012},
                                "tls_s": None}) == (
            "1 request opened a connection: 1.20 ms p50 (plain TCP)")

    @pytest.mark.parametrize("hostile", [None, {}, {"opened": "<b>"}, {"opened": 0},
                                         {"opened": 3, "connect_s": "x"}, [1, 2]])
    def test_nothing_readable_says_nothing(self, hostile: object) -> None:
        assert connection_text(hostile) is None

    def test_shown_beside_the_ttft_of_the_level_that_opened_them(self) -> None:
        """The connect table says what the run's first connection cost; a ramp level that
        opened connections has its line under its row, one that opened none has none."""
        recs = [_opened("c", "connect", 1, connect=0.045, tls=0.030, sent=0.0),
                *closed_loop("ramp", 2, 3),
                *closed_loop("ramp", 4, 3),
                _opened("r", "ramp", 4, connect=0.050, tls=0.040, sent=0.0)]
        summary = summarize(recs)
        card = build_card(q("vendor: x\n"), typed(summary), Tolerances(), RUN)
        run = RunDir(json.loads((REPORT_RUN / "run.json").read_text()), summary, recs)
        html = pdf.render_html(page_fields(build_page(card, run, {})))
        assert "<th>New connection</th><td>1 request opened a connection: 45.0 ms p50 " \
               "(TLS handshake 30.0 ms)" in html
        assert html.count("New connections, beside its TTFT: ") == 1
        assert "1 of 13 requests opened a connection: 50.0 ms p50 (TLS handshake 40.0 ms)" \
            in html
