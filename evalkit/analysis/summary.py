"""summary.json read as typed data: what a run measured, for every reader.

`summarize` writes the `evalkit.summary/1` document; `Summary.from_json` reads it once
(`evalkit.rundir.open_run` for a run directory), defensively: a file may be old,
hand-edited or tampered with, so anything missing or malformed is None, never a crash.
`Summary.sections` is every top-level key typed (`Sections`: the sections' types are in
`summary_levels`, `summary_sections`, `summary_checks` and `summary_workload`); the flat
fields are the readings the review judges on. The document itself is kept, so `to_json`
gives back exactly what was written: summary.json's keys are a contract.

A `Summary` still reads as a mapping of summary.json's keys for the readers not yet moved
to its fields (tests/test_typed_reads.py lists them, and that list only shrinks). The
`as_*` helpers (`evalkit.analysis.jsonread`) are the one way a reader turns a JSON value
into a number, count, mapping or text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evalkit.analysis.buffering import buffered_words
from evalkit.analysis.jsonread import (
    Json,
    as_count,
    as_list,
    as_mapping,
    as_number,
    as_text,
    read_as,
    read_interval,
)
from evalkit.analysis.summary_checks import Checks, Client, Validity, VendorMetrics
from evalkit.analysis.summary_levels import (
    Goodput,
    Level,
    Pct,
    TokenSums,
    read_goodput,
    read_level,
    read_pct,
    read_token_sums,
)
from evalkit.analysis.summary_sections import (
    Configuration,
    Connect,
    Precision,
    Prefill,
    PromptText,
    Ramp,
    RateLimits,
)
from evalkit.analysis.summary_voice import VoiceSection
from evalkit.analysis.summary_workload import TraceSection, WorkloadSection
from evalkit.analysis.validity import group_validity

__all__ = ["Goodput", "Level", "Pct", "Sections", "Summary", "TokenSums", "as_count",
           "as_mapping", "as_number", "as_text", "measurements", "ramp_levels",
           "read_goodput", "read_interval", "read_level", "read_pct", "read_token_sums"]

#: the schema a summary.json names
SCHEMA = "evalkit.summary/1"


@dataclass(frozen=True)
class Sections:
    """summary.json's top-level keys, in the order `summarize` writes them, each typed
    (None: the run had no such phase, or the summary predates the key)."""

    schema: str | None = None
    tool: str | None = None
    tool_version: str | None = None
    suite_version: str | None = None
    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    reconnects: int | None = None
    configuration: Configuration | None = None
    output_tokens_estimated: bool = False
    #: the limits the run was judged by (`evalkit.analysis.thresholds.Thresholds`)
    thresholds: Json | None = None
    connect: Connect | None = None
    #: the baseline reads as level 1
    baseline: Level | None = None
    prefill: Prefill | None = None
    ramp: Ramp | None = None
    soak: Level | None = None
    #: the open loop at a fixed arrival rate
    rate: Level | None = None
    precision: Precision | None = None
    workload: WorkloadSection | None = None
    trace: TraceSection | None = None
    checks: Checks | None = None
    client: Client | None = None
    validity: Validity = field(default_factory=Validity)
    rate_limits: RateLimits | None = None
    prompt_text: PromptText | None = None
    #: complete | interrupted | ... (the probe's, after the fact)
    run_status: str | None = None
    #: the scrape of the vendor's metrics page (None: the probe ran without --metrics-url)
    vendor_metrics: VendorMetrics | None = None
    #: realtime calls level by level (None: no voice run, `--api openai-realtime`)
    voice: VoiceSection | None = None

    @classmethod
    def from_json(cls, value: object) -> Sections:
        """Every key by its type (`read_as`), the baseline as level 1."""
        doc = as_mapping(value)
        base = read_as(cls, {k: v for k, v in doc.items() if k != "baseline"})
        baseline = doc.get("baseline")
        return replace(base, baseline=read_level(baseline, 1)
                       if isinstance(baseline, Mapping) and baseline else None)


#: `Summary.under_load`'s reason when the level is the max sustained one.
SUSTAINED = "max sustained"


@dataclass(frozen=True)
class Summary(Mapping[str, Any]):
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
    precision: Mapping[str, Json] | None = None
    #: the highest ramp level within each use case's SLO (goodput at or above the target
    #: from the lowest level up), None where not even the first; {} for an older summary
    max_goodput: Mapping[str, int | None] = field(default_factory=dict)
    #: why the run's chunk timing is no engine's (`checks.buffering` flagged: the stream
    #: arrived buffered), in words; None: it arrived as sent, or an older summary
    buffered: str | None = None
    #: every top-level key of the document, typed
    sections: Sections = field(default_factory=Sections, repr=False, compare=False)
    #: the document as written, every key kept (`to_json`), including those not read here
    raw: Mapping[str, Json] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: object) -> Summary:
        """Read an `evalkit.summary/1` document (anything in it missing or malformed is
        None; `measured` says whether anything is left). ValueError, naming what it got,
        when the document is not a JSON object at all."""
        if not isinstance(doc, Mapping) or isinstance(doc, Summary):
            raise ValueError(f"a summary is a JSON object, not {type(doc).__name__}")
        return _read(doc)

    def to_json(self) -> dict[str, Json]:
        """The document this was read from, unchanged: readers never rewrite the contract."""
        return dict(self.raw)

    @property
    def measured(self) -> bool:
        """Anything was measured: a level, a prefill rate, a voice level, or a run found
        invalid."""
        return bool(self.levels) or self.prefill_tokens_per_s is not None \
            or self.validity == "invalid" or bool(self.voice and self.voice.levels)

    @property
    def voice(self) -> VoiceSection | None:
        """The voice run's calls, level by level (None: not a voice run)."""
        return self.sections.voice

    # summary.json's keys as a mapping, for the readers not yet moved to the fields

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __bool__(self) -> bool:
        """A reading is there, whatever its document holds (`if summary:` asks that, as
        it did when a reader got a Summary or None)."""
        return True

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


