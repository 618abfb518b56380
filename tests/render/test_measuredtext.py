"""Page one's measured words (`evalkit.render.measuredtext`): each measured type says its
own, by its type and not by a question id, with the summary's intervals and n beside the
figures; a type without words of its own is said field by field."""

from __future__ import annotations

from evalkit.render.measuredtext import measured_long, measured_text
from evalkit.review.measured import (
    AtLevel,
    ConcurrencyMeasured,
    ObservabilityMeasured,
    PanelMeasured,
    PrefillDecodeMeasured,
    RateLimitsMeasured,
    Shown,
    ThroughputMeasured,
    TtftMeasured,
)
from tests.review.helpers import SUMMARY, typed

RUN = typed(SUMMARY)  # ramp levels 1 to 512, 200 requests at 16 streams


def test_each_type_says_its_own_words_with_the_summary_beside() -> None:
    # the level's own distribution, not the judged figures alone: its p90 and its n
    assert measured_text(TtftMeasured(16, 230.0, 330.0), RUN) == (
        "TTFT p50 230 ms · p90 330 ms at 16 streams (n=200)")
    assert measured_text(ThroughputMeasured(16, 55.0, 800.0), RUN) == (
        "per stream p50 55.6 tok/s; all streams 844 tok/s at 16 streams (n=200)")
    assert measured_text(PrefillDecodeMeasured(4900.0, 95.2, (4000.0, None)), RUN) == (
        "prefill 4,900 tok/s [95 %: 4,000 tok/s–open]; decode one stream alone p50 "
        "95.2 tok/s (n=200)")
    assert measured_text(ConcurrencyMeasured(None, "itl", 32, 24), RUN) == (
        "max sustained: not established; breaks at 32 streams; a tie (interval straddles "
        "a limit) at 24 streams; first to degrade: TPOT p90 (per-token latency)")
    assert measured_text(ObservabilityMeasured("u", None, {}, False, 0, 2), RUN) == (
        "no per-stream inter-token histogram in the endpoint's metrics (unknown names): 0 "
        "observations over 2 scrapes")
    panel = PanelMeasured(None, AtLevel(8, Shown(40.0, 50.0, n=30)), AtLevel(16, Shown(30.0)),
                          Shown(0.2, 0.3))
    assert measured_text(panel, RUN) == (
        "at 8 streams: p50 40.0 tok/s · p90 50.0 tok/s (n=30, low confidence); at 16 "
        "streams: p50 30.0 tok/s · p90 —; TTFT at 16 streams: p50 200 ms · p90 300 ms")


def test_without_the_level_or_words_of_its_own_every_field_is_said() -> None:
    """A level the summary does not have (a scorecard beside another run) and a type with
    no words of its own are said field by field, never dropped."""
    assert measured_text(TtftMeasured(3, 230.0), RUN) == "at 3 streams; TTFT p50 230 ms"
    assert measured_text(TtftMeasured(16, 230.0), None) == "at 16 streams; TTFT p50 230 ms"
    assert measured_text(RateLimitsMeasured(2, 5.5, 60.0), RUN) == (
        "rejected 429 2; first rejection 5.50 s; sliding window 60.0 s")
    assert measured_text(None, RUN) == "—" and measured_long(None) == "—"
    assert measured_long(ThroughputMeasured(16, 55.0, None)) == (
        "at 16 streams; per stream p50 55.0 tok/s")
