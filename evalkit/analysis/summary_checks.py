"""summary.json's checks read as typed data: the data-quality checks every request goes
through (`checks`), the client's self-check (`client`) and the run's validity
(`validity`). What each check means is docs/methodology.md's ("Checks").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalkit.analysis.jsonread import as_mapping, read_as
from evalkit.analysis.summary_levels import GroupValidity, OutputLength, Pct


@dataclass(frozen=True)
class CacheCheck:
    """The same prompt twice: does a prefix cache serve the repeat?"""

    pairs: int | None = None
    first_ttft_s: float | None = None
    repeat_ttft_s: float | None = None
    repeat_over_first: float | None = None
    prefix_cache: bool | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class NetworkCheck:
    """The network round trip apart from generation, and its share of TTFT."""

    rtt_s: float | None = None
    rtt: Pct = field(default_factory=Pct)
    source: str | None = None
    baseline_ttft_p50_s: float | None = None
    share_of_ttft: float | None = None


@dataclass(frozen=True)
class HonestyCheck:
    """Billed tokens against the ones we counted (usage: streamed output; prompt: sent)."""

    checked: int | None = None
    disagreeing: int | None = None
    outliers: int | None = None
    prefill_disagreeing: int | None = None
    usage_over_counted: Pct = field(default_factory=Pct)
    flagged: bool | None = None
    tolerance: float | None = None
    template_tokens: int | None = None


@dataclass(frozen=True)
class StreamingCheck:
    """Did answers stream, or come in one chunk?"""

    checked: int | None = None
    one_chunk: int | None = None
    one_chunk_fraction: float | None = None
    flagged: bool | None = None
    tolerance: float | None = None


@dataclass(frozen=True)
class BufferingCheck:
    """Did the streams arrive buffered (`evalkit.analysis.buffering`)?"""

    checked: int | None = None
    buffered: int | None = None
    buffered_fraction: float | None = None
    chunks: int | None = None
    reads: int | None = None
    burst_chunks: int | None = None
    held_gap_s: float | None = None
    not_judged_client_bound: int | None = None
    flagged: bool | None = None
    tolerance: float | None = None


@dataclass(frozen=True)
class Checks:
    """The run's data-quality checks; each None where the run had nothing to check."""

    cache: CacheCheck | None = None
    network: NetworkCheck | None = None
    output_length: OutputLength | None = None
    usage_honesty: HonestyCheck | None = None
    prompt_honesty: HonestyCheck | None = None
    streaming: StreamingCheck | None = None
    buffering: BufferingCheck | None = None


@dataclass(frozen=True)
class ClientCheck:
    """The client's self-check over one phase or level: was it the bottleneck?"""

    loop_lag_p99_s: float | None = None
    cpu_fraction: float | None = None
    send_lag_p99_s: float | None = None
    send_lag_fraction: float | None = None
    client_bound: bool | None = None
    client_bound_reasons: tuple[str, ...] = ()
    #: client workers lost meanwhile (scale-out on Ray), in words
    lost: tuple[str, ...] = ()


@dataclass(frozen=True)
class Client:
    """The client's own health over the run: a bound client voids capacity conclusions."""

    loop_lag_p99_s: float | None = None
    cpu_fraction_max: float | None = None
    send_lag_p99_s: float | None = None
    send_lag_fraction_max: float | None = None
    #: None: unknown (a summary rebuilt without the self-checks the probe wrote)
    client_bound: bool | None = None
    client_bound_reasons: tuple[str, ...] = ()
    client_bound_phases: tuple[str, ...] = ()
    client_bound_levels: tuple[int, ...] = ()
    #: the bound sat where the capacity judgement is drawn (None: not said, or unknown)
    capacity_judgement_affected: bool | None = None
    phases: Mapping[str, ClientCheck] = field(default_factory=dict)
    levels: Mapping[int, ClientCheck] = field(default_factory=dict)

    @property
    def judgement_affected(self) -> bool:
        """The prober narrows `client_bound` to what voids a capacity judgement; prefer
        that, else a bound anywhere counts."""
        if self.capacity_judgement_affected is not None:
            return self.capacity_judgement_affected
        return self.client_bound is True


