"""What a run does: the user's flags (`ProbeConfig`) over a profile, checked once into
`SuiteSettings`.

A profile (`evalkit/profiles/quick.json`, `standard.json`, or a JSON file that `extends`
one) is plain data a user may write by hand, so it is read as hostile: a key nobody reads,
a missing key or a wrong type is a `UsageError` naming the key, never a `KeyError` deep in
a phase. Every other module reads the typed settings; only `to_dict` goes back to the
JSON shape, for run.json and `probe --dry-run`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.analysis.thresholds import ClientLimits
from evalkit.corpus.text import PromptText
from evalkit.errors import UsageError
from evalkit.probe.plan.profiles import deep_merge, load_profile
from evalkit.probe.plan.voice import VoiceOptions
from evalkit.sanitize import clean
from evalkit.workload.model import Trace, Workload

#: Phases in the order the suite runs them; `rate` replaces `ramp` when --rate is given;
#: `workload` runs when a workload or conversations are given, `trace` with a trace.
PHASES = ("connect", "baseline", "prefill", "cache", "ramp", "workload", "trace", "soak",
          "rate")


@dataclass(frozen=True)
class ProbeConfig:
    """What to probe and how; every field left None takes the profile's value."""

    base_url: str
    model: str
    profile: str = "quick"
    phases: tuple[str, ...] | None = None
    levels: tuple[int, ...] | None = None
    max_concurrency: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    prompts_file: Path | None = None
    #: the buyer's corpus the prompts are cut from (`evalkit.corpus.store`; None: the
    #: default folder, $EVALKIT_CORPUS or the user's data directory); `no_corpus`: the
    #: public text that ships with evalkit, even when a corpus exists (recognisable)
    corpus_dir: Path | None = None
    no_corpus: bool = False
    #: the prompt text already chosen (`evalkit.probe.plan.prompttext.with_text`: a
    #: `PromptText`, the CLI's, so it is read once); None: the run chooses it
    prompt_text: PromptText | None = None
    api: str = "openai-chat"
    #: the environment variable holding the API key ("": the API's own,
    #: `evalkit.probe.apis.base.key_env`: OPENAI_API_KEY, GEMINI_API_KEY for gemini,
    #: ANTHROPIC_API_KEY for anthropic-messages; resolved as the run starts)
    api_key_env: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    extra_body: dict[str, Json] = field(default_factory=dict)
    rate: float | None = None
    timeout_s: float | None = None
    #: the longest one request may take in all (None: the read timeout plus 0.5 s per
    #: requested token, `Target.request_deadline`)
    deadline_s: float | None = None
    #: how the API key is sent (a key of evalkit.probe.apis.registry.AUTH_STYLES; None: the
    #: API's own style) and Azure OpenAI's api-version query parameter (None: not sent)
    auth: str | None = None
    api_version: str | None = None
    #: the vendor's Prometheus metrics page, scraped around each phase and during each
    #: level (evalkit.analysis.vendor_metrics); summary.json gets `vendor_metrics` (None: no
    #: scrape)
    metrics_url: str | None = None
    #: run the ramp, soak and rate levels on Ray (`evalkit.probe.load.scaleout`): "auto"
    #: starts a local instance, an address ("ray://head:10001", "head:6379") joins a
    #: cluster; None: all in this process, no Ray
    ray: str | None = None
    #: Ray actors that share each level (None: one per CPU of the cluster)
    ray_workers: int | None = None
    seed: int = 0
    #: who the endpoint belongs to, as the user names it: `compare` groups runs by it
    vendor: str | None = None
    #: the model and endpoint this run stands in for (the demo: the reference endpoint plays
    #: a sample vendor); every scorecard from the run says so on page one
    stands_in_for: dict[str, str] | None = None
    #: the vendor's questionnaire, read as the test plan (evalkit.probe.plan.claims): ramp
    #: levels that bracket every claimed concurrency, request floors for the percentiles
    #: claimed
    questionnaire: Path | None = None
    #: the most requests the ramp may plan (a paying user's budget); levels beyond it go
    budget_requests: int | None = None
    #: each ramp level sized for this 95 % interval width on the percentile it is judged on,
    #: a share in quantile terms (0.05: a p90 known from about the p87.5 to the p92.5;
    #: evalkit.probe.plan.claims.size_levels); None: the profile's durations and the claims' floors
    interval_width: float | None = None
    #: ask for the exact output length (`ignore_eos`, `min_tokens`; None: the profile's
    #: `force_output_length`); the user-agent (None: httpx's own); X-Request-ID on each
    #: request. Each marks the traffic as a probe to a vendor that looks, so all are off
    #: unless asked for.
    force_length: bool | None = None
    user_agent: str | None = None
    tag_requests: bool = False
    #: sent on every request alike (evalkit.probe.apis.sampling.Sampling): temperature (None: the
    #: vendor's default, sent not at all), a seed and logprobs (both marks: off unless asked)
    temperature: float | None = 0.0
    request_seed: int | None = None
    logprobs: bool = False
    #: deep-merged over the profile (e.g. {"ramp": {"level_duration_s": 1}}): for tests/notebooks
    overrides: dict[str, Json] = field(default_factory=dict)
    #: the buyer's workload (evalkit.workload): a workload file, their conversations, a
    #: Mooncake trace (replayed `trace_speed` times as fast); or, from a notebook or the
    #: questionnaire, the workload and trace already read (`workload`, `trace`)
    workload_file: Path | None = None
    conversations_file: Path | None = None
    trace_file: Path | None = None
    trace_speed: float = 1.0
    #: users in flight per workload level (None: the workload's own levels; for
    #: --conversations alone, 1)
    users: tuple[int, ...] | None = None
    workload: Workload | None = None
    trace: Trace | None = None
    #: a voice run's own settings (`--api openai-realtime`; None: the defaults)
    voice: VoiceOptions | None = None


