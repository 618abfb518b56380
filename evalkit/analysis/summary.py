"""summary.json read as typed data: what a run measured, for every reader.

`metrics.summarize` writes the `evalkit.summary/1` document; reconciliation, the report and
the comparison read it through `Summary.from_json`, which reads defensively (a file may be
old, hand-edited or tampered with: anything missing or malformed is None, never a crash) and
keeps the document itself, so `to_json` gives back exactly what was written. The `as_*`
helpers are the one way a reader turns a JSON value into a number, count, mapping or text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.analysis.buffering import buffered_words
from evalkit.analysis.ramp import DEGRADATION_METRICS
from evalkit.analysis.validity import group_validity


@dataclass(frozen=True)
class Pct:
    """p50/p90/p99 of one metric; any of them may be missing."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    n: int | None = None
    #: 95 % intervals by percentile name ((low, high), an end None where n cannot bound
    #: it); empty for a summary written before intervals (judged on the point, as then)
    ci: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def get(self, name: str) -> float | None:
        """A percentile by name ('p50', 'p90', 'p99')."""
        value: float | None = getattr(self, name, None)
        return value

    def interval(self, name: str) -> tuple[float | None, float | None] | None:
        """The 95 % interval of a percentile, None when the summary gives none."""
        return self.ci.get(name)


@dataclass(frozen=True)
class Goodput:
    """One level's goodput at one use case's SLO (`evalkit.analysis.goodput`): the share
    of its requests that met it, with its exact 95 % interval, and the output tokens/s
    those requests carried over the level's window."""

    fraction: float | None = None
    fraction_ci: tuple[float | None, float | None] | None = None
    tokens_per_s: float | None = None
    #: met | tie | missed | no_data against the summary's goodput target
    status: str | None = None
    met: int | None = None
    requests: int | None = None
    #: the output tokens those requests carried in all
    output_tokens: float | None = None


@dataclass(frozen=True)
class TokenSums:
    """A level's ok requests' input and output token counts as sums (and squares, cross
    products), from which a price per token gives a mean cost per request with its
    interval (`evalkit.review.cost`)."""

    requests: int
    input: float
    output: float
    input_sq: float
    output_sq: float
    input_output: float


def read_token_sums(value: Any) -> TokenSums | None:
    """A level's `ok_tokens`, None when absent or malformed (an older summary)."""
    d = as_mapping(value)
    n = as_count(d.get("requests"), least=0)
    nums = [as_number(d.get(k)) for k in ("input", "output", "input_sq", "output_sq",
                                          "input_output")]
    if n is None or any(v is None or v < 0 for v in nums):
        return None
    i, o, ii, oo, io = (float(v) for v in nums if v is not None)
    return TokenSums(n, i, o, ii, oo, io)


def read_goodput(value: Any) -> dict[str, Goodput]:
    """A level's `goodput` mapping, by profile name; {} when the summary has none."""
    out = {}
    for name, g in as_mapping(value).items():
        d = as_mapping(g)
        if not d:
            continue
        status = d.get("status")
        out[str(name)] = Goodput(as_number(d.get("fraction")), read_interval(d.get("fraction_ci")),
                                 as_number(d.get("tokens_per_s")),
                                 status if isinstance(status, str) else None,
                                 as_count(d.get("met"), least=0),
                                 as_count(d.get("requests"), least=0),
                                 as_number(d.get("output_tokens")))
    return out


