"""The vendor's own metrics (`probe --metrics-url URL`): a Prometheus scrape around each phase.

Q5 asks whether the vendor's observability shows per-stream inter-token times. Engines
export them, or not, on a Prometheus `/metrics` page, so the probe reads that page
before and after each phase and, every `interval_s`, during each ramp or soak level. The
page is parsed with `prometheus_client`'s text parser (the reference implementation of the
format), after keeping only the lines of the families recognised here:

    ttft        vllm:time_to_first_token_seconds, sglang:time_to_first_token_seconds
                (TGI and llama.cpp export none)
    itl         vllm:inter_token_latency_seconds, vllm:time_per_output_token_seconds (older
                vLLM, also observed per token), sglang:inter_token_latency_seconds
    tpot_req    vllm:request_time_per_output_token_seconds,
                sglang:time_per_output_token_seconds, tgi_request_mean_time_per_token_duration
    queue_time  vllm:request_queue_time_seconds, tgi_request_queue_duration
    running     vllm:num_requests_running, sglang:num_running_reqs, tgi_batch_current_size,
                llamacpp:requests_processing (its slots busy)
    waiting     vllm:num_requests_waiting, sglang:num_queue_reqs, tgi_queue_size,
                llamacpp:requests_deferred (requests waiting for a free slot)
    kv_cache    vllm:kv_cache_usage_perc (older vllm:gpu_cache_usage_perc), sglang:token_usage,
                llamacpp:kv_cache_usage_ratio (older llama.cpp; the 0.3.36 server has none)

Counters, turned into a rate per window (its difference over the seconds between the
scrapes around it; a reset reads as none): llama.cpp's `prompt_tokens_processed`
(`llamacpp:prompt_tokens_total`, the cache's excluded), `cached_prompt_tokens`
(`prompt_tokens_cached_total`), `generated_tokens` (`tokens_predicted_total`),
`prompt_seconds` and `decode_seconds` (`prompt_seconds_total`,
`tokens_predicted_seconds_total`: engine time; the decode time is summed over its slots,
so one second of it per wall second is one slot busy) and `decode_calls`
(`n_decode_total`). Its `llamacpp:n_busy_slots_per_decode` is a mean since the engine
started; over a window it becomes the mean batch, `busy_slots_per_decode` (the slots in
each llama_decode() call: above 1, requests were batched). Names and types read from
llama.cpp's tools/server/server-task.cpp (`to_metrics`) in the llama-cpp-python 0.3.36
sdist, 2026-12-04: prompt token counters are added per decode batch, predicted ones when
a request ends, so a window whose scrapes are idle counts its requests whole.

A page none of whose families is recognised keeps, per scrape, the metric names it held
(`MAX_UNKNOWN_NAMES`, each a valid Prometheus name or dropped), and `vendor_metrics`
lists them as `unrecognised_names`: the next engine is a row in these tables, not a guess.

Sources: vLLM "Production Metrics" (docs.vllm.ai/en/stable/usage/metrics/), SGLang
"Production Metrics" (docs.sglang.io/references/production_metrics.html), TGI "Metrics"
(huggingface.co/docs/text-generation-inference/reference/metrics), read 2026-11-30.
`itl` is per stream, per token (what Q5 asks for); `tpot_req` is one mean per request
(request-level). Label sets (models, engines, ranks) are summed: a histogram by bucket, a
gauge by value. Counters and histograms are cumulative since the engine started, so a
phase is the difference of the scrapes around it; a histogram's quantiles are read from
its buckets by linear interpolation (as PromQL's histogram_quantile), its mean exactly
(sum ÷ count). If other clients share the endpoint their requests are in the difference
too: the count beside ours says so.

Network work happens on the probe's event loop but is one small GET; the text is cut to the
recognised lines when it arrives and parsed only when the run is written up, so a timed
window pays for no parsing. Nothing here can fail the run: a scrape that fails is
recorded as failed, with its error.

Each scrape is also appended, as it is taken, to `vendor_scrapes.jsonl` in the run
directory (a header line with the URL, then one line per scrape: phase, level, when, the
recognised lines or the error). A probe killed before it wrote its summary keeps its
scrapes there, so `runcheck` re-derives `vendor_metrics` from them with the records
(`digest_log`) instead of losing the vendor's queue and TTFT for the levels it ran.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.records import RequestRecord
from evalkit.sanitize import clean

#: role → the names that fill it, preferred first (the first present wins)
FAMILIES: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
            "sglang:inter_token_latency_seconds"),
    "tpot_req": ("vllm:request_time_per_output_token_seconds",
                 "sglang:time_per_output_token_seconds",
                 "tgi_request_mean_time_per_token_duration"),
    "queue_time": ("vllm:request_queue_time_seconds", "tgi_request_queue_duration"),
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs",
                "tgi_batch_current_size", "llamacpp:requests_processing"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size",
                "llamacpp:requests_deferred"),
    "kv_cache": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage",
                 "llamacpp:kv_cache_usage_ratio"),
    # counters (cumulative): a rate per window
    "prompt_tokens_processed": ("llamacpp:prompt_tokens_total",),
    "cached_prompt_tokens": ("llamacpp:prompt_tokens_cached_total",),
    "generated_tokens": ("llamacpp:tokens_predicted_total",),
    "prompt_seconds": ("llamacpp:prompt_seconds_total",),
    "decode_seconds": ("llamacpp:tokens_predicted_seconds_total",),
    "decode_calls": ("llamacpp:n_decode_total",),
    # a mean since the engine started, of slots per decode call (weighed by decode_calls)
    "busy_slots_per_decode": ("llamacpp:n_busy_slots_per_decode",),
}
HISTOGRAMS = ("ttft", "itl", "tpot_req", "queue_time")
GAUGES = ("running", "waiting", "kv_cache")
COUNTERS = ("prompt_tokens_processed", "cached_prompt_tokens", "generated_tokens",
            "prompt_seconds", "decode_seconds", "decode_calls")
#: read as a plain value like a gauge, but summarised per window from the counter beside it
_MEANS = {"busy_slots_per_decode": "decode_calls"}
_ALL_NAMES = tuple(sorted({n for names in FAMILIES.values() for n in names}))
_PREFIXES = ("vllm:", "sglang:", "tgi_", "llamacpp:")
#: the engine each prefix names
ENGINES = (("vllm:", "vllm"), ("sglang:", "sglang"), ("tgi_", "tgi"), ("llamacpp:", "llama.cpp"))
#: an unrecognised page: the most metric names kept of it, and the longest name kept
MAX_UNKNOWN_NAMES = 40
_NAME_MAX = 100
_METRIC_NAME = re.compile(rf"[a-zA-Z_:][a-zA-Z0-9_:]{{0,{_NAME_MAX - 1}}}")
#: the most periodic samples kept (a day-long soak at 1 s: bounded memory)
MAX_SAMPLES = 20_000
#: a metrics page larger than this is cut (a real engine's is ~100 KB)
MAX_PAGE_BYTES = 8 << 20
#: the scrape log beside requests.jsonl, and its header's schema
SCRAPES_FILE = "vendor_scrapes.jsonl"
SCRAPES_SCHEMA = "evalkit.vendor_scrapes/1"
#: the most of a scrape log read back (MAX_SAMPLES pages of recognised lines fit easily)
MAX_LOG_BYTES = 512 << 20


@dataclass
class Histogram:
    """A histogram summed over label sets: cumulative counts by upper bound, sum, count."""

    buckets: dict[float, float] = field(default_factory=dict)
    sum: float = 0.0
    count: float = 0.0

    def minus(self, before: Histogram | None) -> Histogram:
        """What was observed between `before` and this (a counter reset reads as none)."""
        if before is None:
            return self
        diff = Histogram({le: c - before.buckets.get(le, 0.0) for le, c in self.buckets.items()},
                         self.sum - before.sum, self.count - before.count)
        if diff.count < 0 or any(c < 0 for c in diff.buckets.values()):
            return Histogram()
        return diff

    def quantile(self, q: float) -> float | None:
        """histogram_quantile: linear within the bucket holding the q-th observation."""
        if self.count <= 0:
            return None
        rank = q * self.count
        low, below = 0.0, 0.0
        for le in sorted(self.buckets):
            cum = self.buckets[le]
            if cum >= rank:
                if math.isinf(le):
                    return low  # beyond the last finite bound: its bound is all we know
                inside = cum - below
                return low + (le - low) * ((rank - below) / inside if inside > 0 else 1.0)
            low, below = le, cum
        return None

    def stats(self) -> dict[str, Any]:
        """n, mean and quantiles, seconds (None where nothing was observed)."""
        n = round(self.count)
        mean = self.sum / self.count if self.count > 0 else None
        return {"n": n, "mean": mean, "p50": self.quantile(0.5), "p90": self.quantile(0.9),
                "p99": self.quantile(0.99)}


@dataclass
class Snapshot:
    """One parsed scrape: the recognised families, by role, with the name that filled it."""

    histograms: dict[str, Histogram] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)


def keep_lines(text: str) -> str:
    """The exposition lines of recognised families (comments about them included)."""
    out = []
    for line in text.splitlines():
        bare = line[7:] if line.startswith(("# TYPE ", "# HELP ")) else line
        if bare.startswith(_PREFIXES):
            out.append(line)
    return "\n".join(out) + "\n"


def parse(text: str) -> Snapshot:
    """Parse a Prometheus text page (already cut by `keep_lines`, or whole)."""
    from prometheus_client.parser import text_string_to_metric_families

    found_h: dict[str, Histogram] = {}
    found_g: dict[str, float] = {}
    for family in text_string_to_metric_families(keep_lines(text)):
        for sample in family.samples:
            name, value = sample.name, float(sample.value)
            if not math.isfinite(value) and value != math.inf:
                continue
            if name.endswith("_bucket") and "le" in sample.labels:
                h = found_h.setdefault(name[:-7], Histogram())
                le = float(sample.labels["le"])
                h.buckets[le] = h.buckets.get(le, 0.0) + value
            elif name.endswith("_sum"):
                found_h.setdefault(name[:-4], Histogram()).sum += value
            elif name.endswith("_count"):
                found_h.setdefault(name[:-6], Histogram()).count += value
            else:
                found_g[name] = found_g.get(name, 0.0) + value
    snap = Snapshot()
    for role, names in FAMILIES.items():
        for name in names:
            if role in HISTOGRAMS and name in found_h and found_h[name].buckets:
                snap.histograms[role], snap.names[role] = found_h[name], name
                break
            if role not in HISTOGRAMS and name in found_g:  # a gauge, counter or mean
                snap.gauges[role], snap.names[role] = found_g[name], name
                break
    return snap


def unknown_names(text: str, kept: str) -> tuple[str, ...]:
    """`page_names` of a page whose kept lines (`keep_lines`) name none of the families
    recognised here; () for a recognised page (a substring test, cheap enough to run in
    a timed window, where nothing is parsed)."""
    return () if any(name in kept for name in _ALL_NAMES) else page_names(text)


def page_names(text: str) -> tuple[str, ...]:
    """The metric names a page held, for a page none of whose families is recognised:
    the first `MAX_UNKNOWN_NAMES` distinct ones, each a valid Prometheus name (anything
    else on a hostile page is dropped, so what is kept is safe to print)."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        bare = line[7:] if line.startswith(("# TYPE ", "# HELP ")) else line
        if bare.startswith("#"):
            continue
        m = _METRIC_NAME.match(bare)
        if m and (len(bare) == m.end() or bare[m.end()] in " {\t"):
            seen.setdefault(m.group(), None)
            if len(seen) >= MAX_UNKNOWN_NAMES:
                break
    return tuple(seen)


