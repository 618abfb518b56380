"""The pure metrics core: request records in, the `summary.json` dict out. No I/O.

Records become two frames once (`frames`): one row per request (`records_frame`) and one
row per content chunk (`chunks_frame`); every metric below is vectorised over them
(numpy/pandas), with Python loops only over the handful of phases and levels.
`summarize(records, meta)` adds what the prober knows beyond the records (`SummaryMeta`:
versions, the client's self-checks, the `Thresholds`) and gives the whole document.

What each figure means, which requests it counts, the steady-state window, the ramp's
breach rule and every key of `summary.json` are in docs/methodology.md ("From records to
summary.json"): change a definition here and there together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from evalkit import SUITE_VERSION, __version__
from evalkit.analysis.buffering import buffering_check
from evalkit.analysis.canarycall import GROWTH_ENDS
from evalkit.analysis.checks import (
    cache_check,
    connect_section,
    drift,
    network_share,
    prompt_honesty,
    streaming_check,
    usage_honesty,
)
from evalkit.analysis.configuration import CONFIGURATION_RULE, configuration_failures
from evalkit.analysis.frames import frames
from evalkit.analysis.goodput import GOODPUT_RULE, level_goodput, max_goodput, profile_limits
from evalkit.analysis.jsonread import Json
from evalkit.analysis.precision import level_precision, precision_section
from evalkit.analysis.prefill import prefill_fit
from evalkit.analysis.prompttext import CorpusFacts, prompt_text_section
from evalkit.analysis.ramp import judge_ramp
from evalkit.analysis.ratelimits import rate_limit_section
from evalkit.analysis.stats import (
    outcome_counts,
    output_length_check,
    percentiles,
    phase_stats,
    token_sums,
    top_error,
)
from evalkit.analysis.summary import Summary
from evalkit.analysis.thresholds import SloProfile, Thresholds, Tolerances, default_slo_profiles
from evalkit.analysis.validity import group_validity, run_validity
from evalkit.analysis.workload import trace_section, workload_section
from evalkit.records import RequestRecord

SCHEMA = "evalkit.summary/1"
#: Phases run at concurrency 1 by construction, whatever their records' `level`.
SERIAL_PHASES = ("connect", "baseline", "prefill", "cache", "rtt")


@dataclass(frozen=True)
class ClientCheck:
    """The client's self-check over one phase or level: was it the bottleneck?"""

    loop_lag_p99_s: float | None = None
    cpu_fraction: float | None = None
    client_bound: bool = False
    #: client workers lost meanwhile (scale-out on Ray), in words
    lost: tuple[str, ...] = ()
    #: the client's own delay in sending (p99, s) and the share of the load it held back
    #: that way: a herd that sends again one after another, or an open loop behind its
    #: schedule, grows both, as a client that cannot keep up does
    send_lag_p99_s: float | None = None
    send_lag_fraction: float | None = None
    #: why the check called it client-bound (cpu, loop_lag, send_lag, late_reads)
    client_bound_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class SummaryMeta:
    """What the prober knows beyond the records: versions and client self-checks
    (`summarize` takes a plain dict of the same shape too, as read back from JSON)."""

    tool_version: str = __version__
    suite_version: str = SUITE_VERSION
    phases: Mapping[str, ClientCheck] = field(default_factory=dict)
    levels: Mapping[int, ClientCheck] = field(default_factory=dict)
    #: the network round trip (s), used only when the run has no `rtt` records
    rtt_s: float | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: how the run ended (complete, failed, interrupted, crashed), for its validity
    run_status: str | None = None
    #: why it failed, when the connect gate stopped it
    run_error: str | None = None
    #: the use cases each ramp level's goodput is measured against, and the reading speed
    #: interactive chat asks for (the review's defaults: `Tolerances`)
    slo_profiles: Mapping[str, SloProfile] = field(default_factory=default_slo_profiles)
    reading_speed_tokens_per_s: float = Tolerances.reading_speed_tokens_per_s
    #: the client's self-check of each workload level (users in flight), and what the
    #: workload and trace phases ran (run.json `workload`), for summary.json to name
    workload_levels: Mapping[int, ClientCheck] = field(default_factory=dict)
    workload: Mapping[str, Json] | None = None
    #: the corpus the run's prompts were cut from (run.json `prompt_text.corpus`): its
    #: digest and size, for summary.json's `prompt_text` to name
    corpus: CorpusFacts | None = None
    #: how many canary answers a ramp level's precision tie could grow to (run.json's
    #: `canaries.level_budget`; None: no growth), and why each level that grew stopped
    #: (`canaries.ended`, by level: evalkit.analysis.canarycall.GROWTH_ENDS)
    canary_budget: int | None = None
    canary_ends: Mapping[int, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, given_meta: Mapping[str, Json]) -> SummaryMeta:
        """Build from plain data (level keys may be strings, as after a JSON round trip)."""
        d: Mapping[str, Any] = given_meta  # run.json's plain data, read field by field here

        given = d.get("canaries")
        canaries: Mapping[str, Any] = given if isinstance(given, Mapping) else {}

        def check(v: Mapping[str, Any]) -> ClientCheck:
            return ClientCheck(
                loop_lag_p99_s=v.get("loop_lag_p99_s"),
                cpu_fraction=v.get("cpu_fraction"),
                client_bound=bool(v.get("client_bound", False)),
                lost=tuple(str(x) for x in v.get("lost") or ()),
                send_lag_p99_s=v.get("send_lag_p99_s"),
                send_lag_fraction=v.get("send_lag_fraction"),
                client_bound_reasons=tuple(str(x) for x in v.get("client_bound_reasons") or ()),
            )

        return cls(
            tool_version=str(d.get("tool_version", __version__)),
            suite_version=str(d.get("suite_version", SUITE_VERSION)),
            phases={str(k): check(v) for k, v in (d.get("phases") or {}).items()},
            levels={int(k): check(v) for k, v in (d.get("levels") or {}).items()},
            rtt_s=d.get("rtt_s"),
            thresholds=Thresholds.from_dict(d.get("thresholds") or {}),
            run_status=d.get("run_status"),
            run_error=d.get("run_error"),
            workload_levels={int(k): check(v)
                             for k, v in (d.get("workload_levels") or {}).items()},
            workload=d.get("workload"),
            corpus=CorpusFacts.from_json(d.get("corpus")),
            canary_budget=_count_or_none(canaries.get("level_budget")),
            canary_ends=_growth_ends(canaries.get("ended")),
        )


