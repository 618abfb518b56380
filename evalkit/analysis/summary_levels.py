"""summary.json's phase and level entries read as typed data: a distribution (`Pct`), a
level's goodput, token sums, canaries and the engine's own timings, and `Level`, the
statistics of one group of requests (the baseline, a ramp level, the soak, the open loop;
`evalkit.analysis.stats.phase_stats` writes them).

Read defensively (`evalkit.analysis.jsonread`): anything missing or malformed is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.analysis.jsonread import (
    Interval,
    Json,
    as_count,
    as_mapping,
    as_number,
    read_as,
    read_interval,
)

#: the percentiles a distribution may carry, and the ones every one does
PERCENTILES = ("p50", "p90", "p99", "p10", "p1")
_FIGURES = frozenset((*PERCENTILES, "mean", "min", "max", "n"))


@dataclass(frozen=True)
class Pct:
    """A distribution's percentiles (any may be missing), its count and spread."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    n: int | None = None
    #: 95 % intervals by percentile name ((low, high), an end None where n cannot bound
    #: it); empty for a summary written before intervals (judged on the point, as then)
    ci: Mapping[str, Interval] = field(default_factory=dict)
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    #: the stream rate's low tail (what a slow stream gets)
    p10: float | None = None
    p1: float | None = None
    #: fewer than 100 samples: its p99 is no more than a hint
    low_confidence: bool | None = None

    def get(self, name: str) -> float | None:
        """A figure by its summary.json name ('p50', 'p90', 'p99', 'p10', 'p1', 'mean',
        'min', 'max', 'n'); None for any other name."""
        value: float | None = getattr(self, name, None) if name in _FIGURES else None
        return value

    def interval(self, name: str) -> Interval | None:
        """The 95 % interval of a percentile, None when the summary gives none."""
        return self.ci.get(name)

    @property
    def measured(self) -> bool:
        """Any percentile was measured (an empty distribution says nothing)."""
        return any(self.get(p) is not None for p in PERCENTILES)

    @classmethod
    def from_json(cls, value: object) -> Pct:
        """A distribution as summary.json writes it (`read_pct`)."""
        return read_pct(value)


def read_pct(value: Any) -> Pct:
    """A distribution as summary.json writes it (`stats.percentiles`)."""
    d = as_mapping(value)
    low = d.get("low_confidence")
    return Pct(as_number(d.get("p50")), as_number(d.get("p90")), as_number(d.get("p99")),
               as_count(d.get("n")),
               {k: ci for k in PERCENTILES if (ci := read_interval(d.get(f"{k}_ci")))},
               as_number(d.get("mean")), as_number(d.get("min")), as_number(d.get("max")),
               as_number(d.get("p10")), as_number(d.get("p1")),
               low if isinstance(low, bool) else None)


@dataclass(frozen=True)
class Goodput:
    """One level's goodput at one use case's SLO (`evalkit.analysis.goodput`): the share
    of its requests that met it, with its exact 95 % interval, and the output tokens/s
    those requests carried over the level's window."""

    fraction: float | None = None
    fraction_ci: Interval | None = None
    tokens_per_s: float | None = None
    #: met | tie | missed | no_data against the summary's goodput target
    status: str | None = None
    met: int | None = field(default=None, metadata={"least": 0})
    requests: int | None = field(default=None, metadata={"least": 0})
    #: the output tokens those requests carried in all
    output_tokens: float | None = None


def read_goodput(value: Any) -> dict[str, Goodput]:
    """A level's `goodput` mapping, by profile name; {} when the summary has none (an
    entry that is not an object, or an empty one, is left out)."""
    return {str(name): read_as(Goodput, g) for name, g in as_mapping(value).items()
            if as_mapping(g)}