def ramp_levels(doc: Any) -> list[Mapping[str, Any]]:
    """The ramp's level entries of a summary.json document as written, lowest first (those
    without a concurrency of at least 1 left out): what the charts draw."""
    summary = measurements(doc)
    return [lv.raw for lv in summary.ramp] if summary else []


def read_validity(summary: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The run's validity as the summary states it; an older summary without one is judged
    from its baseline's outcomes, and one with neither is `unknown` (verifies nothing)."""
    v = as_mapping(summary.get("validity"))
    if v.get("status") in ("valid", "degraded", "invalid"):
        return str(v["status"]), tuple(str(r) for r in as_list(v.get("reasons")))
    outcomes = as_mapping(as_mapping(summary.get("baseline")).get("outcomes"))
    counts = {str(k): as_count(n) or 0 for k, n in outcomes.items()}
    if not counts:
        return "unknown", ("the summary states no validity and no baseline outcomes",)
    g = group_validity(sum(counts.values()), counts, max_failure_rate=0.01)
    return str(g["status"]), tuple(f"baseline: {r}" for r in g["reasons"])


def measurements(summary: object) -> Summary | None:
    """What a summary measured; None when it is not a JSON object or nothing in it was
    measured. A `Summary` already read is not read again."""
    if isinstance(summary, Summary):
        return summary if summary.measured else None
    if not isinstance(summary, Mapping):
        return None
    read = Summary.from_json(summary)
    return read if read.measured else None


def _read(summary: Mapping[str, Any]) -> Summary:
    """`Summary.from_json`'s reading: the sections typed, and the flat readings."""
    sections = Sections.from_json(summary)
    ramp = sections.ramp or Ramp()
    levels = {lv.concurrency: lv for lv in ramp.levels}
    baseline = sections.baseline
    if baseline is not None and 1 not in levels:
        levels[1] = baseline
    pre = as_mapping(summary.get("prefill"))
    validity, reasons = read_validity(summary)
    return Summary(
        levels=tuple(levels[c] for c in sorted(levels)),
        baseline=baseline,
        prefill_tokens_per_s=as_number(pre.get("tokens_per_s")),
        max_sustained=ramp.max_sustained_concurrency,
        first_degraded=ramp.first_degraded,
        client_bound=judgement_affected(as_mapping(summary.get("client"))),
        first_breach=ramp.first_breach_concurrency,
        validity=validity,
        validity_reasons=reasons,
        prefill_at_least=as_number(pre.get("tokens_per_s_at_least")),
        prefill_ci=read_interval(pre.get("tokens_per_s_ci")),
        prefill_ci_missing="tokens_per_s_ci" in pre and pre.get("tokens_per_s_ci") is None,
        prefill_lengths=as_count(pre.get("lengths")),
        first_tie=ramp.first_tie_concurrency,
        precision=as_mapping(summary.get("precision")) or None,
        max_goodput=ramp.max_goodput_concurrency,
        buffered=read_buffered(as_mapping(as_mapping(summary.get("checks")).get("buffering"))),
        sections=sections,
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
