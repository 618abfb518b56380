"""Every threshold a judgement uses, in one place.

Three sets, by who applies them and when:

- `Thresholds`: when a measurement becomes a flag as the run is summarised (a ramp level
  breaches at 2× the baseline's TTFT or TPOT p90 or 1 % failures; a stall, a short output,
  a usage disagreement, a prefix cache). `evalkit.analysis.summarize` applies them; summary.json
  echoes them (`ramp.thresholds`, `thresholds`).
- `ClientLimits`: when the client, not the vendor, set the pace (the profile's
  `client_check`; `evalkit.probe.client.selfcheck.judge_client` applies them during the run).
- `Tolerances` and `SloProfile`: how far a vendor's claim may sit from the measurement
  and still hold, and each use case's latency limits (`evalkit.review.reconcile`, at review).

Defaults come from the SPEC (MLPerf's interactive and server limits, reading speed of
~250 words/min). A review can override any tolerance with a small YAML or JSON file:

    ttft_rel: 0.30
    slo_profiles:
      voice_agent: {ttft_p90_s: 0.4}

Unknown keys are errors everywhere here (a typo must not silently fall back to a
default). The scorecard prints the tolerances it used beside every judgement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from evalkit.analysis.jsonread import read_as_written
from evalkit.errors import EvalkitError, InputError, UsageError

#: Bound on an override file: it holds a dozen numbers.
MAX_OVERRIDE_BYTES = 64 * 1024

PERCENTILE_SHARE = {"p50": 0.50, "p90": 0.90, "p99": 0.99}

#: a socket read carrying at least this many content chunks, after `HELD_GAP_S`, is a
#: burst a sender held (`evalkit.analysis.buffering`): nginx's default 4-8 KB buffers pass 16-40
#: OpenAI chunks a read; speculative decoding accepts a handful of tokens a step, and
#: sends them in one chunk
BURST_CHUNKS = 8
#: the wait before a burst (s): its chunks were held at least this long. A client behind
#: on a fast stream merges what arrived while it parsed: a few ms at most
HELD_GAP_S = 0.010


@dataclass(frozen=True)
class Thresholds:
    """Where a measurement becomes a flag as a run is summarised; SPEC defaults,
    overridable per run (`SummaryMeta.thresholds`)."""

    ttft_p90_ratio: float = 2.0
    tpot_p90_ratio: float = 2.0
    admission_failure_rate: float = 0.01
    stall_s: float = 1.0
    #: an output more than this share short of the requested length is flagged
    output_shortfall: float = 0.05
    #: |usage / our count - 1| above this is flagged; wide because our count uses an
    #: OpenAI encoding, not the vendor's tokenizer (10-20 % apart is normal)
    usage_disagreement: float = 0.25
    #: the vendor's prompt_tokens beyond our count x (1 +/- this), plus the chat template
    #: (`prompt_template_tokens`), is a disagreement; most requests disagreeing is flagged
    prompt_disagreement: float = 0.25
    #: tokens a chat template may add to the prompt we counted (role headers, a default
    #: system prompt): gpt-oss's adds some 70, Llama 3.1's some 30
    prompt_template_tokens: float = 128
    #: repeat TTFT below this share of the first one means a prefix cache served it
    cache_ttft_ratio: float = 0.5
    #: more than this share of streamed requests with most of their output in one chunk
    #: means the endpoint did not stream (its TPOT and rates describe no stream)
    unstreamed_share: float = 0.05
    #: more than this share of streamed requests arriving buffered (most of their chunks
    #: in bursts a gateway held: `evalkit.analysis.buffering`) means TTFT and ITL measure
    #: the buffer, not the engine
    buffered_share: float = 0.05
    #: a level's canary match rate may fall this far below the vendor's own rate alone
    #: before its interval can breach precision (evalkit.analysis.precision)
    precision_match_tolerance: float = 0.10
    #: a level's mean output length may fall this share below the baseline's before its
    #: interval can breach `length` (MLPerf's TEST09 allows 10 %)
    length_tolerance: float = 0.10
    #: a level whose differing answers (two or more) all part within this many tokens
    #: differs from the start, as another model's answers would; otherwise the same
    #: model's answers varied under load
    early_divergence_tokens: float = 1
    #: the sliding window (s) the requests and tokens before the first 429 are counted
    #: over, then scaled to a minute (`evalkit.analysis.ratelimits`): 60, as limits are
    #: quoted; shorter only to test a limiter whose own window is shorter
    rate_limit_window_s: float = 60.0
    #: share of a level's requests that must meet a use case's SLO for the level to count
    #: as within it (goodput; `ramp.max_goodput_concurrency`)
    goodput_target: float = 0.99

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise UsageError(f"threshold {name} must be a positive number, got {value!r}")
        if self.goodput_target > 1:
            raise UsageError(f"threshold goodput_target is a share (0.99 = 99 %), at most 1, "
                             f"got {self.goodput_target!r}")

    @classmethod
    def from_dict(cls, d: object) -> Thresholds:
        """Overrides as plain data. An unknown key is a UsageError naming it (a misspelt
        threshold would otherwise leave the default in force unnoticed), and so is a value
        that is not a number (true, "2")."""
        if not isinstance(d, Mapping):
            raise UsageError(f"thresholds: expected a mapping, got {_show(d)}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(map(str, d)) - set(known))
        if unknown:
            raise UsageError(f"thresholds: unknown key {_show(unknown[0])}; known: "
                             f"{', '.join(known)}")
        return cls(**{str(k): _number(f"threshold {k}", v, error=UsageError)
                      for k, v in d.items()})


@dataclass(frozen=True, kw_only=True)
class ClientLimits:
    """When the client, not the vendor, set the pace
    (`evalkit.probe.client.selfcheck.judge_client`); a profile's `client_check`
    (`evalkit.probe.plan.settings` reads and checks it)."""

    loop_lag_p99_s: float
    #: (a limit of 1 or more never binds: how a test or a known-busy host turns one off)
    cpu_fraction: float
    #: share of chunks read late enough to merge with the next one
    coalesced_fraction: float
    #: share of the offered load the client's own send lag held back (None: not judged)
    send_lag_fraction: float | None = None
    #: merged reads below this count are two close server writes, not a late client
    coalesced_min: int = 5
    #: a realtime call's frames late past their tick, p99 over a level's turns, in
    #: frames, past which the level is client-bound (None: one frame,
    #: `evalkit.probe.realtime.ramp.VoiceClientLimits`). A caller's audio that left late
    #: reaches the vendor's VAD late; TTFA is timed from the frame's real send, so a test
    #: or a known-busy host that widens this still times the vendor's part alone
    voice_pace_late_frames: float | None = None


@dataclass(frozen=True)
class SloProfile:
    """A use case's latency limits; `None` means the use case sets no such limit."""

    label: str
    ttft_p90_s: float | None = None
    tpot_p90_s: float | None = None
    #: longest tolerated in-stream gap, judged on ITL p99 (the summary has no maximum)
    itl_p99_s: float | None = None
    above_reading_speed: bool = False
    #: batch: no latency limit, judged on aggregate throughput (and price)
    throughput_only: bool = False

    @classmethod
    def from_json(cls, doc: object) -> SloProfile:
        """A profile as scorecard.json writes it, read back defensively: a label that is
        no text reads "" (the page then names the use case by its key), a limit that is
        no number reads as none, a flag that is not true as false."""
        return cls(**asdict(read_as_written(_SloProfileDoc, doc)))

    def shown_as(self, name: str) -> str:
        """The use case's name as the page says it: its label, else its key in words."""
        return self.label or name.replace("_", " ")


