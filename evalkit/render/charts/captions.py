"""The figures' captions: what each one shows and how to read it."""

from __future__ import annotations

from evalkit.analysis.summary_checks import VendorMetrics
from evalkit.analysis.summary_sections import RampThresholds
from evalkit.fmt import chart_num
from evalkit.render.charts.ramp import vendor_queue

# --------------------------------------------------------------------------- captions
# How to read each chart, printed under it: kept here, beside what the chart draws.

CLAIMS_CAPTION = (
    "The vendor's figures beside ours, in output tokens per second per stream (further "
    "right is faster). One row per source, its figures written under its name: the "
    "vendor's headline (★), its production panel, and ours at the level named: one stream "
    "alone (the figure the Q6 answer is set against) and the max sustained level (what a "
    "stream gets under load). Dot p50, hollow square p90, triangle p99.")


def distributions_caption(tokens_per_chunk: str, boxes: bool = True) -> str:
    """Figure 2's caption: what its boxes (or, without records, its lines) are."""
    shape = ("Box: the middle half of requests (p25 to p75); line in the box: the median; "
             "whiskers: p1 to p99 (slower outliers are not drawn)." if boxes else
             "Lines: p50, p90 and p99 per level (the run's per-request records were not at "
             "hand for the whole distribution).")
    return ("How long a stream waits for its first token (TTFT, left) and between chunks "
            "(ITL, right) at each concurrency level, in ms; lower is better. " + shape +
            f" ITL is per gap between chunks (tokens per chunk p50: {tokens_per_chunk}); the "
            "per-token figure, TPOT, is in the use-case chart.")


def throughput_caption(thresholds: RampThresholds | None = None,
                       vendor: VendorMetrics | None = None) -> str:
    """Figure 3's caption, with the degradation rule the max sustained level rests on, and
    what the queue panel under it shows, or why there is none (`vendor`: the summary's
    vendor_metrics, None when the run scraped nothing)."""
    return _throughput_words(thresholds) + " " + queue_caption(vendor)


def queue_caption(vendor: VendorMetrics | None) -> str:
    """The queue panel's sentence: what it draws, or why nothing is drawn."""
    if vendor_queue(vendor):
        return ("Under it, the vendor's own metrics (its metrics page, scraped about every "
                "second while each level ran): requests its engine was running (the batch) "
                "and waiting in its queue, the mean of those samples and a dash at the "
                "highest. A "
                "queue that grows where a figure degraded says the engine was full; no queue "
                "there points to what lies in front of it, the network or a gateway.")
    if vendor is None:
        return ("No queue panel: the run did not scrape the vendor's metrics (probe "
                "--metrics-url), so why a figure degraded is not shown.")
    return ("No queue panel: the run scraped the vendor's metrics page, but it exported no "
            "count of running or waiting requests for a ramp level.")


def _throughput_words(thresholds: RampThresholds | None = None) -> str:
    th = thresholds or RampThresholds()

    def ratio(limit: float | None) -> str:
        return chart_num(limit) if limit is not None else "2"

    fail = chart_num(th.admission_failure_rate * 100) \
        if th.admission_failure_rate is not None else "1"
    return ("Output tokens per second at each concurrency level: per stream (left axis; p50, "
            "and p10, which 90 % of streams beat), falling as streams share the endpoint, and "
            "for all streams together (right axis), rising until the endpoint is saturated. "
            "The vertical line is the max sustained concurrency: the highest level whose TTFT "
            f"p90 stayed within {ratio(th.ttft_p90_ratio)}× the baseline's, TPOT p90 within "
            f"{ratio(th.tpot_p90_ratio)}× and failures at most {fail} %, each judged on its "
            "95 % interval: a level breaches only when the whole interval lies beyond a limit, "
            "and one whose interval straddles a limit is a tie, neither held nor breached.")


PREFILL_CAPTION = (
    "TTFT of one request at a time against its prompt length (hollow dots), and the straight "
    "line fitted through them, TTFT = overhead + n / prefill rate (dashed): the steeper the "
    "line, the slower the prefill; dots off the line (a low r²) make the rate less certain.")


def raster_caption(n: int, level: int | None, stall_s: float = 1.0) -> str:
    """Figure 5's caption: how to read a row of the raster."""
    at = f" at {level} concurrent streams" if level else ""
    return (f"{n} requests{at}, one row each in send order, against time: the grey line is "
            "the wait from sending to the first token (queueing and prefill), each tick a "
            f"chunk arriving; a bold segment is a stall (a gap over {stall_s:g} s), × a "
            "request that did not finish. Ticks spreading apart mean slower decoding.")


USE_CASE_CAPTION = (
    "Each panel is one kind of limit: the measured figure at each concurrency level (line "
    "with dots) against every use case's limit on it (the labelled lines). TTFT p90; TPOT "
    "p90, per output token, the figure degradation is judged on (interactive chat also needs "
    "90 % of streams at reading speed); ITL p99, per gap between chunks: the voice agent's "
    "no-stall limit; and the share of failed requests. A use case fits up to the highest "
    "level where the measured line stays under every one of its lines.")

PRECISION_CAPTION = (
    "Precision under load: the share of each level's canaries (ordinary prompts of this "
    "run, answered alone first) whose answers were identical to their answers alone, with "
    "its exact 95 % interval. A level breaches when its whole interval lies below the "
    "floor (the rate alone less the tolerance) or a model answered that did not answer "
    "alone; answers that vary under one model's name are said as such, not as a swap.")