@dataclass(frozen=True)
class Level:
    """One measured concurrency level (the baseline is level 1)."""

    concurrency: int
    ttft_s: Pct
    tpot_s: Pct
    itl_s: Pct
    stream_tokens_per_s: Pct
    aggregate_tokens_per_s: float | None
    requests: int | None
    failed: int | None
    #: the client was the bottleneck at this level: it supports no conclusion
    client_bound: bool = False
    #: in-stream gaps above the run's stall threshold (default 1 s)
    stalls: int | None = None
    #: the ramp's status for it (sustained, breached, failed, client_bound, no_data)
    status: str | None = None
    #: the aggregate rate's 95 % interval (batch means), None when the summary has none
    aggregate_ci: tuple[float | None, float | None] | None = None
    #: the metrics whose 95 % interval straddled the ramp's limit (status "tie"), and
    #: about how many requests at this level would decide them
    ties: tuple[str, ...] = ()
    tie_requests: int | None = None
    #: the failure rate's exact 95 % interval, None when the summary has none
    failure_ci: tuple[float | None, float | None] | None = None
    #: time to the first answer token (TTFA), and how many requests sent reasoning before
    #: their answer (TTFT is then a reasoning chunk, not the answer)
    ttfa_s: Pct = field(default_factory=Pct)
    reasoning_first: int | None = None
    #: the longest in-stream gap of the level, whatever the stall threshold
    max_gap_s: float | None = None
    #: the level's entry as written (for readers that show more than is typed here)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: the mean in-flight count it achieved fell short of its concurrency (the ramp's
    #: UNDERLOAD_SHARE): it is no evidence that a claim holds at that many streams
    underloaded: bool = False
    achieved_mean: float | None = None
    #: the limits the level breached (ttft, itl, a failure kind, precision, length)
    breaches: tuple[str, ...] = ()
    #: goodput at each use case's SLO, by profile name ({} for a summary without it)
    goodput: Mapping[str, Goodput] = field(default_factory=dict)
    #: the ok requests' token counts (None for a summary without them)
    ok_tokens: TokenSums | None = None
    #: requests refused as a configuration finding (a shape the endpoint refuses alone
    #: too: evalkit.analysis.configuration), left out of `failed`, and requests sent again
    #: after the server closed a reused connection unanswered (ours, not failures)
    configuration_failures: int = 0
    reconnects: int = 0

    @property
    def reasoning_came_first(self) -> bool:
        """Some request sent reasoning before its answer: its TTFT is no answer's time."""
        return bool(self.reasoning_first)

    def answer_latency(self) -> tuple[str, Pct]:
        """("TTFA", the TTFA distribution) when reasoning came first, else ("TTFT", TTFT):
        what a user waits for is the answer, and a reasoning chunk sent at once (even a
        placeholder) would otherwise set the figure a latency claim is judged on. A level
        where reasoning came first but TTFA is missing gives an empty TTFA, which decides
        nothing (never the TTFT instead)."""
        return ("TTFA", self.ttfa_s) if self.reasoning_came_first else ("TTFT", self.ttft_s)

    @property
    def failure_rate(self) -> float | None:
        """Share of requests that did not finish ok, a configuration finding's left out
        (None when outcomes are missing)."""
        judged = (self.requests or 0) - self.configuration_failures
        if judged <= 0 or self.failed is None:
            return None
        return self.failed / judged

    @property
    def mostly_failed(self) -> bool:
        """Most of its requests failed: its latency figures describe the few survivors."""
        return self.status == "failed" or (
            self.failure_rate is not None and self.failure_rate > 0.5)


#: `Summary.under_load`'s reason when the level is the max sustained one.
SUSTAINED = "max sustained"


@dataclass(frozen=True)
class Summary:
    """What the summary measured, read defensively: anything missing is None."""

    levels: tuple[Level, ...]
    baseline: Level | None
    prefill_tokens_per_s: float | None
    max_sustained: int | None
    first_degraded: str | None
    client_bound: bool
    #: the ramp's first breaching level, when the summary names it
    first_breach: int | None = None
    #: the run's validity (valid | degraded | invalid | unknown) and why
    validity: str = "unknown"
    validity_reasons: tuple[str, ...] = ()
    #: when the prefill fit's slope is indistinguishable from zero: only "faster than this"
    prefill_at_least: float | None = None
    #: summary.json's `vendor_metrics`: the scrape of the vendor's metrics page (None: the
    #: probe ran without --metrics-url)
    vendor_metrics: Mapping[str, Any] | None = None
    #: the prefill rate's 95 % interval (from the fit's slope); None where the summary
    #: gives none, and `prefill_ci_missing` when a current summary could not compute one
    #: (fewer than 3 prompt lengths): then the rate decides nothing
    prefill_ci: tuple[float | None, float | None] | None = None
    prefill_ci_missing: bool = False
    #: prompt lengths the prefill fit rests on
    prefill_lengths: int | None = None
    #: the ramp's lowest tie between the max sustained level and the first breach
    first_tie: int | None = None
    #: summary.json's `precision` (evalkit.analysis.precision; None: no canary was sent)
    precision: Mapping[str, Any] | None = None
    #: the highest ramp level within each use case's SLO (goodput at or above the target
    #: from the lowest level up), None where not even the first; {} for an older summary
    max_goodput: Mapping[str, int | None] = field(default_factory=dict)
    #: why the run's chunk timing is no engine's (`checks.buffering` flagged: the stream
    #: arrived buffered), in words; None: it arrived as sent, or an older summary
    buffered: str | None = None
    #: the document as written, every key kept (`to_json`), including those not read here
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: Any) -> Summary | None:
        """Read an `evalkit.summary/1` document; None when nothing in it was measured."""
        return measurements(doc)

    def to_json(self) -> dict[str, Any]:
        """The document this was read from, unchanged: readers never rewrite the contract."""
        return dict(self.raw)

    def level(self, concurrency: int) -> Level | None:
        """The measured level at `concurrency` (the baseline is level 1)."""
        return next((lv for lv in self.levels if lv.concurrency == concurrency), None)

    def under_load(self) -> tuple[Level, str] | None:
        """The ramp level the 'under load' figures come from, and why: the max sustained
        level, else (none held, or a single level) the highest measured. The one rule
        page one, the charts and the comparison all use."""
        held = self.sustained()
        if held is not None:
            return held, SUSTAINED
        return (self.ramp[-1], "highest level measured") if self.ramp else None

    def sustained(self) -> Level | None:
        """The max sustained ramp level, or None when no level held: figures titled "at
        max sustained load" (the comparison's rows, Q6's per-stream rate) have no value
        then, since an overloaded top level is not one."""
        return next((lv for lv in self.ramp if lv.concurrency == self.max_sustained), None)

    @property
    def ramp(self) -> tuple[Level, ...]:
        """The ramp's levels, lowest first: `levels` without the baseline standing in as
        level 1 where the ramp measured no level 1 itself."""
        return tuple(lv for lv in self.levels if lv is not self.baseline)

    @property
    def top(self) -> int | None:
        """The highest concurrency measured."""
        return max((lv.concurrency for lv in self.levels), default=None)