# --------------------------------------------------------------------------- the typed settings
# Each field's metadata names its reader: the one place a profile value is checked.

def _count(minimum: int = 1) -> Callable[[str, Any], int]:
    """A reader of whole counts of at least `minimum`."""
    def read(path: str, value: Any) -> int:
        if not (isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value) and float(value).is_integer() and value >= minimum):
            raise UsageError(f"profile: {path} must be an integer of at least {minimum}, "
                             f"got {value!r}")
        return int(value)
    return read


def _positive(path: str, value: Any) -> float:
    if not (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0):
        raise UsageError(f"profile: {path} must be a positive number, got {value!r}")
    return float(value)


_seconds = _positive  # (durations read as any positive number)


def _optional(read: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    return lambda path, v: None if v is None else read(path, v)


def _counts(path: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise UsageError(f"profile: {path} must be a non-empty list of integers, got {value!r}")
    return tuple(_count()(f"{path}[{i}]", v) for i, v in enumerate(value))


def _levels_named(path: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        raise UsageError(f"profile: {path} must be a list of levels, got {value!r}")
    return tuple(sorted({_count()(f"{path}[{i}]", v) for i, v in enumerate(value)}))


def _flag(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"profile: {path} must be true or false, got {value!r}")
    return value


def _text(path: str, value: Any) -> str:
    if not isinstance(value, str):
        raise UsageError(f"profile: {path} must be text, got {value!r}")
    return value


def _phases(path: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
        raise UsageError(f"profile: {path} must be a list of phase names")
    unknown = [p for p in value if p not in PHASES]
    if unknown:
        raise UsageError(f"unknown phase(s) {', '.join(unknown)}; known: {', '.join(PHASES)}")
    return tuple(p for p in PHASES if p in value)  # the suite's own order


def _floors(path: str, value: Any) -> dict[int, int]:
    if not isinstance(value, Mapping):
        raise UsageError(f"profile: {path} must map a level to its least request count")
    out: dict[int, int] = {}
    for k, v in value.items():
        try:
            level = int(k)
        except (TypeError, ValueError):
            raise UsageError(f"profile: {path} is keyed by level (an integer), "
                             f"got {k!r}") from None
        out[_count()(f"{path} key", level)] = _count()(f"{path}.{k}", v)
    return out


def _reads(read: Callable[[str, Any], Any]) -> dict[str, Any]:
    """A settings field's metadata: the reader that checks its profile value."""
    return {"read": read}

def _section(cls: type, readers: Mapping[str, Callable[[str, Any], Any]] | None = None
             ) -> Callable[[str, Any], Any]:
    return lambda path, v: _build(cls, v, path, readers)


def _build(cls: type, data: Any, path: str,
           readers: Mapping[str, Callable[[str, Any], Any]] | None = None) -> Any:
    """`cls` from a profile's object at `path`: unknown keys, missing keys and wrong types
    are usage errors that name the key. Each field is checked by its metadata's reader, or
    by `readers` for a class defined elsewhere."""
    if not isinstance(data, Mapping):
        raise UsageError(f"profile: {path or 'the profile'} must be a JSON object")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known) - {"extends"})
    if unknown:
        where = f"{path}." if path else ""
        raise UsageError(f"profile: unknown key(s) {', '.join(where + k for k in unknown)}; "
                         f"known here: {', '.join(known)}")
    values: dict[str, Any] = {}
    for name, f in known.items():
        key = f"{path}.{name}" if path else name
        if name in data:
            read = readers[name] if readers else f.metadata["read"]
            values[name] = read(key, data[name])
        elif not _has_default(f):
            raise UsageError(f"profile: {key} is missing (the built-in profiles show every "
                             "key: `evalkit probe --dry-run` prints them)")
    return cls(**values)


def _has_default(f: Any) -> bool:
    return f.default is not MISSING or f.default_factory is not MISSING

@dataclass(frozen=True, kw_only=True)
class ConnectSettings:
    """The connect phase: one stream, then round trips to split network from server."""

    rtt_samples: int = field(metadata=_reads(_count(0)))


@dataclass(frozen=True, kw_only=True)
class BaselineSettings:
    """Requests one at a time: the unloaded figures every ramp level is judged against."""

    requests: int = field(metadata=_reads(_count()))


@dataclass(frozen=True, kw_only=True)
class PrefillSettings:
    """The prompt-length scan the prefill fit is drawn through."""

    prompt_tokens: tuple[int, ...] = field(metadata=_reads(_counts))
    repeats: int = field(metadata=_reads(_count()))
    output_tokens: int = field(metadata=_reads(_count()))


@dataclass(frozen=True, kw_only=True)
class CacheSettings:
    """The same long prompt twice: does a prefix cache answer the second?"""

    pairs: int = field(metadata=_reads(_count()))
    prompt_tokens: int = field(metadata=_reads(_count()))
    output_tokens: int = field(metadata=_reads(_count()))


@dataclass(frozen=True, kw_only=True)
class RampSettings:
    """The closed-loop ramp: the levels held, for how long, and where it stops."""

    levels: tuple[int, ...] = field(metadata=_reads(_counts))
    level_duration_s: float = field(metadata=_reads(_seconds))
    #: levels past the first breach that still run to confirm it
    confirm_levels: int = field(metadata=_reads(_count(0)))
    max_concurrency: int = field(metadata=_reads(_count()))
    #: least requests every level starts before it may end: a level is judged on the 95 %
    #: interval of its p90, which has an upper end only from 36 requests on
    #: (`evalkit.analysis.intervals.samples_for`); fewer make every level a tie, never sustained
    level_min_requests: int = field(default=0, metadata=_reads(_count(0)))
    #: least requests a level must start, by level (the plan's floors for claimed
    #: percentiles, or sized for --interval-width)
    min_requests: Mapping[int, int] = field(default_factory=dict, metadata=_reads(_floors))
    #: levels a claim names: they still run after a confirmed breach (the plan's)
    claimed: tuple[int, ...] = field(default=(), metadata=_reads(_levels_named))
    #: the most requests a level may start (None: as many as its duration allows): a
    #: panel sample's budget (`evalkit panel sample --budget`)
    level_max_requests: int | None = field(default=None, metadata=_reads(_optional(_count())))

    def floor(self, level: int) -> int:
        """The least requests `level` must start before it may end (0: none)."""
        return max(int(self.min_requests.get(level, 0)), self.level_min_requests)


@dataclass(frozen=True, kw_only=True)
class SoakSettings:
    """One level held long, for drift and leaks (None: the ramp's max sustained level)."""

    duration_s: float = field(metadata=_reads(_seconds))
    concurrency: int | None = field(default=None, metadata=_reads(_optional(_count())))


@dataclass(frozen=True, kw_only=True)
class CanarySettings:
    """Canary prompts (evalkit.probe.plan.canaries): each answered `alone_repeats` times during
    the baseline, then one request in `every` of a ramp, soak or rate level is one of
    them in turn, so they ride the same batches as the rest. `count` 0: none.
    A ramp level whose precision is a tie when its time is up runs on, in the same mix,
    until the interval decides or it has compared `level_budget` canary answers (0: it
    never runs on; evalkit.probe.plan.canarywatch)."""

    count: int = field(default=4, metadata=_reads(_count(0)))
    alone_repeats: int = field(default=2, metadata=_reads(_count(1)))
    every: int = field(default=9, metadata=_reads(_count(2)))
    level_budget: int = field(default=16, metadata=_reads(_count(0)))


@dataclass(frozen=True, kw_only=True)
class RateSettings:
    """Open-loop Poisson arrivals (`--rate`)."""

    duration_s: float = field(metadata=_reads(_seconds))
    rate: float | None = field(default=None, metadata=_reads(_optional(_positive)))


#: The readers of a profile's `client_check`: `ClientLimits` lives with every other
#: threshold (`evalkit.analysis.thresholds`), its checks here with every other profile value's.
_CLIENT_LIMITS: dict[str, Callable[[str, Any], Any]] = {
    "loop_lag_p99_s": _seconds, "cpu_fraction": _positive, "coalesced_fraction": _positive,
    "send_lag_fraction": _optional(_positive), "coalesced_min": _count(0),
    "voice_pace_late_frames": _optional(_positive)}


@dataclass(frozen=True, kw_only=True)
class SuiteSettings:
    """The profile with the run's flags applied: what the run actually does."""

    name: str = field(default="custom", metadata=_reads(_text))
    description: str = field(default="", metadata=_reads(_text))
    phases: tuple[str, ...] = field(metadata=_reads(_phases))
    prompt_tokens: int = field(metadata=_reads(_count()))
    output_tokens: int = field(metadata=_reads(_count()))
    timeout_s: float = field(metadata=_reads(_seconds))
    deadline_s: float | None = field(default=None, metadata=_reads(_optional(_seconds)))
    force_output_length: bool = field(default=False, metadata=_reads(_flag))
    connect: ConnectSettings = field(metadata=_reads(_section(ConnectSettings)))
    baseline: BaselineSettings = field(metadata=_reads(_section(BaselineSettings)))
    prefill: PrefillSettings = field(metadata=_reads(_section(PrefillSettings)))
    cache: CacheSettings = field(metadata=_reads(_section(CacheSettings)))
    ramp: RampSettings = field(metadata=_reads(_section(RampSettings)))
    soak: SoakSettings = field(metadata=_reads(_section(SoakSettings)))
    rate: RateSettings = field(metadata=_reads(_section(RateSettings)))
    canaries: CanarySettings = field(default_factory=CanarySettings,
                                     metadata=_reads(_section(CanarySettings)))
    client_check: ClientLimits = field(metadata=_reads(_section(ClientLimits, _CLIENT_LIMITS)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> SuiteSettings:
        """Read a profile's JSON shape; any problem is a UsageError naming the key."""
        built: SuiteSettings = _build(cls, data, "")
        return built

    def to_dict(self) -> dict[str, Json]:
        """The JSON shape of a profile (run.json's `settings`, `probe --dry-run`)."""
        plain: dict[str, Any] = _plain(self)
        return plain


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def profile_settings(name_or_path: str) -> SuiteSettings:
    """A profile as typed settings, with no flags applied (benches and tests)."""
    return resolve_settings(ProbeConfig(base_url="", model="", profile=name_or_path))


def _powers_up_to(n: int) -> tuple[int, ...]:
    levels, c = [], 1
    while c < n:
        levels.append(c)
        c *= 2
    return (*levels, n)


def resolve_settings(config: ProbeConfig) -> SuiteSettings:
    """The profile with the config's flags applied: what the run actually does."""
    try:
        s = SuiteSettings.from_dict(deep_merge(load_profile(config.profile), config.overrides))
    except UsageError as exc:
        raise UsageError(str(exc).replace("profile:", f"profile {config.profile}:", 1)
                         ) from None
    phases = list(s.phases if config.phases is None else _phases("--phases", config.phases))
    if config.rate is not None:
        if config.rate <= 0:
            raise UsageError("--rate must be a positive number of requests per second")
        phases = [p if p != "ramp" else "rate" for p in phases]
        if "rate" not in phases:
            phases.append("rate")
        s = replace(s, rate=replace(s.rate, rate=float(config.rate)))
    if config.workload is not None or config.workload_file or config.conversations_file:
        phases.append("workload")  # (a questionnaire's workload is read into `workload`)
    if config.trace is not None or config.trace_file:
        phases.append("trace")
    s = replace(s, phases=tuple(p for p in PHASES if p in phases))
    given: dict[str, Any] = {}
    for name, flag, value in (("prompt_tokens", "--prompt-tokens", config.prompt_tokens),
                              ("output_tokens", "--output-tokens", config.output_tokens),
                              ("timeout_s", "--timeout", config.timeout_s),
                              ("deadline_s", "--deadline", config.deadline_s)):
        if value is not None:
            if value <= 0:
                raise UsageError(f"{flag} must be positive")
            given[name] = value
    s = replace(s, **given)
    s = replace(s, ramp=_ramp_from_flags(s.ramp, config))
    _check_identity(config)
    return s


def _ramp_from_flags(ramp: RampSettings, config: ProbeConfig) -> RampSettings:
    """--max-concurrency makes power-of-two levels up to it; --levels wins over both."""
    levels, cap = ramp.levels, ramp.max_concurrency
    if config.max_concurrency is not None:
        if config.max_concurrency < 1:
            raise UsageError("--max-concurrency must be at least 1")
        cap = config.max_concurrency
        if config.levels is None:
            levels = _powers_up_to(cap)
    if config.levels is not None:
        if not config.levels or min(config.levels) < 1:
            raise UsageError("--levels must be positive integers, e.g. 1,2,4,8")
        levels = tuple(sorted(set(config.levels)))
        if config.max_concurrency is None:  # levels asked for by name are not capped
            cap = max(cap, max(config.levels))
    return replace(ramp, levels=tuple(c for c in levels if c <= cap), max_concurrency=cap)


def _check_identity(config: ProbeConfig) -> None:
    """The flags that name things: checked before anything is sent."""
    if config.vendor is not None and not (
            0 < len(config.vendor) <= 100 and clean(config.vendor, 100) == config.vendor):
        raise UsageError("--vendor takes a name of one line, at most 100 characters, with no "
                         "control characters")
    if config.ray is not None and not config.ray.strip():
        raise UsageError("--ray takes auto or a cluster address, e.g. ray://head:10001")
    if config.ray_workers is not None and (config.ray is None or config.ray_workers < 1):
        raise UsageError("--ray-workers takes a positive number of actors, with --ray")