def _count_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _growth_ends(given: Any) -> dict[int, str]:
    """run.json's `canaries.ended` as read back: a level's key and a known end, else left
    out (the file is evidence, written by whoever held it)."""
    if not isinstance(given, Mapping):
        return {}
    return {int(k): v for k, v in given.items()
            if isinstance(k, str | int) and str(k).isdigit() and v in GROWTH_ENDS}


def _single_level(req: pd.DataFrame) -> int | None:
    """The phase's concurrency when all its records share one, else None."""
    levels = req["level"].dropna().unique()
    return int(levels[0]) if len(levels) == 1 else None


def client_section(meta: SummaryMeta) -> dict[str, Any]:
    """The client's own health over the run: a bound client voids capacity conclusions."""
    checks = [*meta.phases.values(), *meta.levels.values()]
    lags = [c.loop_lag_p99_s for c in checks if c.loop_lag_p99_s is not None]
    cpus = [c.cpu_fraction for c in checks if c.cpu_fraction is not None]
    sends = [c.send_lag_p99_s for c in checks if c.send_lag_p99_s is not None]
    held = [c.send_lag_fraction for c in checks if c.send_lag_fraction is not None]
    return {"loop_lag_p99_s": max(lags) if lags else None,
            "cpu_fraction_max": max(cpus) if cpus else None,
            "send_lag_p99_s": max(sends) if sends else None,
            "send_lag_fraction_max": max(held) if held else None,
            "client_bound": any(c.client_bound for c in checks),
            "client_bound_reasons": sorted({r for c in checks for r in c.client_bound_reasons}),
            "client_bound_phases": sorted(p for p, c in meta.phases.items() if c.client_bound),
            "client_bound_levels": sorted(lv for lv, c in meta.levels.items()
                                          if c.client_bound),
            "phases": {p: _check_dict(c) for p, c in meta.phases.items()},
            "levels": {str(lv): _check_dict(c) for lv, c in sorted(meta.levels.items())}}