def engine_of(names: Sequence[str]) -> str | None:
    """vllm | sglang | tgi | llama.cpp, from the recognised names found (None: none)."""
    for prefix, engine in ENGINES:
        if any(n.startswith(prefix) for n in names):
            return engine
    return None


@dataclass
class _Scrape:
    phase: str
    level: int | None
    when: str  # before | during | after
    t_ns: int
    text: str | None
    error: str | None = None
    #: the page's metric names when it held no recognised family (`page_names`)
    names: tuple[str, ...] = ()


def _parsed(scrape: _Scrape) -> tuple[_Scrape, Snapshot | None]:
    """A scrape and its parse; a page the parser refuses counts as a failed scrape."""
    if scrape.text is None:
        return scrape, None
    try:
        return scrape, parse(scrape.text)
    except ValueError as exc:  # prometheus_client's parser says what it could not read
        return dataclasses.replace(scrape, error=clean(f"unparseable page: {exc}", 200)), None


def digest(url: str, scrapes: Sequence[_Scrape],
           records: Sequence[RequestRecord]) -> dict[str, Json]:
    """`vendor_metrics` for summary.json from scrapes (taken now, or read back from the
    log) and the run's records: the document as written (`Summary.sections` reads it back
    as the typed `evalkit.analysis.summary_checks.VendorMetrics`)."""
    parsed = [_parsed(s) for s in scrapes]
    names: dict[str, str] = {}
    for _, snap in parsed:
        if snap is not None:
            for role, name in snap.names.items():
                names.setdefault(role, name)
    ok = sum(1 for _, snap in parsed if snap is not None)
    unknown = list(dict.fromkeys(n for s in scrapes for n in s.names))[:MAX_UNKNOWN_NAMES]
    errors = [s.error for s, snap in parsed if snap is None and s.error]
    phases: dict[str, Any] = {}
    levels: dict[str, Any] = {}
    for key, group in _groups(parsed).items():
        phase, level = key
        window = _window(group, [r for r in records if r.phase == phase
                                 and (level is None or r.level == level)])
        if window is None:
            continue
        if level is None:
            phases[phase] = window
        else:
            levels[str(level)] = {"phase": phase, **window}
    itl_seen = sum(d.get("vendor", {}).get("itl_s", {}).get("n") or 0
                   for d in [*phases.values(), *levels.values()])
    return {
        "url": url, "engine": engine_of(list(names.values())),
        "scrapes": len(scrapes), "scrapes_ok": ok,
        "scrape_errors": errors[:5],
        "families": names,
        # a page with none of the families above: what it held instead
        "unrecognised_names": [] if names else unknown,
        "per_stream_itl": "itl" in names,
        "request_level_tpot": "tpot_req" in names,
        "itl_observations": itl_seen,
        "phases": phases, "levels": levels,
        "note": ("vendor figures are the engine's, from when it had the request; ours "
                 "run from when our bytes left, so overhead_s (ours minus theirs) is "
                 "the network and the queueing in front of the engine; quantiles of "
                 "theirs come from histogram buckets, means are exact"),
    }


