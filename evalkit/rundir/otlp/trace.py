"""A run's records as a trace: one span per request, named and attributed by the
OpenTelemetry GenAI semantic conventions, under a span per level, per phase and for the
run. Pure: run.json's facts and the records in, `RunTrace` out.

The conventions are those of semantic-conventions v1.41 (docs/gen-ai/gen-ai-spans.md): a
CLIENT span named "{gen_ai.operation.name} {gen_ai.request.model}", with
`gen_ai.provider.name` (and `gen_ai.system`, its name up to v1.36, which older backends
read), `gen_ai.request.*`, `gen_ai.response.*`,
`gen_ai.usage.*`, `server.*`, `error.type`. Where evalkit's meaning is narrower it says
so in docs/probing.md: `gen_ai.response.time_to_first_chunk` is evalkit's TTFT, to the
first chunk that carries generated text (a role-only first chunk is not one), and
`gen_ai.usage.*` are the vendor's reported counts only: our own count of a text is
`evalkit.output_tokens` with `evalkit.output_tokens_estimated`.

A span's times are the record's, placed on the calendar by run.json's wall-clock anchor
(`clock.wall_ns`, read beside the monotonic origin; `started_at`, to the second, for runs
written before it and for imports). Its ids are derived from the run's identity and the
record's place in the file, so the same run sent twice is the same trace, not two.

Vendor text (a model name, an error message) is cleaned and capped before it leaves.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urlsplit

from evalkit.analysis.jsonread import read_as
from evalkit.analysis.summary import Summary, as_text
from evalkit.analysis.thresholds import Thresholds
from evalkit.records import RequestRecord
from evalkit.rundir.meta import RunMeta
from evalkit.sanitize import clean

#: an attribute's value, as OTLP carries it
AttrValue = str | bool | int | float | Sequence[float] | Sequence[int] | Sequence[str]
Attributes = Mapping[str, AttrValue]

#: a span carries at most this many chunk arrival times (a 4,000-token answer would be
#: 32 KB of doubles a span); the count is always there, and `evalkit.chunk.truncated`
CHUNK_TIMES_MAX = 512
#: at most this many stall events a span (the longest first), their count always
STALL_EVENTS_MAX = 32
#: phases measured level by level: their requests sit under a span per level
LEVELLED = frozenset({"ramp", "workload"})
#: the order phases run in (a phase not listed goes after them, by first request)
PHASE_ORDER = ("connect", "baseline", "prefill", "cache", "ramp", "soak", "rate",
               "workload", "trace")

#: `--api` to (gen_ai.operation.name, gen_ai.provider.name): the provider name is the
#: telemetry flavour of the wire format spoken, which is what evalkit knows (an OpenAI-
#: compatible endpoint of any vendor reads "openai", as the conventions allow)
OPERATIONS: dict[str, tuple[str, str]] = {
    "openai-chat": ("chat", "openai"),
    "openai-completions": ("text_completion", "openai"),
    "openai-responses": ("chat", "openai"),
    "anthropic-messages": ("chat", "anthropic"),
    "bedrock-converse": ("chat", "aws.bedrock"),
    "bedrock-invoke": ("chat", "aws.bedrock"),
    "gemini": ("generate_content", "gcp.gemini"),
    # a realtime call's turn: the conventions name no operation for it (v1.41); a custom
    # value, as they allow, rather than "chat" for what is not a chat completion
    "openai-realtime": ("realtime", "openai"),
    "gemini-live": ("realtime", "gcp.gemini"),
}


@dataclass(frozen=True)
class RunFacts:
    """What a trace needs of run.json, read once and defensively."""

    #: what makes this run this run (its id, start, target, imported files), hashed
    #: into every trace and span id
    identity: str
    #: the wall-clock time (Unix ns) of the records' monotonic origin (t0_s = 0)
    wall_origin_ns: int | None
    run_id: str | None
    status: str | None
    profile: str | None
    suite_version: str | None
    base_url: str | None
    model: str | None
    api: str
    auth: str | None
    temperature: float | None
    seed: int | None
    vendor: str | None
    #: the peer tool a run was imported from (`evalkit import`), None for a probe
    imported_tool: str | None = None
    #: the summary's validity by scope: "run", "phase:NAME", "level:N"
    validity: Mapping[str, str] = field(default_factory=dict)
    stall_threshold_s: float = 1.0

    @property
    def operation(self) -> tuple[str, str]:
        """(gen_ai.operation.name, gen_ai.provider.name) for the API spoken."""
        op, provider = OPERATIONS.get(self.api, ("chat", "openai"))
        if self.auth == "api-key" and provider == "openai":
            provider = "azure.ai.openai"  # Azure OpenAI's auth: its flavour of the API
        if self.auth == "google-adc" and provider == "gcp.gemini":
            provider = "gcp.vertex_ai"  # Vertex AI's OAuth: the same API on Google Cloud
        return op, provider

    def server(self) -> dict[str, AttrValue]:
        """server.address and server.port of the endpoint probed (no path, no userinfo)."""
        try:
            url = urlsplit(self.base_url or "")
            host, port = url.hostname, url.port
        except ValueError:
            return {}
        if not host:
            return {}
        port = port or {"https": 443, "http": 80}.get(url.scheme)
        return {"server.address": clean(host, 200), **({"server.port": port} if port else {})}


def run_facts(run: RunMeta, summary: Summary) -> RunFacts:
    """run.json and the typed summary read for a trace (`RunMeta`: a field of the wrong
    type is absent)."""
    target, imported = run.target, run.imported_from
    v = summary.sections.validity
    validity: dict[str, str] = {"run": v.status} if v.status != "unknown" else {}
    validity.update({f"phase:{clean(name, 40)}": clean(g.status, 40)
                     for name, g in v.phases.items() if g.status})
    validity.update({f"level:{n}": clean(g.status, 40) for n, g in v.levels.items()
                     if g.status})
    stall = read_as(Thresholds, summary.sections.thresholds).stall_s
    files = [f.sha256 for f in imported.files] if imported else []
    identity = json.dumps([run.run_id, run.started_at, target.base_url, target.model, files],
                          sort_keys=True)
    return RunFacts(
        identity=identity, wall_origin_ns=_wall_origin(run),
        run_id=_text(run.run_id, 80), status=_text(run.status, 40),
        profile=_text(run.profile, 80), suite_version=_text(run.suite_version, 40),
        base_url=_text(target.base_url, 300), model=_text(target.model, 200),
        api=_text(target.api, 40) or "openai-chat", auth=_text(target.auth, 20),
        temperature=target.sampling.temperature, seed=target.sampling.seed,
        vendor=_text(run.vendor, 120), imported_tool=_text(imported.tool if imported else None, 40),
        validity=validity, stall_threshold_s=stall if stall > 0 else 1.0)


def _text(x: object, limit: int) -> str | None:
    text = as_text(x)
    return clean(text, limit) or None if text is not None else None


def _wall_origin(run: RunMeta) -> int | None:
    """Unix ns of t0_s = 0: the clock's wall reading beside its origin, else the start."""
    wall = run.clock.wall_ns
    if isinstance(wall, int) and not isinstance(wall, bool) and 0 < wall < 1 << 63:
        return wall  # an int as written: `as_count` goes through a float (256 ns steps)
    started = run.started_at
    if started is None:
        return None
    try:
        when = datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:  # a peer tool's local time, zone unrecorded: read as UTC,
        when = when.replace(tzinfo=UTC)  # as the catalog reads it
    ns = int(when.timestamp() * 1e9)
    return ns if 0 < ns < 1 << 62 else None  # OTLP's clock: unsigned ns, to 2116 here