def as_number(value: Any) -> float | None:
    """A finite float, or None: bool is not a number here (although Python says it is),
    nor is a string of digits, NaN, an infinity or an int beyond float range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range is no measurement
        return None
    return number if math.isfinite(number) else None


def as_count(value: Any, least: int | None = None) -> int | None:
    """A whole number (3 or 3.0; not True, "3" or 3.5), None below `least` when given:
    an imported file's negative token count is no count."""
    number = as_number(value)
    if number is None or number != int(number) or (least is not None and number < least):
        return None
    return int(number)


def as_mapping(value: Any) -> Mapping[str, Any]:
    """value if it is a mapping, else an empty one: input JSON may hold anything anywhere."""
    return value if isinstance(value, Mapping) else {}


def ramp_levels(doc: Any) -> list[Mapping[str, Any]]:
    """The ramp's level entries of a summary.json document as written, lowest first (those
    without a concurrency of at least 1 left out): what the charts draw."""
    summary = Summary.from_json(doc)
    return [lv.raw for lv in summary.ramp] if summary else []


def as_text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def read_pct(value: Any) -> Pct:
    d = as_mapping(value)
    return Pct(as_number(d.get("p50")), as_number(d.get("p90")), as_number(d.get("p99")),
               as_count(d.get("n")),
               {k: ci for k in ("p50", "p90", "p99") if (ci := read_interval(d.get(f"{k}_ci")))})