@dataclass(frozen=True)
class _SloProfileDoc:
    """`SloProfile` as scorecard.json writes it, every field defaulted for `read_as`."""

    label: str = ""
    ttft_p90_s: float | None = None
    tpot_p90_s: float | None = None
    itl_p99_s: float | None = None
    above_reading_speed: bool = False
    throughput_only: bool = False


def default_slo_profiles() -> dict[str, SloProfile]:
    """The SPEC's default profiles, from public anchors."""
    return {
        "voice_agent": SloProfile("voice agent", ttft_p90_s=0.5, itl_p99_s=0.3),
        "live_suggestions": SloProfile("live suggestions", ttft_p90_s=0.45, tpot_p90_s=0.040),
        "interactive_chat": SloProfile(
            "interactive chat", ttft_p90_s=2.0, tpot_p90_s=0.200, above_reading_speed=True
        ),
        "batch": SloProfile("batch", throughput_only=True),
    }


@dataclass(frozen=True)
class Tolerances:
    """How far a claim may sit from a measurement (or from another claim) and still hold."""

    #: claimed TTFT may be beaten by the measurement by at most this share (0.25 = ±25%)
    ttft_rel: float = 0.25
    #: claimed throughput (per stream, aggregate) vs measured
    throughput_rel: float = 0.25
    #: claimed maximum concurrent streams vs the ramp's breaking level
    concurrency_rel: float = 0.25
    #: claimed prefill / decode rates vs measured (the prefill fit is noisier)
    rate_rel: float = 0.50
    #: headline / production-panel p50 above this needs a written reconciliation
    headline_panel_ratio: float = 2.0
    #: a written reconciliation shorter than this is not one
    min_reconciliation_chars: int = 40
    #: a measured level "matches" a claimed concurrency within this factor
    concurrency_match_factor: float = 2.0
    #: tokens/s a reader consumes (~250 words/min at ~0.75 words/token)
    reading_speed_tokens_per_s: float = 5.5
    #: which TPOT percentile stands for "nearly every stream" (p90: 90% of streams are faster)
    reading_speed_percentile: str = "p90"
    #: share of failed requests (rejected, error, timeout, incomplete) a level may have
    max_failure_rate: float = 0.01
    #: a reasoning chunk this soon after the request was sent (TTFT p50) was not generated
    #: from the prompt: no engine prefills that fast, so it is a placeholder...
    placeholder_lead_s: float = 0.001
    #: ...when the answer then waits this long after it (TTFA − TTFT and the longest
    #: in-stream gap, p50): a real reasoning stream keeps sending (the voice agent's gap limit)
    placeholder_silence_s: float = 0.3
    #: the requests (or tokens) per minute at the first 429 may fall short of the claimed
    #: limit by this share; the endpoint's x-ratelimit-limit-* header may differ from the
    #: claim by this share either way
    rate_limit_rel: float = 0.25
    slo_profiles: dict[str, SloProfile] = field(default_factory=default_slo_profiles)

    def to_dict(self) -> dict[str, object]:
        """Plain data for scorecard.json."""
        return asdict(self)

    @classmethod
    def from_json(cls, doc: object) -> Tolerances:
        """The tolerances as scorecard.json writes them (`to_dict`), read back
        defensively: a setting missing or malformed keeps its default, a number keeps the
        type it was written in (so a scorecard read back writes its bytes again)."""
        return read_as_written(cls, doc)


