"""summary.json's `voice` section as typed data: realtime calls level by level
(`evalkit.analysis.voice` computes it from the turn records; `to_json` writes it,
`from_json` reads it back defensively, so what was written is what is read).

A voice run (`evalkit probe --api openai-realtime`) measures what a caller hears, per
level of concurrent calls: time to first audio (TTFA) from the last voiced frame we sent,
the vendor's VAD silence window as its own term, the simulated 1x player's underruns,
audio ahead of playback, barge-in, and failures by kind; then which of TTFA, underruns,
admission and failures degrades first, and the most concurrent calls held within the
voice-agent SLO. docs/probing.md ("Realtime voice sessions") says what each figure is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from evalkit.analysis.jsonread import Interval, Json, read_as
from evalkit.analysis.summary_levels import PERCENTILES, Pct

#: the things a caller suffers, in the order two that breach together are named
VOICE_METRICS = ("ttfa", "underruns", "admission", "failures")
#: each of them in a reader's words (the scorecard, the comparison and the catalog name
#: what degraded first with these)
VOICE_METRIC_WORDS = {"ttfa": "time to first audio", "underruns": "underruns",
                      "admission": "calls refused", "failures": "failed turns"}
#: a level against the voice SLO: within it, outside it, a tie (an interval straddles a
#: limit: decides nothing), or not judged (client-bound, nothing measured)
SLO_CALLS = ("within", "outside", "tie", "not_judged")


@dataclass(frozen=True)
class Share:
    """`count` of `of`, the share, its exact 95 % interval, and the call against its limit
    (clear | tie | breach; None: not judged against one)."""

    count: int | None = field(default=None, metadata={"least": 0})
    of: int | None = field(default=None, metadata={"least": 0})
    share: float | None = None
    ci: Interval | None = None
    call: str | None = None


@dataclass(frozen=True)
class VoiceClient:
    """The client's self-check over one level: a client that paused cannot judge a
    vendor's pause."""

    loop_lag_p99_s: float | None = None
    cpu_fraction: float | None = None
    #: the client's share of a core per concurrent call
    cpu_per_call: float | None = None
    #: p99 over the level's turns of the latest frame's lateness past its tick (s)
    pace_late_p99_s: float | None = None
    #: None: the summary does not say (read as bound: nothing is judged then)
    client_bound: bool | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class VoiceWindow:
    """The level's steady state: the span where all its calls were in flight (the calls'
    starts and the last ones' drain left out); the turns that began in it are judged."""

    start_s: float | None = None
    end_s: float | None = None
    #: plateau | peak | whole (`evalkit.analysis.stats.steady_state_window`)
    basis: str | None = None
    mean_inflight: float | None = None


@dataclass(frozen=True)
class VoiceAudioTotals:
    """What a level's admitted calls sent and heard, in all their turns: what a call
    costs at Q3's audio prices (`evalkit.review.voicecost`). None: not measured (a
    summary or turn records written before evalkit kept the caller's audio)."""

    calls: int | None = field(default=None, metadata={"least": 0})
    #: the calls' time on the line in all: each from its first frame sent to its last
    #: answer byte (or failure)
    call_s: float | None = None
    #: the caller's audio sent (every frame of the utterances, silence in them included)
    input_audio_s: float | None = None
    #: the answer audio received
    output_audio_s: float | None = None


@dataclass(frozen=True)
class VoiceLevel:
    """One level of concurrent calls: its figures, and its judgement."""

    concurrency: int | None = None
    calls: int | None = None
    #: turns that began in the steady-state window (judged), and in the whole level
    turns: int | None = None
    turns_in_level: int | None = None
    window: VoiceWindow | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    #: from the last voiced frame sent to the first answer audio byte (answered turns)
    ttfa_s: Pct = field(default_factory=Pct)
    #: TTFA less the silence window we asked the vendor's VAD to wait (at most what its
    #: speech_stopped says it waited): the vendor's part, which the level is judged on
    ttfa_judged_s: Pct = field(default_factory=Pct)
    #: the vendor's VAD: the silence its speech_stopped counted past the last voiced
    #: frame (audio time), and when speech_stopped arrived after that frame was sent
    vad_window_s: Pct = field(default_factory=Pct)
    vad_wait_s: Pct = field(default_factory=Pct)
    text_ttft_s: Pct = field(default_factory=Pct)
    answer_audio_s: Pct = field(default_factory=Pct)
    #: audio seconds received per wall second over an answer (above 1: it keeps ahead)
    ahead_ratio: Pct = field(default_factory=Pct)
    #: from the caller's interruption to the last answer audio after it
    barge_in_s: Pct = field(default_factory=Pct)
    #: the 1x player over the answered turns: dry spells and their seconds in all, the
    #: share of answers with any, and with a noticeable one (judged)
    underruns: int | None = field(default=None, metadata={"least": 0})
    underrun_s: float | None = None
    with_underrun: Share = field(default_factory=Share)
    noticeable_underrun: Share = field(default_factory=Share)
    #: calls refused (not admitted), turns of admitted calls that failed
    admission: Share = field(default_factory=Share)
    failures: Share = field(default_factory=Share)
    #: failed turns by outcome (rejected: refused calls), and the vendor's most frequent
    #: words (cleaned)
    failure_kinds: Mapping[str, int] = field(default_factory=dict)
    top_error: str | None = None
    client: VoiceClient = field(default_factory=VoiceClient)
    #: judged TTFA p90 over the base level's, its interval, and the call against the limit
    ttfa_p90_ratio: float | None = None
    ttfa_p90_ratio_ci: Interval | None = None
    ttfa_call: str | None = None
    breaches: tuple[str, ...] = ()
    ties: tuple[str, ...] = ()
    #: sustained | breached | failed | tie | client_bound | no_data
    status: str | None = None
    #: SLO_CALLS, and why where not within
    slo: str | None = None
    slo_reasons: tuple[str, ...] = ()
    #: the audio its admitted calls sent and heard, and their time on the line
    audio_totals: VoiceAudioTotals = field(default_factory=VoiceAudioTotals)


