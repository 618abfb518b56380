"""Run validity (fail closed): did the run measure what its figures claim to show?

A run that measured nothing must never look like a run that found nothing wrong. Each
phase and ramp level gets a validity from its own outcomes, and the run one from those
that every judgement rests on:

    valid     every request of the group ended ok (or few enough failed to be noise)
    degraded  some failed, or the client set the pace: figures stand, with the reason
    invalid   nothing, or mostly nothing, succeeded: no figure of the group means anything

The run is `invalid` when the connect gate failed, when its baseline (or, with no
baseline phase, the whole run) has no `ok` request; `degraded` when it was cut short,
when a phase that every judgement leans on (connect, baseline, prefill, cache, soak,
rate) is degraded or invalid, when the client was the bottleneck where the capacity
judgement is drawn, or when the vendor's token counts disagree with the text it streamed
or the prompt we sent (its rates would be read in tokens nobody saw or sent). Ramp levels
that fail *above* the first working level are the finding, not a defect of the run: the
ramp reports them as its breach.

Pure: counts in, plain dicts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from evalkit.analysis.buffering import buffered_words

Validity = Literal["valid", "degraded", "invalid"]
#: A group in which fewer than this share of requests ended ok "mostly failed".
MOSTLY_FAILED_OK_SHARE = 0.5
#: Phases run before the ramp at concurrency 1: every figure leans on them.
GROUNDWORK = ("connect", "baseline", "prefill", "cache")
_RANK = {"valid": 0, "degraded": 1, "invalid": 2}


def _failures(outcomes: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in outcomes.items() if k != "ok" and v)


def group_validity(requests: int, outcomes: Mapping[str, int], *,
                   max_failure_rate: float, top_error: str | None = None,
                   client_bound: bool = False, lost: Sequence[str] = (),
                   configuration: int = 0, configuration_error: str | None = None
                   ) -> dict[str, Any]:
    """One phase's or level's validity from its outcome counts, with reasons in words.

    `lost`: client workers lost while it ran (scale-out), each said in words: the load it
    was to offer was not held, so it is degraded whatever its outcomes.
    `configuration`: its requests refused as a configuration finding (a shape the endpoint
    refuses alone as under load: `evalkit.analysis.configuration`; `configuration_error`
    the most frequent of them). They are left out of its failure share, so a phase of
    mostly such shapes is not "mostly failed"; they degrade it, named, as a measurement
    it could not make. A group where nothing succeeded stays invalid whatever failed.
    """
    ok = int(outcomes.get("ok", 0))
    judged = requests - configuration
    failed = judged - ok
    why = f" ({_failures(outcomes)}{'; most often: ' + top_error if top_error else ''})"
    reasons: list[str] = []
    if requests == 0:
        status: Validity = "invalid"
        reasons.append("no request was sent")
    elif ok == 0:
        status = "invalid"
        reasons.append(f"no request succeeded: {requests - ok} of {requests} failed{why}")
    elif ok < MOSTLY_FAILED_OK_SHARE * judged:
        status = "invalid"
        reasons.append(f"most requests failed: {failed} of {judged}{why}")
    elif failed / judged > max_failure_rate:
        status = "degraded"
        reasons.append(f"{failed} of {judged} requests failed{why}")
    else:
        status = "valid"
    if configuration:
        status = worst(status, "degraded")
        reasons.append(f"{configuration} of {requests} requests were refused alone as under "
                       "load, a shape the endpoint never serves (a configuration finding, "
                       f"not load{': ' + configuration_error if configuration_error else ''})")
    for why in lost:
        status = worst(status, "degraded")
        reasons.append(f"a client worker was lost: {why}")
    if client_bound and not lost:
        status = worst(status, "degraded")
        reasons.append("the client was the bottleneck")
    return {"status": status, "reasons": reasons, "requests": requests, "ok": ok}


def worst(*statuses: Validity) -> Validity:
    """The worse of several validities."""
    return max(statuses, key=_RANK.__getitem__)


def run_validity(phases: Mapping[str, Mapping[str, Any]], *, run_status: str | None,
                 capacity_judgement_affected: bool,
                 run_error: str | None = None, lost: Sequence[str] = (),
                 usage: Mapping[str, Any] | None = None,
                 streaming: Mapping[str, Any] | None = None,
                 prompt: Mapping[str, Any] | None = None,
                 buffering: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The run's validity from its phases' (`phases[name]["status"]`) and how it ended.

    `usage` is the usage-honesty check (`evalkit.analysis.checks.usage_honesty`). Every rate and
    TPOT counts the vendor's `completion_tokens`: a vendor whose counts lie far from the
    text it streamed (`flagged`) would have its speed read in tokens nobody saw, so the
    run is degraded: no readiness verdict rests on figures the vendor's own bill inflates.
    `streaming` is the streaming check (`evalkit.analysis.checks.streaming_check`): an endpoint
    that sent its answers whole (`flagged`) measured no stream, and a run of it earns no
    streaming readiness, however fast its aggregate throughput. `prompt` is the prompt-
    honesty check (`evalkit.analysis.checks.prompt_honesty`): a vendor whose prompt_tokens
    lie far from our count of what we sent (`flagged`) bills, and would have its prefill
    rate read, in tokens nobody sent, so the run is degraded the same way. `buffering` is
    the buffering check (`evalkit.analysis.buffering`): a stream that arrived buffered
    (`flagged`) had its TTFT and rhythm set by a gateway's buffer, so the run is degraded
    and no judgement of timing rests on it.
    """
    reasons: list[str] = []
    status: Validity = "valid"

    def mark(level: Validity, reason: str) -> None:
        nonlocal status
        status = worst(status, level)
        reasons.append(reason)

    if run_status == "failed":
        first_line = (run_error or "").splitlines()[0] if run_error else ""
        first_line = first_line.removeprefix("the connect stream failed: ")
        mark("invalid", "the connect gate failed" + (f": {first_line}" if first_line else ""))
    elif run_status in ("interrupted", "crashed"):
        mark("degraded", f"the run was {run_status}: figures cover only what was measured "
                         "before it stopped")
    elif run_status == "running":
        mark("degraded", "the run did not finish writing up (it may have been killed)")
    total_ok = sum(int(p.get("ok", 0)) for p in phases.values())
    measuring = [p for name, p in phases.items() if name not in ("connect", "rtt")]
    if run_status != "failed" and (not phases or total_ok == 0):
        mark("invalid", "no request of the run succeeded")
    elif run_status != "failed" and measuring and not any(int(p.get("ok", 0))
                                                          for p in measuring):
        # the connect gate's one stream is no measurement: past it nothing succeeded
        mark("invalid", "no request succeeded after the connect check")
    anchor = "baseline" if "baseline" in phases else None
    for name in (*GROUNDWORK, "soak", "rate", "workload", "trace"):
        p = phases.get(name)
        if p is None or p["status"] == "valid" or (name == "connect" and run_status == "failed"):
            continue
        level: Validity = ("invalid" if name == anchor and p["status"] == "invalid"
                           else "degraded")
        mark(level, f"{name}: {'; '.join(p.get('reasons') or [p['status']])}")
    for why in lost:
        mark("degraded", f"a client worker was lost: {why}")
    if usage and usage.get("flagged"):
        mark("degraded", _usage_words(usage))
    if prompt and prompt.get("flagged"):
        mark("degraded", _prompt_words(prompt))
    if streaming and streaming.get("flagged"):
        mark("degraded", f"the endpoint did not stream: {streaming.get('one_chunk')} of "
                         f"{streaming.get('checked')} requests came with most of their "
                         "output in one chunk, so TPOT and stream rates describe no stream")
    if buffering and buffering.get("flagged"):
        mark("degraded", buffered_words(buffering))
    if capacity_judgement_affected and not lost:
        mark("degraded", "the client was the bottleneck where the capacity judgement is "
                         "drawn: no capacity conclusion")
    return {"status": status, "reasons": _unique(reasons)}