# --------------------------------------------------------------------------- spans


@dataclass(frozen=True)
class SpanEvent:
    """A moment inside a span: the first chunk, the first answer token, a stall."""

    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedSpan:
    """One span as it will be sent: ids, times (Unix ns), attributes, events."""

    name: str
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    kind: Literal["client", "internal"]
    attributes: Attributes
    events: tuple[SpanEvent, ...] = ()
    #: the span's status is ERROR with this description; None: unset (OK)
    error: str | None = None


@dataclass(frozen=True)
class RunTrace:
    """The run as one trace: the run's span first, then phases, levels, requests."""

    trace_id: int
    spans: tuple[PlannedSpan, ...]
    #: the request spans among them (one per record)
    requests: int


def stable_id(identity: str, key: str, bits: int) -> int:
    """A stable non-zero id of `bits` bits from the run's identity and a key."""
    digest = hashlib.sha256(f"{identity}\x00{key}".encode()).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1


def build_trace(facts: RunFacts, records: Iterable[RequestRecord]) -> RunTrace:
    """The run's trace. Every record becomes a request span (its order in the file is
    part of its id: an imported run's ids are the peer tool's and need not be unique)."""
    if facts.wall_origin_ns is None:
        raise ValueError("run.json places the run at no time (no clock.wall_ns, no "
                         "started_at): its spans cannot be put on a timeline")
    origin = facts.wall_origin_ns
    trace_id = stable_id(facts.identity, "trace", 128)
    run_span = stable_id(facts.identity, "run", 64)
    requests: list[PlannedSpan] = []
    groups: dict[str, list[PlannedSpan]] = defaultdict(list)
    levels: dict[tuple[str, int], list[PlannedSpan]] = defaultdict(list)
    for i, rec in enumerate(records):
        phase = phase_name(rec)
        parent = (stable_id(facts.identity, f"level:{phase}:{rec.level}", 64)
                  if phase in LEVELLED and rec.level is not None
                  else stable_id(facts.identity, f"phase:{phase}", 64))
        span = request_span(facts, rec, origin, stable_id(facts.identity, f"request:{i}:{rec.id}",
                                                   64), parent)
        requests.append(span)
        groups[phase].append(span)
        if phase in LEVELLED and rec.level is not None:
            levels[(phase, rec.level)].append(span)
    level_spans = [group_span(
        facts, f"evalkit {phase} level {level}", stable_id(facts.identity, f"level:{phase}:{level}",
                                                     64),
        stable_id(facts.identity, f"phase:{phase}", 64), children,
        {"evalkit.phase": phase, "evalkit.level": level,
         **_validity(facts, f"level:{level}" if phase == "ramp" else None)})
        for (phase, level), children in sorted(levels.items(), key=lambda kv: kv[0][1])]
    order = {p: i for i, p in enumerate(PHASE_ORDER)}
    phase_spans = [group_span(
        facts, f"evalkit phase {phase}", stable_id(facts.identity, f"phase:{phase}", 64), run_span,
        children, {"evalkit.phase": phase, **_validity(facts, f"phase:{phase}")})
        for phase, children in sorted(groups.items(), key=lambda kv: (
            order.get(kv[0], len(order)), min(s.start_ns for s in kv[1])))]
    what = f"import {facts.imported_tool}" if facts.imported_tool else "probe"
    run_attrs: dict[str, AttrValue] = {
        "evalkit.run.kind": "import" if facts.imported_tool else "probe",
        "evalkit.requests": len(requests), **_validity(facts, "run"), **facts.server()}
    for key, value in (("evalkit.run.id", facts.run_id), ("evalkit.run.status", facts.status),
                       ("evalkit.profile", facts.profile), ("evalkit.vendor", facts.vendor),
                       ("evalkit.imported.tool", facts.imported_tool),
                       ("gen_ai.request.model", facts.model)):
        if value is not None:
            run_attrs[key] = value
    top = group_span(facts, f"evalkit {what} {facts.model or ''}".strip(), run_span, None,
                      phase_spans, run_attrs)
    return RunTrace(trace_id, (top, *phase_spans, *level_spans, *requests), len(requests))