def _groups(parsed: list[tuple[_Scrape, Snapshot | None]]
            ) -> dict[tuple[str, int | None], list[tuple[_Scrape, Snapshot | None]]]:
    out: dict[tuple[str, int | None], list[tuple[_Scrape, Snapshot | None]]] = {}
    for scrape, snap in parsed:
        out.setdefault((scrape.phase, scrape.level), []).append((scrape, snap))
    return out


def _window(group: list[tuple[_Scrape, Snapshot | None]], records: Sequence[RequestRecord]
            ) -> dict[str, Any] | None:
    first = next(((s, snap) for s, snap in group if s.when == "before" and snap), None)
    last = next(((s, snap) for s, snap in reversed(group) if s.when == "after" and snap), None)
    cut = last is None
    if cut:  # the run stopped inside it (a kill): the window ends at its last sample
        last = next(((s, snap) for s, snap in reversed(group) if s.when == "during" and snap),
                    None)
    if first is None or last is None or first[1] is None or last[1] is None:
        return None
    before, after = first[1], last[1]
    vendor: dict[str, Any] = _counters(before, after, (last[0].t_ns - first[0].t_ns) / 1e9)
    for role in HISTOGRAMS:
        if role in after.histograms:
            vendor[f"{role}_s"] = after.histograms[role].minus(
                before.histograms.get(role)).stats()
    samples = [snap for s, snap in group if snap is not None]
    during = [snap for s, snap in group if snap is not None and s.when == "during"]
    for role in GAUGES:
        values = [snap.gauges[role] for snap in samples if role in snap.gauges]
        if values:
            # before and after are taken around the level, when it is idle: the mean
            # while it ran (during_mean) is what its load looked like to the engine
            inside = [snap.gauges[role] for snap in during if role in snap.gauges]
            vendor[role] = {"mean": sum(values) / len(values), "max": max(values),
                            "samples": len(values),
                            "during_mean": sum(inside) / len(inside) if inside else None,
                            "during_samples": len(inside)}
    ours = _ours(records)
    out: dict[str, Any] = {"vendor": vendor, "ours": ours}
    if cut:
        out["cut"] = True  # no scrape after it: ours may count requests theirs had not
    theirs = vendor.get("ttft_s") or {}
    if ours["ttft_s"]["n"] and theirs.get("n"):
        out["overhead_s"] = {k: (ours["ttft_s"][k] - theirs[k]
                                 if ours["ttft_s"][k] is not None and theirs.get(k) is not None
                                 else None) for k in ("mean", "p50", "p90")}
        out["counted_ours"] = theirs["n"] == ours["ttft_s"]["n"]
    return out