def _usage_words(usage: Mapping[str, Any]) -> str:
    # short enough to stand whole where a page quotes a reason (200 characters)
    ratio = (usage.get("usage_over_counted") or {}).get("p50")
    tol = usage.get("tolerance")
    outliers = usage.get("outliers")
    if isinstance(ratio, int | float) and isinstance(tol, int | float) and \
            abs(ratio - 1) <= tol and isinstance(outliers, int) and outliers:
        return (f"the vendor's usage (completion_tokens, what it bills) is far from the "
                f"text it streamed on {outliers} requests alone: their TPOT rests on counts "
                "we could not check; ask why those differ")
    times = f"{ratio:.2f}× our count of" if isinstance(ratio, int | float) else "far from"
    apart = f" (over {tol:.0%} apart)" if isinstance(tol, int | float) else ""
    return (f"the vendor's usage (completion_tokens, what it bills) is {times} the text it "
            f"streamed{apart}: rates and TPOT rest on counts we could not check; ask which "
            "tokenizer it uses")


def _prompt_words(prompt: Mapping[str, Any]) -> str:
    # short enough to stand whole where a page quotes a reason (200 characters)
    ratio = (prompt.get("usage_over_counted") or {}).get("p50")
    times = f"{ratio:.2f}× our count of" if isinstance(ratio, int | float) else "far from"
    return (f"the vendor's usage (prompt_tokens, what it bills) is {times} the prompt we "
            "sent: the prefill rate is fitted on our count; ask which tokenizer it uses")


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