def phase_name(rec: RequestRecord) -> str:
    """A record's phase as a span or metric names it: a run directory handed over may
    carry any text there (escapes, a bell, megabytes), and a trace view prints it."""
    return clean(rec.phase, 40)


def _validity(facts: RunFacts, scope: str | None) -> dict[str, AttrValue]:
    status = facts.validity.get(scope) if scope else None
    return {"evalkit.validity": status} if status else {}


def group_span(facts: RunFacts, name: str, span_id: int, parent: int | None,
                children: Sequence[PlannedSpan], attrs: dict[str, AttrValue]) -> PlannedSpan:
    """A span over its children's time (a run with no request is an instant)."""
    start = min((c.start_ns for c in children), default=facts.wall_origin_ns or 0)
    end = max((c.end_ns for c in children), default=start)
    return PlannedSpan(name=name, span_id=span_id, parent_id=parent, start_ns=start,
                       end_ns=end, kind="internal", attributes=attrs)


def request_span(facts: RunFacts, rec: RequestRecord, origin_ns: int, span_id: int,
                 parent_id: int) -> PlannedSpan:
    """One request as a GenAI client span."""
    op, provider = facts.operation
    start = origin_ns + round(rec.t0_s * 1e9)
    last = rec.chunks[-1][0] if rec.chunks else None
    end_s = next((t for t in (rec.end_s, rec.e2e_s, last) if t is not None), 0.0)
    attrs: dict[str, AttrValue] = {
        "gen_ai.operation.name": op, "gen_ai.provider.name": provider,
        # the same under its name before semantic-conventions v1.37, which backends built
        # on the older conventions still read
        "gen_ai.system": provider, "gen_ai.request.stream": True, **facts.server(),
        "evalkit.request.id": clean(rec.id, 120), "evalkit.phase": phase_name(rec),
        "evalkit.outcome": rec.outcome, "evalkit.chunks": len(rec.chunks)}
    optional: tuple[tuple[str, AttrValue | None], ...] = (
        ("gen_ai.request.model", facts.model),
        ("gen_ai.request.max_tokens", rec.requested_output_tokens),
        ("gen_ai.request.temperature", facts.temperature),
        ("gen_ai.request.seed", facts.seed),
        ("gen_ai.response.model", clean(rec.model, 200) if rec.model else None),
        ("gen_ai.response.finish_reasons",
         [clean(rec.finish_reason, 40)] if rec.finish_reason else None),
        ("gen_ai.response.time_to_first_chunk", rec.ttft_s),
        ("gen_ai.usage.input_tokens", None if rec.prompt_tokens_estimated else rec.prompt_tokens),
        ("gen_ai.usage.output_tokens", rec.usage_completion_tokens),
        ("gen_ai.usage.cache_read.input_tokens", rec.cached_prompt_tokens),
        ("gen_ai.conversation.id", clean(rec.session, 120) if rec.session else None),
        ("http.response.status_code", rec.http_status),
        ("error.type", error_type(rec)),
        ("evalkit.level", rec.level),
        ("evalkit.ttft_s", rec.ttft_s), ("evalkit.ttfa_s", rec.ttfa_s),
        ("evalkit.e2e_s", rec.e2e_s), ("evalkit.end_s", rec.end_s),
        ("evalkit.output_tokens", rec.output_tokens),
        ("evalkit.output_tokens_estimated",
         rec.output_tokens_estimated if rec.output_tokens is not None else None),
        ("evalkit.counted_output_tokens", rec.counted_output_tokens),
        ("evalkit.prompt_tokens", rec.prompt_tokens),
        ("evalkit.send_lag_s", rec.send_lag_s), ("evalkit.connect_s", rec.connect_s),
        ("evalkit.reconnects", rec.reconnects or None),
        ("evalkit.retry_after_s", rec.retry_after_s),
        ("evalkit.canary", clean(rec.canary, 40) if rec.canary else None),
        ("evalkit.shape", clean(rec.shape, 80) if rec.shape else None),
        ("evalkit.turn", rec.turn), ("evalkit.step", rec.step))
    attrs.update({k: v for k, v in optional if v is not None})
    if rec.chunks:
        kept = rec.chunks[:CHUNK_TIMES_MAX]
        attrs["evalkit.chunk.offsets_s"] = [round(t, 7) for t, _ in kept]
        attrs["evalkit.chunk.tokens"] = [n for _, n in kept]
        if len(rec.chunks) > len(kept):
            attrs["evalkit.chunk.truncated"] = True
    return PlannedSpan(
        name=f"{op} {facts.model}" if facts.model else op, span_id=span_id,
        parent_id=parent_id, start_ns=start, end_ns=start + max(round(end_s * 1e9), 0),
        kind="client", attributes=attrs, events=_events(rec, start, facts.stall_threshold_s),
        error=None if rec.outcome == "ok" else clean(
            f"{rec.outcome}: {rec.error}" if rec.error else rec.outcome, 200))