_SCALARS = {f.name: f for f in fields(Tolerances) if f.name != "slo_profiles"}
#: measured may fall short of claimed by this share; 1 or more would accept nothing at all
_SHORTFALL_SHARES = {"throughput_rel", "rate_rel", "rate_limit_rel"}
_PROFILE_KEYS = {f.name for f in fields(SloProfile)}


def _show(value: Any) -> str:
    """A value from an override file, clipped: it is printed in an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "...'"


def _number(where: str, value: Any, *, positive: bool = True,
            error: type[EvalkitError] = InputError) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value)) or abs(value) > 1e9):
        raise error(f"{where}: expected a number, got {_show(value)}")
    if positive and value <= 0:
        raise error(f"{where}: must be greater than 0, got {value!r}")
    return float(value)


def _profile(name: str, base: SloProfile | None, data: Any) -> SloProfile:
    if not isinstance(data, dict):
        raise InputError(f"slo_profiles.{name}: expected a mapping, got {_show(data)}")
    unknown = sorted(set(map(str, data)) - _PROFILE_KEYS)
    if unknown:
        raise InputError(f"slo_profiles.{name[:40]}: unknown field {_show(unknown[0])}")
    profile = base or SloProfile(label=name.replace("_", " "))
    changes: dict[str, Any] = {}
    for key, value in data.items():
        where = f"slo_profiles.{name}.{key}"
        if key == "label":
            changes[key] = str(value)
        elif key in ("above_reading_speed", "throughput_only"):
            if not isinstance(value, bool):
                raise InputError(f"{where}: expected true or false, got {_show(value)}")
            changes[key] = value
        else:
            changes[key] = None if value is None else _number(where, value)
    return replace(profile, **changes)


def tolerances_from_dict(data: object, base: Tolerances | None = None) -> Tolerances:
    """Apply an override mapping to the defaults; every bad key or value is an InputError."""
    base = base or Tolerances()
    if data is None:
        return base
    if not isinstance(data, dict):
        raise InputError(f"tolerances: expected a mapping, got {type(data).__name__}")
    changes: dict[str, Any] = {}
    for key, value in data.items():
        if key == "slo_profiles":
            if not isinstance(value, dict):
                raise InputError(f"slo_profiles: expected a mapping, got {_show(value)}")
            profiles = dict(base.slo_profiles)
            for name, pdata in value.items():
                profiles[str(name)] = _profile(str(name), profiles.get(str(name)), pdata)
            changes[key] = profiles
        elif key == "reading_speed_percentile":
            if not isinstance(value, str) or value not in PERCENTILE_SHARE:
                raise InputError(f"reading_speed_percentile: expected one of p50, p90, p99, "
                                 f"got {_show(value)}")
            changes[key] = value
        elif key in _SCALARS:
            number = _number(str(key), value)
            if key in _SHORTFALL_SHARES and number >= 1:
                raise InputError(f"{key}: a shortfall share must be below 1 (0.25 = 25% short), "
                                 f"got {_show(value)}")
            changes[key] = int(number) if key == "min_reconciliation_chars" else number
        else:
            raise InputError(f"tolerances: unknown field {_show(key)}")
    return replace(base, **changes)


def load_tolerances(path: str | Path | None) -> Tolerances:
    """Read an override file (YAML or JSON, safe loader, size-bounded); None = defaults."""
    if path is None:
        return Tolerances()
    p = Path(path)
    try:
        raw = p.read_bytes()[: MAX_OVERRIDE_BYTES + 1]
    except OSError as exc:
        raise InputError(f"{p}: cannot read tolerances file: {exc.strerror}") from None
    if len(raw) > MAX_OVERRIDE_BYTES:
        raise InputError(f"{p}: tolerances file is larger than {MAX_OVERRIDE_BYTES} bytes")
    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (UnicodeDecodeError, ValueError, yaml.YAMLError, RecursionError) as exc:
        raise InputError(f"{p}: not a readable tolerances file ({type(exc).__name__})") from None
    try:
        return tolerances_from_dict(data)
    except InputError as exc:
        raise InputError(f"{p}: {exc}") from None