def _counters(before: Snapshot, after: Snapshot, window_s: float) -> dict[str, Any]:
    """The counters' differences over the window and their rates per wall second, and
    the mean batch (`busy_slots_per_decode`) over it; empty when the page has none. A
    counter that went down (the engine restarted) reads as not counted."""
    counters: dict[str, Any] = {}
    for role in COUNTERS:
        if role in after.gauges and role in before.gauges:
            diff = after.gauges[role] - before.gauges[role]
            counters[role] = None if diff < 0 else {
                "delta": diff, "per_s": diff / window_s if window_s > 0 else None}
    if not counters:
        return {}
    out: dict[str, Any] = {"window_s": window_s, "counters": counters}
    for mean, weight in _MEANS.items():
        if mean not in after.gauges or mean not in before.gauges:
            continue
        calls = counters.get(weight)
        out[mean] = None  # the engine restarted, or nothing ran: no mean
        if calls and calls["delta"] > 0:
            a = after.gauges[mean] * after.gauges[weight]
            b = before.gauges[mean] * before.gauges[weight]
            # llama.cpp prints 6 significant digits: after millions of calls the printed
            # mean cannot resolve a short window's, which is then not given
            blur = 1e-5 * (abs(a) + abs(b)) / calls["delta"]
            out[mean] = (a - b) / calls["delta"] if a >= b and blur <= 0.05 else None
    return out


def _ours(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """Our TTFT and ITL over the same requests (every request that streamed content)."""
    ttft = sorted(r.ttft_s for r in records if r.ttft_s is not None)
    gaps = sorted(b - a for r in records for (a, _), (b, _) in zip(r.chunks, r.chunks[1:],
                                                                 strict=False))
    return {"ttft_s": _plain(ttft), "itl_s": _plain(gaps)}


def _plain(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p90": None}

    def q(p: float) -> float:
        return values[min(int(p * len(values)), len(values) - 1)]

    return {"n": len(values), "mean": sum(values) / len(values), "p50": q(0.5), "p90": q(0.9)}