def error_type(rec: RequestRecord) -> str | None:
    """error.type: the HTTP status of a refused request, else the outcome's name."""
    if rec.outcome == "ok":
        return None
    if rec.http_status is not None and rec.http_status != 200:
        return str(rec.http_status)
    return rec.outcome


def _events(rec: RequestRecord, start_ns: int, stall_s: float) -> tuple[SpanEvent, ...]:
    """The moments a trace view should show: first chunk, first answer token when
    reasoning came first, the longest stalls, the last chunk."""
    if not rec.chunks:
        return ()

    def at(offset_s: float) -> int:
        return start_ns + round(offset_s * 1e9)

    events = [SpanEvent("evalkit.first_chunk", at(rec.chunks[0][0]),
                        {"evalkit.ttft_s": rec.ttft_s if rec.ttft_s is not None
                         else rec.chunks[0][0]})]
    if rec.ttfa_s is not None and rec.ttft_s is not None and rec.ttfa_s > rec.ttft_s:
        events.append(SpanEvent("evalkit.first_answer", at(rec.ttfa_s),
                                {"evalkit.ttfa_s": rec.ttfa_s}))
    gaps = sorted(((b[0] - a[0], i + 1, b[0]) for i, (a, b) in
                   enumerate(zip(rec.chunks, rec.chunks[1:], strict=False))
                   if b[0] - a[0] > stall_s), reverse=True)
    for gap, index, t in sorted(gaps[:STALL_EVENTS_MAX], key=lambda g: g[2]):
        events.append(SpanEvent("evalkit.stall", at(t),
                                {"evalkit.gap_s": gap, "evalkit.chunk.index": index}))
    if len(rec.chunks) > 1:
        events.append(SpanEvent("evalkit.last_chunk", at(rec.chunks[-1][0]),
                                {"evalkit.chunks": len(rec.chunks)}))
    return tuple(events)