@dataclass(frozen=True)
class TokenSums:
    """A group's ok requests' input and output token counts as sums (and squares, cross
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


@dataclass(frozen=True)
class Canaries:
    """A level's canaries (`evalkit.analysis.precision`): did its answers match those
    given alone, and did a model answer that had not answered alone?"""

    concurrency: int | None = None
    canaries: int | None = None
    compared: int | None = None
    matches: int | None = None
    cut_short: int | None = None
    match_rate: float | None = None
    match_rate_ci: Interval | None = None
    first_divergence_tokens: float | None = None
    logprob_drift: float | None = None
    models_seen: tuple[str, ...] = ()
    fingerprints_seen: tuple[str, ...] = ()
    models_not_seen_alone: tuple[str, ...] = ()
    floor: float | None = None
    #: hold | breach | tie | no_data
    status: str | None = None
    #: model_reported | diverged_at_start | varied (None: matched)
    kind: str | None = None
    budget: int | None = None
    #: why a grown tie stopped (evalkit.analysis.canarycall.GROWTH_ENDS)
    grew: str | None = None
    undecided: bool = False


@dataclass(frozen=True)
class EngineTimings:
    """The engine's own account of a group's ok requests (llama.cpp's `timings`), beside
    our TTFT (`evalkit.analysis.stats.engine_timings`)."""

    requests: int | None = None
    prompt_s: Pct = field(default_factory=Pct)
    ttft_s: Pct = field(default_factory=Pct)
    ttft_beyond_prompt_s: Pct = field(default_factory=Pct)
    tpot_s: Pct = field(default_factory=Pct)


@dataclass(frozen=True)
class GroupValidity:
    """A phase's or a level's validity (`evalkit.analysis.validity.group_validity`)."""

    status: str | None = None
    reasons: tuple[str, ...] = ()
    requests: int | None = None
    ok: int | None = None


@dataclass(frozen=True)
class OutputLength:
    """Did outputs come as long as asked (`evalkit.analysis.stats.output_length_check`)?"""

    checked: int | None = None
    short: int | None = None
    short_fraction: float | None = None
    tolerance: float | None = None
    flagged: bool | None = None


@dataclass(frozen=True)
class Connections:
    """The connections a group's requests opened inside their sends, beside its TTFT
    (`evalkit.analysis.stats.connection_cost`)."""

    opened: int | None = None
    requests: int | None = None
    connect_s: Pct = field(default_factory=Pct)
    #: None: no connection was TLS
    tls_s: Pct | None = None
    #: the TTFT of the ok requests that opened one, their connect time included
    first_ttft_s: Pct = field(default_factory=Pct)


@dataclass(frozen=True)
class Level:
    """One group of requests' statistics: a ramp level (the baseline reads as level 1),
    the soak, the open loop."""

    concurrency: int
    ttft_s: Pct = field(default_factory=Pct)
    tpot_s: Pct = field(default_factory=Pct)
    itl_s: Pct = field(default_factory=Pct)
    stream_tokens_per_s: Pct = field(default_factory=Pct)
    aggregate_tokens_per_s: float | None = None
    requests: int | None = None
    #: requests that did not end ok, a configuration finding's left out (None: no outcomes)
    failed: int | None = None
    #: the client was the bottleneck at this level: it supports no conclusion
    client_bound: bool = False
    #: in-stream gaps above the run's stall threshold (default 1 s)
    stalls: int | None = None
    #: the ramp's status for it (sustained, breached, failed, client_bound, no_data)
    status: str | None = None
    #: the aggregate rate's 95 % interval (batch means), None when the summary has none
    aggregate_ci: Interval | None = None
    #: the metrics whose 95 % interval straddled the ramp's limit (status "tie"), and
    #: about how many requests at this level would decide them
    ties: tuple[str, ...] = ()
    tie_requests: int | None = None
    #: the failure rate's exact 95 % interval, None when the summary has none
    failure_ci: Interval | None = None
    #: time to the first answer token (TTFA), and how many requests sent reasoning before
    #: their answer (TTFT is then a reasoning chunk, not the answer)
    ttfa_s: Pct = field(default_factory=Pct)
    reasoning_first: int | None = None
    #: the longest in-stream gap of the level, whatever the stall threshold
    max_gap_s: float | None = None
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
    #: outcome counts (ok, rejected, error, timeout, incomplete), as summary.json has them
    outcomes: Mapping[str, int] = field(default_factory=dict)
    e2e_s: Pct = field(default_factory=Pct)
    tokens_per_chunk: Pct = field(default_factory=Pct)
    output_tokens: Pct = field(default_factory=Pct)
    #: the share of requests turned away (admission)
    admission_failure_rate: float | None = None
    #: some output token counts are ours (the server reported no usage)
    output_tokens_estimated: bool = False
    #: outputs under load against those alone (the ramp's `length` limit), and its interval
    length_ratio: float | None = None
    #: the level's canaries (None: it sent none)
    precision: Canaries | None = None
    #: the engine's own timings (None: it sent none)
    engine_timings: EngineTimings | None = None
    #: the group's validity (valid | degraded | invalid, and why)
    validity: GroupValidity | None = None
    #: the most common error message of its failed requests
    top_error: str | None = None
    #: streams with a stall in them
    stalled_streams: int | None = None
    output_length: OutputLength | None = None
    #: the soak's drift from its early to its late part (free-form; None elsewhere)
    drift: Json | None = None
    #: the open loop's send lag and arrival rate (None elsewhere)
    send_lag_s: Pct = field(default_factory=Pct)
    arrival_rps: float | None = None
    #: whether the JSON carried a stall count at all (older summaries did not)
    has_stalls: bool = False
    #: the connections its requests opened in their sends (None: none did)
    connections: Connections | None = None
    #: the entry as written (for readers not yet moved to the fields above)
    raw: Mapping[str, Json] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: object) -> Level:
        """A phase's entry (the soak, the open loop) at the concurrency it names."""
        return read_level(value)

    @property
    def ok(self) -> int | None:
        """Its requests that ended ok (None: its outcomes name none)."""
        return self.outcomes.get("ok")

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
        rate = self.failure_rate
        return self.status == "failed" or (rate is not None and rate > 0.5)


def read_level(value: Json, concurrency: int | None = None) -> Level:
    """A phase's or level's entry; `concurrency` for a phase that names none (the baseline
    is level 1), else the entry's own (0 when it names none)."""
    d = as_mapping(value)
    outcomes = {str(k): n for k, v in as_mapping(d.get("outcomes")).items()
                if (n := as_count(v)) is not None}
    counts = {k: as_count(v) or 0 for k, v in as_mapping(d.get("outcomes")).items()}
    requests = as_count(d.get("requests")) or (sum(counts.values()) if counts else None)
    refused = min(as_count(d.get("configuration_failures"), least=0) or 0, requests or 0)
    failed = (max(requests - counts.get("ok", 0) - refused, 0)
              if counts and requests is not None else None)
    status = given if isinstance(given := d.get("status"), str) else None
    bound = d.get("client_bound") is True or status == "client_bound"
    achieved = as_mapping(d.get("achieved_concurrency"))
    ties, breaches = d.get("ties"), d.get("breaches")
    if concurrency is None:
        concurrency = as_count(d.get("concurrency")) or 0
    canaries, timings = d.get("precision"), d.get("engine_timings")
    validity, length = d.get("validity"), d.get("output_length")
    error, estimated = d.get("top_error"), d.get("output_tokens_estimated")
    return Level(
        concurrency, read_pct(d.get("ttft_s")), read_pct(d.get("tpot_s")),
        read_pct(d.get("itl_s")), read_pct(d.get("stream_tokens_per_s")),
        as_number(d.get("aggregate_tokens_per_s")), requests, failed, bound,
        as_count(d.get("stalls")), status, read_interval(d.get("aggregate_tokens_per_s_ci")),
        tuple(str(t) for t in ties) if isinstance(ties, list) else (),
        as_count(d.get("tie_requests")), read_interval(d.get("failure_rate_ci")),
        read_pct(d.get("ttfa_s")), as_count(d.get("reasoning_first"), least=0),
        as_number(d.get("max_gap_s")),
        achieved.get("underloaded") is True or status == "underloaded",
        as_number(achieved.get("mean")),
        tuple(str(b) for b in breaches) if isinstance(breaches, list) else (),
        read_goodput(d.get("goodput")), read_token_sums(d.get("ok_tokens")),
        refused, as_count(d.get("reconnects"), least=0) or 0,
        outcomes=outcomes, e2e_s=read_pct(d.get("e2e_s")),
        tokens_per_chunk=read_pct(d.get("tokens_per_chunk")),
        output_tokens=read_pct(d.get("output_tokens")),
        admission_failure_rate=as_number(d.get("admission_failure_rate")),
        output_tokens_estimated=estimated is True,
        length_ratio=as_number(d.get("length_ratio")),
        precision=read_as(Canaries, canaries) if isinstance(canaries, Mapping) else None,
        engine_timings=read_as(EngineTimings, timings) if isinstance(timings, Mapping)
        else None,
        validity=read_as(GroupValidity, validity) if isinstance(validity, Mapping) else None,
        top_error=error if isinstance(error, str) else None,
        stalled_streams=as_count(d.get("stalled_streams")),
        output_length=read_as(OutputLength, length) if isinstance(length, Mapping) else None,
        drift=d.get("drift"), send_lag_s=read_pct(d.get("send_lag_s")),
        arrival_rps=as_number(d.get("arrival_rps")), has_stalls="stalls" in d,
        connections=read_as(Connections, conns) if isinstance(conns := d.get("connections"),
                                                               Mapping) else None, raw=d)