def _check_dict(check: ClientCheck) -> dict[str, Any]:
    """A self-check as summary.json shows it: `lost` only where a worker was lost."""
    d = asdict(check)
    d["client_bound_reasons"] = list(check.client_bound_reasons)
    if not check.lost:
        del d["lost"]
    return d


# --------------------------------------------------------------------------- summary


def summarize(records: Iterable[RequestRecord],
              meta: SummaryMeta | Mapping[str, Json] | None = None) -> dict[str, Json]:
    """The whole `summary.json` dict (schema evalkit.summary/1), JSON-safe."""
    m = meta if isinstance(meta, SummaryMeta) else SummaryMeta.from_dict(meta or {})
    req, chunks = frames(records)
    return summarize_frames(req, chunks, m)


def summary_of(records: Iterable[RequestRecord],
               meta: SummaryMeta | Mapping[str, Any] | None = None) -> Summary:
    """`summarize`, read as the frozen `Summary` every stage after this one takes: its
    `to_json()` is exactly `summarize`'s document (summary.json's keys are a contract)."""
    return Summary.from_json(summarize(records, meta))


def summarize_frames(req: pd.DataFrame, chunks: pd.DataFrame, meta: SummaryMeta
                     ) -> dict[str, Any]:
    """`summarize` for frames already built (a notebook may filter them first)."""
    th = meta.thresholds
    # shapes refused alone as under load: counted apart from load (evalkit.analysis.configuration)
    refused, findings = configuration_failures(req)
    req = req.assign(configuration=refused)
    phase = req["phase"].to_numpy()

    def bound(p: str) -> bool:
        check = meta.phases.get(p)
        return bool(check and check.client_bound)

    def rows(p: str) -> pd.DataFrame | None:
        sub = req[phase == p]
        return sub if len(sub) else None

    baseline_req = rows("baseline")
    baseline: dict[str, Any] | None = None if baseline_req is None else {
        **phase_stats(baseline_req, chunks, 1, th), "client_bound": bound("baseline")}
    network = network_share(req, (baseline or {}).get("ttft_s", {}).get("p50"), meta.rtt_s)
    rtt = None if network is None else network["rtt_s"]
    connect_req = rows("connect")
    connect = None if connect_req is None else connect_section(connect_req, chunks, rtt)
    prompt = prompt_honesty(req, th.prompt_disagreement, th.prompt_template_tokens)
    # the vendor's prompt counts are what its prefill claim is in, unless they disagree
    # with ours: then the fit is drawn on our count (a 3x count would read 3x the rate)
    on_ours = bool(prompt["flagged"] or prompt["prefill_disagreeing"])
    prefill = prefill_fit(req, counted=on_ours) if rows("prefill") is not None else None

    precision = precision_section(req, th, meta.canary_budget, meta.canary_ends)
    ramp_req = rows("ramp")
    ramp = None if ramp_req is None else _ramp_section(ramp_req, chunks, baseline, meta,
                                                      level_precision(precision))

    soak_req = rows("soak")
    soak = None if soak_req is None else {**_soak_section(soak_req, chunks, th),
                                          "client_bound": bound("soak")}

    rate_req = rows("rate")
    rate = None if rate_req is None else {**_rate_section(rate_req, chunks, th),
                                          "client_bound": bound("rate")}

    described: Mapping[str, Any] = meta.workload or {}
    slo, speed = meta.slo_profiles, meta.reading_speed_tokens_per_s
    workload = workload_section(
        req, chunks, prefill=prefill, described=described.get("workload"),
        client_bound={k: c.client_bound for k, c in meta.workload_levels.items()},
        profiles=slo, reading_speed=speed, target=th.goodput_target)
    trace = trace_section(req, chunks, client_bound=bound("trace"),
                          described=described.get("trace"), profiles=slo, reading_speed=speed,
                          target=th.goodput_target)

    affected = _judgement_affected(ramp, bound("baseline"))
    usage = usage_honesty(req, th.usage_disagreement)
    streaming = streaming_check(req, chunks, th.unstreamed_share)
    buffering = buffering_check(req, chunks, th.buffered_share, _bound_groups(meta))
    validity = _validity(req, ramp, meta, affected, usage, streaming, prompt, buffering)
    for section, name in ((connect, "connect"), (baseline, "baseline"), (soak, "soak"),
                          (rate, "rate"), (prefill, "prefill")):
        if section is not None:
            section["validity"] = validity["phases"][name]

    return {
        "schema": SCHEMA,
        "tool": "evalkit",
        "tool_version": meta.tool_version,
        "suite_version": meta.suite_version,
        "requests": len(req),
        "outcomes": outcome_counts(req["outcome"]),
        "reconnects": int(req["reconnects"].sum()),
        "configuration": {"findings": findings, "rule": CONFIGURATION_RULE},
        "output_tokens_estimated": bool(req.loc[req["ok"], "output_tokens_estimated"].any()),
        "thresholds": asdict(th),
        "connect": connect,
        "baseline": baseline,
        "prefill": prefill,
        "ramp": ramp,
        "soak": soak,
        "rate": rate,
        "precision": precision,
        "workload": workload,
        "trace": trace,
        "checks": {
            "cache": cache_check(req, th.cache_ttft_ratio),
            "network": network,
            "output_length": output_length_check(req, th.output_shortfall),
            "usage_honesty": usage,
            "prompt_honesty": prompt,
            "streaming": streaming,
            "buffering": buffering,
        },
        "client": {**client_section(meta), "capacity_judgement_affected": affected},
        "validity": validity,
        "rate_limits": rate_limit_section(req, th.rate_limit_window_s),
        "prompt_text": prompt_text_section(req, meta.corpus),
    }