@dataclass(frozen=True)
class Validity:
    """The run's validity: valid | degraded | invalid | unknown, why, and each phase's and
    ramp level's own."""

    status: str = "unknown"
    reasons: tuple[str, ...] = ()
    phases: Mapping[str, GroupValidity] = field(default_factory=dict)
    levels: Mapping[int, GroupValidity] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: object) -> Validity:
        """The section as written; a status that is none of valid, degraded or invalid
        reads `unknown` (`evalkit.analysis.summary` judges an older summary without one
        from its baseline)."""
        v = read_as(cls, value)
        status = as_mapping(value).get("status")
        if status not in ("valid", "degraded", "invalid"):  # its reasons still say why
            return Validity("unknown", v.reasons, v.phases, v.levels)
        return v

    @property
    def invalid(self) -> bool:
        """The run verifies nothing."""
        return self.status == "invalid"


@dataclass(frozen=True)
class VendorGauge:
    """One of the vendor's gauges (requests running, waiting; KV cache use) over a
    window: the mean and highest of the samples the probe scraped, and the mean of those
    taken while the window ran (`during_mean`; the ones before and after it see an idle
    engine)."""

    mean: float | None = None
    max: float | None = None
    samples: int | None = None
    during_mean: float | None = None
    during_samples: int | None = None

    @property
    def load(self) -> tuple[float, float] | None:
        """(mean, highest) as the window's load looked to the engine: the mean of the
        samples taken while it ran, else of all of them; None when either figure is
        missing or the mean is no sample's (below 0, above the highest)."""
        mean = self.during_mean if self.during_mean is not None else self.mean
        if mean is None or self.max is None or not 0 <= mean <= self.max:
            return None
        return mean, self.max


@dataclass(frozen=True)
class VendorStats:
    """A histogram of the vendor's (or our figures over the same requests), in seconds:
    count, mean and percentiles (None where nothing was observed)."""

    n: int | None = None
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


@dataclass(frozen=True)
class VendorFigures:
    """What the vendor's engine said over one window: its histograms' differences and its
    gauges (each None where the page exported none)."""

    ttft_s: VendorStats | None = None
    itl_s: VendorStats | None = None
    tpot_req_s: VendorStats | None = None
    queue_time_s: VendorStats | None = None
    running: VendorGauge | None = None
    waiting: VendorGauge | None = None
    kv_cache: VendorGauge | None = None


@dataclass(frozen=True)
class OurFigures:
    """Our TTFT and ITL over the requests of the same window."""

    ttft_s: VendorStats | None = None
    itl_s: VendorStats | None = None


@dataclass(frozen=True)
class VendorWindow:
    """The vendor's figures beside ours over one phase or ramp level
    (`evalkit.analysis.vendor_metrics`)."""

    #: the phase the window belongs to (a level's: ramp, soak, ...)
    phase: str | None = None
    vendor: VendorFigures | None = None
    ours: OurFigures | None = None
    #: no scrape after it (the run was killed inside it)
    cut: bool = False
    #: ours minus theirs (the network and the queueing in front of the engine)
    overhead_s: VendorStats | None = None
    #: the vendor's TTFT histogram counted as many requests as we sent
    counted_ours: bool | None = None


@dataclass(frozen=True)
class VendorMetrics:
    """The scrape of the vendor's metrics page (`probe --metrics-url`,
    `evalkit.analysis.vendor_metrics`): what Q5's per-stream claim is checked against."""

    url: str | None = None
    #: vllm | sglang | tgi | llama.cpp (None: no family recognised)
    engine: str | None = None
    scrapes: int | None = None
    scrapes_ok: int | None = None
    scrape_errors: tuple[str, ...] = ()
    #: role (itl, tpot_req, ...) -> the metric name that filled it on the page
    families: Mapping[str, str] = field(default_factory=dict)
    #: a page with none of the families: the names it held instead
    unrecognised_names: tuple[str, ...] = ()
    per_stream_itl: bool | None = None
    request_level_tpot: bool | None = None
    #: the inter-token intervals the histogram counted during our run
    itl_observations: int | None = None
    #: the vendor's figures beside ours, by phase, and by level (whose `phase` says which)
    phases: Mapping[str, VendorWindow] = field(default_factory=dict)
    levels: Mapping[int, VendorWindow] = field(default_factory=dict)
    note: str | None = None

    @property
    def itl_name(self) -> str | None:
        """The per-token (inter-token) histogram's name on the page (None: none found)."""
        return self.families.get("itl")

    @property
    def tpot_req_name(self) -> str | None:
        """The request-level TPOT metric's name on the page (None: none found)."""
        return self.families.get("tpot_req")
