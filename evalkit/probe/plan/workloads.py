"""The buyer's workload, read for a run: `--workload`, `--conversations` and `--trace`
turned into the workload stage's model before anything is sent, and described for
run.json, so every figure the workload phases measure can say which workload it is from.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalkit.errors import UsageError
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.workload.describe import trace_summary, workload_summary
from evalkit.workload.load import MAX_CONCURRENCY
from evalkit.workload.model import Trace, Workload

#: the longest a trace replay may run (its span over its speed): a replay holds the run
#: open until its last request is due, so a trace of days (absolute timestamps from
#: several logs, a typo'd speed) is refused before anything is sent, not run for days
MAX_TRACE_SPAN_S = 6 * 3600.0


def with_workload(config: ProbeConfig) -> ProbeConfig:
    """`config` with its workload and trace files read (a malformed file is a
    WorkloadError naming every problem, before the run directory exists)."""
    if config.trace_speed <= 0:
        raise UsageError("--trace-speed must be a positive factor (2: twice as fast)")
    if config.users is not None and (not config.users or min(config.users) < 1
                                     or max(config.users) > MAX_CONCURRENCY):
        raise UsageError(f"--users takes positive numbers of users in flight, at most "
                         f"{MAX_CONCURRENCY:,} (e.g. 1,4,8)")
    workload, trace = config.workload, config.trace
    # what is given already read (a notebook's object, or a second call) wins over files
    files = workload is None
    if config.workload_file is not None and files:
        from evalkit.workload.load import load_workload

        workload = load_workload(config.workload_file)
    if workload is None and config.workload_file is None and config.questionnaire:
        from evalkit.workload.named import questionnaire_workload

        workload = questionnaire_workload(config.questionnaire)  # the claims' own traffic
    if config.conversations_file is not None and files:
        from evalkit.workload.conversations import load_conversations

        convs = load_conversations(config.conversations_file)
        if workload is None:
            workload = Workload(name=convs.name, shapes=(convs,), duration_s=None,
                                units=len(convs.conversations), source=convs.source)
        else:  # one more shape of the mix
            workload = replace(workload, shapes=(*workload.shapes, convs))
    if config.trace_file is not None and trace is None:
        from evalkit.workload.trace import load_trace

        trace = load_trace(config.trace_file, speed=config.trace_speed)
    elif trace is not None and config.trace_speed != trace.speed:
        trace = replace(trace, speed=config.trace_speed)
    if config.users is not None and workload is None:  # said, and nothing would read it
        raise UsageError("--users sets the workload phase's levels: give it a workload too "
                         "(--workload FILE or --conversations FILE.jsonl); the ramp's "
                         "levels are --levels")
    if config.trace_speed != 1.0 and trace is None:
        raise UsageError("--trace-speed scales a trace's times: give it --trace FILE.jsonl")
    if config.phases is not None and "workload" in config.phases and workload is None:
        raise UsageError("the workload phase needs a workload: --workload FILE or "
                         "--conversations FILE.jsonl")
    if config.phases is not None and "trace" in config.phases and trace is None:
        raise UsageError("the trace phase needs a trace: --trace FILE.jsonl")
    if trace is not None and not trace.entries:
        raise UsageError("the trace holds no request to replay")
    if trace is not None:
        _check_span(trace)
    return replace(config, workload=workload, trace=trace)


def _check_span(trace: Trace) -> None:
    """Refuse a replay that would run past `MAX_TRACE_SPAN_S`, saying what would fit."""
    span = trace.offsets_s()[-1]
    if span <= MAX_TRACE_SPAN_S:
        return
    raw = span * trace.speed
    speed = raw / MAX_TRACE_SPAN_S
    raise UsageError(f"the trace spans {_duration(raw)} of its time, so at --trace-speed "
                     f"{trace.speed:g} its replay would run {_duration(span)} (limit "
                     f"{_duration(MAX_TRACE_SPAN_S)}): replay it faster (--trace-speed "
                     f"{speed:.3g} or more) or cut the file to the window you mean")


def _duration(s: float) -> str:
    if s < 600:
        return f"{s:.1f} s"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:,.1f} days"


def describe_lines(config: ProbeConfig) -> list[str]:
    """What the workload and trace phases will send, for `probe --dry-run` and the plan."""
    out = []
    if (w := config.workload) is not None:
        total = sum(s.weight for s in w.shapes) or 1.0
        mix = ", ".join(f"{s.name} ({s.kind}, {s.weight / total:.0%})" for s in w.shapes)
        per = " and ".join(x for x in (f"{w.duration_s:g} s" if w.duration_s else "",
                                       f"{w.units} units" if w.units else "") if x)
        users = ", ".join(map(str, config.users or w.concurrency))
        out.append(f"workload {w.name}: {mix}; users in flight {users}, each level {per}")
    if (t := config.trace) is not None:
        span = t.offsets_s()[-1] if t.entries else 0.0
        prompt = sum(e.input_length for e in t.entries)
        output = sum(e.output_length for e in t.entries)
        out.append(f"trace: {len(t.entries)} requests over {span:.1f} s (speed {t.speed:g}), "
                   f"{prompt:,} prompt and {output:,} output tokens, sent at the trace's "
                   "times")
    return out


def workload_meta(config: ProbeConfig) -> dict[str, Any] | None:
    """run.json's `workload`: what the workload and trace phases ran (None: neither)."""
    if config.workload is None and config.trace is None:
        return None
    return {"workload": None if config.workload is None else {
                **workload_summary(config.workload),
                "users": list(config.users or config.workload.concurrency)},
            "trace": None if config.trace is None else trace_summary(config.trace)}