def _bound_groups(meta: SummaryMeta) -> set[tuple[str, int | None]]:
    """The phases (level None) and ramp levels where the client set the pace."""
    return ({(p, None) for p, c in meta.phases.items() if c.client_bound}
            | {("ramp", lv) for lv, c in meta.levels.items() if c.client_bound})


def _validity(req: pd.DataFrame, ramp: Mapping[str, Any] | None, meta: SummaryMeta,
              affected: bool, usage: Mapping[str, Any],
              streaming: Mapping[str, Any] | None = None,
              prompt: Mapping[str, Any] | None = None,
              buffering: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validity of every phase and ramp level, and of the run (evalkit.analysis.validity)."""
    limit = meta.thresholds.admission_failure_rate

    def of(sub: pd.DataFrame, bound: bool, check: ClientCheck | None) -> dict[str, Any]:
        refused = sub["configuration"].to_numpy()
        return group_validity(len(sub), outcome_counts(sub["outcome"]), max_failure_rate=limit,
                              top_error=top_error(sub[~refused]), client_bound=bound,
                              lost=check.lost if check else (),
                              configuration=int(refused.sum()),
                              configuration_error=top_error(sub[refused]))

    phases = {str(p): of(sub, bool((c := meta.phases.get(str(p))) and c.client_bound), c)
              for p, sub in req.groupby("phase", sort=False) if p != "rtt"}
    levels = {}
    for lvl in (ramp or {}).get("levels") or []:
        sub = req[(req["phase"] == "ramp") & (req["level"] == lvl["concurrency"])]
        levels[str(lvl["concurrency"])] = lvl["validity"] = of(
            sub, bool(lvl["client_bound"]), meta.levels.get(int(lvl["concurrency"])))
    lost = [w for c in (*meta.phases.values(), *meta.levels.values()) for w in c.lost]
    run = run_validity(phases, run_status=meta.run_status, run_error=meta.run_error,
                       capacity_judgement_affected=affected, lost=list(dict.fromkeys(lost)),
                       usage=usage, streaming=streaming, prompt=prompt,
                       buffering=buffering)
    return {**run, "phases": phases, "levels": levels}


def _ramp_section(ramp_req: pd.DataFrame, chunks: pd.DataFrame,
                  baseline: Mapping[str, Any] | None, meta: SummaryMeta,
                  precision: Mapping[int, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Stats per closed-loop level, judged against the baseline (or, lacking one, level 1),
    each with its goodput at every use case's SLO and its canaries' precision where the
    run sent canaries."""
    th, profiles = meta.thresholds, meta.slo_profiles
    levels = []
    for lv, sub in ramp_req.groupby("level", sort=True):
        stats: dict[str, Any] = phase_stats(sub, chunks, int(lv), th)
        goodput = level_goodput(sub, chunks, stats["steady_state"], profiles,
                                meta.reading_speed_tokens_per_s, th.goodput_target)
        levels.append({"concurrency": int(lv), **stats, "goodput": goodput,
                       "ok_tokens": token_sums(sub),
                       "precision": (precision or {}).get(int(lv))})
    base, source = baseline, "baseline"
    if base is None:
        base = next((d for d in levels if d["concurrency"] == 1), None)
        source = "ramp level 1"
    bound = meta.phases.get("baseline")
    client_bound = [lv for lv, c in meta.levels.items() if c.client_bound]
    judged: dict[str, Any] = judge_ramp(levels, base, th, client_bound)
    return {**judged, **max_goodput(judged["levels"], list(profiles)),
            "goodput_target": th.goodput_target,
            "goodput_limits": {name: profile_limits(p, meta.reading_speed_tokens_per_s)
                               for name, p in profiles.items()},
            "goodput_rule": GOODPUT_RULE,
            "baseline_source": source if base is not None else None,
            "baseline_client_bound": bool(bound and bound.client_bound),
            "unlevelled_requests": int(ramp_req["level"].isna().sum())}


def _soak_section(soak_req: pd.DataFrame, chunks: pd.DataFrame, th: Thresholds
                  ) -> dict[str, Any]:
    """A long hold at one level: the usual stats, plus early-vs-late drift."""
    level = _single_level(soak_req)
    return {"concurrency": level, **phase_stats(soak_req, chunks, level, th),
            "drift": drift(soak_req)}


def _rate_section(rate_req: pd.DataFrame, chunks: pd.DataFrame, th: Thresholds
                  ) -> dict[str, Any]:
    """Open loop: the usual stats, plus the send lag that would otherwise hide queueing."""
    t0 = rate_req["t0_s"].to_numpy()
    span = float(t0.max() - t0.min()) if len(t0) > 1 else 0.0
    return {**phase_stats(rate_req, chunks, None, th),
            "send_lag_s": percentiles(rate_req["send_lag_s"]),
            "arrival_rps": (len(t0) - 1) / span if span > 0 else None}


def _judgement_affected(ramp: Mapping[str, Any] | None, baseline_bound: bool) -> bool:
    """Did a client bottleneck sit where the capacity conclusion is drawn (not above it)?"""
    if baseline_bound:
        return True
    if ramp is None:
        return False
    first = ramp.get("first_breach_concurrency")
    return any(lv["client_bound"] and (first is None or lv["concurrency"] <= first)
               for lv in ramp["levels"])