@dataclass(frozen=True)
class VoiceSlo:
    """The voice-agent SLO the levels are held to, and the degradation limits."""

    #: SPEC's voice-agent profile: (judged) TTFA p90 at most this, no stall above `stall_s`
    ttfa_p90_s: float | None = None
    stall_s: float | None = None
    #: share of answers with a noticeable underrun, of calls refused, of turns failed
    underrun_share: float | None = None
    failure_rate: float | None = None
    #: a level degrades on TTFA when its p90's interval lies wholly above this many
    #: times the base level's p90
    ttfa_p90_ratio: float | None = None


@dataclass(frozen=True)
class VoiceAudio:
    """What the caller said: the buyer's recordings or the utterances shipped with
    evalkit (public: a vendor that reads the source can recognise them)."""

    #: buyer | shipped
    source: str | None = None
    utterances: int | None = None
    public: bool | None = None
    note: str | None = None


@dataclass(frozen=True)
class VoiceValidity:
    """The voice run's validity (valid | degraded | invalid) and why."""

    status: str | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class VoiceSection:
    """Realtime calls under load, level by level, and what the ramp concluded."""

    api: str | None = None
    #: server_vad | client
    detection: str | None = None
    frame_ms: int | None = None
    #: the silence window asked of the vendor's VAD (ms)
    silence_ms: int | None = None
    turns_per_call: int | None = None
    audio: VoiceAudio = field(default_factory=VoiceAudio)
    levels: tuple[VoiceLevel, ...] = ()
    #: the level every other is judged against (the lowest judged one)
    base_concurrency: int | None = None
    first_degraded: str | None = None
    first_degraded_level: int | None = None
    degraded_together: tuple[str, ...] = ()
    max_sustained_calls: int | None = None
    max_calls_within_slo: int | None = None
    #: the highest level measured was within the SLO: the true maximum may be higher
    within_slo_lower_bound: bool | None = None
    client_bound_levels: tuple[int, ...] = ()
    #: the client's share of a core per concurrent call (median over the levels)
    cpu_per_call: float | None = None
    slo: VoiceSlo = field(default_factory=VoiceSlo)
    validity: VoiceValidity = field(default_factory=VoiceValidity)
    rules: Mapping[str, str] = field(default_factory=dict)
    note: str | None = None

    @classmethod
    def from_json(cls, value: object) -> VoiceSection:
        """Read defensively: anything missing or malformed is its default."""
        return read_as(cls, value)

    def to_json(self) -> dict[str, Json]:
        """summary.json's `voice` value (distributions as `stats.percentiles` writes them)."""
        out: dict[str, Any] = _plain(self)
        return out

    def level(self, concurrency: int) -> VoiceLevel | None:
        """The level of `concurrency` calls, if measured."""
        return next((lv for lv in self.levels if lv.concurrency == concurrency), None)

    @property
    def measured(self) -> bool:
        """Any level answered a turn."""
        return any(lv.ttfa_s.measured for lv in self.levels)


def pct_json(p: Pct) -> dict[str, Any]:
    """A distribution in summary.json's shape (`read_pct` reads it back equal)."""
    out: dict[str, Any] = {"p50": p.p50, "p90": p.p90, "p99": p.p99, "n": p.n,
                           "low_confidence": p.low_confidence, "mean": p.mean,
                           "min": p.min, "max": p.max}
    for name in PERCENTILES:
        if name in ("p10", "p1") and p.get(name) is not None:
            out[name] = p.get(name)
        if (ci := p.ci.get(name)) is not None:
            out[f"{name}_ci"] = list(ci)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Pct):
        return pct_json(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