def read_interval(value: Any) -> tuple[float | None, float | None] | None:
    """[low, high] as summary.json writes it (ends may be null); None when absent."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    return as_number(value[0]), as_number(value[1])


def read_level(d: Mapping[str, Any], concurrency: int) -> Level:
    outcomes = as_mapping(d.get("outcomes"))
    counts = {k: as_count(v) or 0 for k, v in outcomes.items()}
    requests = as_count(d.get("requests")) or (sum(counts.values()) if counts else None)
    refused = min(as_count(d.get("configuration_failures"), least=0) or 0, requests or 0)
    failed = (max(requests - counts.get("ok", 0) - refused, 0)
              if counts and requests is not None else None)
    bound = d.get("client_bound") is True or d.get("status") == "client_bound"
    status = d.get("status") if isinstance(d.get("status"), str) else None
    achieved = as_mapping(d.get("achieved_concurrency"))
    return Level(concurrency, read_pct(d.get("ttft_s")), read_pct(d.get("tpot_s")),
                 read_pct(d.get("itl_s")),
                 read_pct(d.get("stream_tokens_per_s")), as_number(d.get("aggregate_tokens_per_s")),
                 requests, failed, bound, as_count(d.get("stalls")), status,
                 read_interval(d.get("aggregate_tokens_per_s_ci")),
                 tuple(str(t) for t in ties) if isinstance(ties := d.get("ties"), list) else (),
                 as_count(d.get("tie_requests")), read_interval(d.get("failure_rate_ci")),
                 read_pct(d.get("ttfa_s")), as_count(d.get("reasoning_first"), least=0),
                 as_number(d.get("max_gap_s")), d,
                 achieved.get("underloaded") is True or status == "underloaded",
                 as_number(achieved.get("mean")),
                 tuple(str(b) for b in br) if isinstance(br := d.get("breaches"), list) else (),
                 read_goodput(d.get("goodput")), read_token_sums(d.get("ok_tokens")),
                 refused, as_count(d.get("reconnects"), least=0) or 0)


def read_validity(summary: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The run's validity as the summary states it; an older summary without one is judged
    from its baseline's outcomes, and one with neither is `unknown` (verifies nothing)."""
    v = as_mapping(summary.get("validity"))
    if v.get("status") in ("valid", "degraded", "invalid"):
        reasons = v.get("reasons")
        return str(v["status"]), tuple(str(r) for r in reasons or [] if isinstance(
            reasons, list))
    outcomes = as_mapping(as_mapping(summary.get("baseline")).get("outcomes"))
    counts = {str(k): as_count(n) or 0 for k, n in outcomes.items()}
    if not counts:
        return "unknown", ("the summary states no validity and no baseline outcomes",)
    g = group_validity(sum(counts.values()), counts, max_failure_rate=0.01)
    return str(g["status"]), tuple(f"baseline: {r}" for r in g["reasons"])


def measurements(summary: Mapping[str, Any] | None) -> Summary | None:
    """Read an `evalkit.summary/1` dict; None when there is nothing measured in it."""
    if not isinstance(summary, Mapping):
        return None
    ramp = as_mapping(summary.get("ramp"))
    levels: dict[int, Level] = {}
    raw_levels = ramp.get("levels")
    for raw in raw_levels if isinstance(raw_levels, list) else []:
        c = as_count(as_mapping(raw).get("concurrency"))
        if c is not None and c >= 1:
            levels[c] = read_level(as_mapping(raw), c)
    base = as_mapping(summary.get("baseline"))
    baseline = read_level(base, 1) if base else None
    if baseline is not None and 1 not in levels:
        levels[1] = baseline
    pre = as_mapping(summary.get("prefill"))
    prefill = as_number(pre.get("tokens_per_s"))
    validity, reasons = read_validity(summary)
    if not levels and prefill is None and validity != "invalid":
        return None
    degraded = ramp.get("first_degraded")
    return Summary(
        levels=tuple(levels[c] for c in sorted(levels)),
        baseline=baseline,
        prefill_tokens_per_s=prefill,
        max_sustained=as_count(ramp.get("max_sustained_concurrency")),
        first_degraded=degraded if degraded in DEGRADATION_METRICS else None,
        client_bound=judgement_affected(as_mapping(summary.get("client"))),
        first_breach=as_count(ramp.get("first_breach_concurrency")),
        validity=validity,
        validity_reasons=reasons,
        prefill_at_least=as_number(as_mapping(summary.get("prefill")).get("tokens_per_s_at_least")),
        vendor_metrics=as_mapping(summary.get("vendor_metrics")) or None,
        prefill_ci=read_interval(pre.get("tokens_per_s_ci")),
        prefill_ci_missing="tokens_per_s_ci" in pre and pre.get("tokens_per_s_ci") is None,
        prefill_lengths=as_count(pre.get("lengths")),
        first_tie=as_count(ramp.get("first_tie_concurrency")),
        precision=as_mapping(summary.get("precision")) or None,
        max_goodput={str(k): as_count(v, least=1)
                     for k, v in as_mapping(ramp.get("max_goodput_concurrency")).items()},
        buffered=read_buffered(as_mapping(as_mapping(summary.get("checks")).get("buffering"))),
        raw=summary,
    )


def read_buffered(check: Mapping[str, Any]) -> str | None:
    """The buffering check's reason when it is flagged (None: not flagged, or no check),
    its counts read as counts (anything else is left out of the words)."""
    if check.get("flagged") is not True:
        return None
    return buffered_words({k: as_count(check.get(k), least=0)
                           for k in ("chunks", "reads", "buffered", "checked")})


def judgement_affected(client: Mapping[str, Any]) -> bool:
    """The prober narrows `client_bound` to what voids a capacity judgement; prefer that."""
    affected = client.get("capacity_judgement_affected")
    if isinstance(affected, bool):
        return affected
    return client.get("client_bound") is True
