"""The edge: a finished run's trace and metrics sent to an OTLP/HTTP collector with the
OpenTelemetry SDK's exporters, every wait bounded.

Where to: `--otlp-endpoint URL` (the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT:
`/v1/traces` and `/v1/metrics` are appended), else the standard variables
OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (full URLs). OTEL_SDK_DISABLED=true, and
OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER=none, turn a signal off. Headers for the
collector (an API key) come only from OTEL_EXPORTER_OTLP_HEADERS and its per-signal forms,
read by the SDK itself: they are never a flag value, never written to run.json, and a
message from the exporter that repeats one has it blanked. An endpoint URL with
credentials in it (user:password@) or a query (?token=) is refused for the same reason.
The SDK's other variables apply as it reads them (OTEL_EXPORTER_OTLP_CERTIFICATE,
_COMPRESSION, ...); OTEL_EXPORTER_OTLP_TIMEOUT is read here, in milliseconds as the
specification says (the Python SDK alone reads seconds), and passed on.

Bounded: each export request has that timeout (default 10 s; the SDK retries a 429, 502,
503, 504 or a refused connection inside it), the first failed request ends the export (a
dead collector is not asked 100 times), and the whole export runs on a daemon thread
that is abandoned once the collector has accepted no batch for three timeouts (or after
`TOTAL_S` in all), so a collector that accepts and then trickles bytes costs at most
that. A collector's answer is read to `ANSWER_MAX_BYTES`, and a redirect is a failed
delivery, never followed (the SDK would count it as delivered). Nothing here can fail
the caller: a failure is an `ExportOutcome` whose `problem` says what happened, and the
run directory is never written.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, UsageError
from evalkit.rundir.otlp.figures import GaugePoint, HistogramPoint, RunMetrics, build_metrics
from evalkit.rundir.otlp.trace import PlannedSpan, RunTrace, build_trace, run_facts
from evalkit.sanitize import clean

#: spans per export request (a span with its chunk times is a few KB)
SPAN_BATCH = 256
DEFAULT_TIMEOUT_S = 10.0
#: the export is abandoned once the collector has accepted nothing for this many timeouts
DEADLINE_TIMEOUTS = 3
#: and once it has taken this long, however steadily it was accepted (a big run to a slow
#: collector: `evalkit export otlp` sends it again from the run directory)
TOTAL_S = 600.0
INSTALL_HINT = "pip install 'evalkit[otlp]'"
#: the most of a collector's answer read: OTLP's is a small protobuf (a partial-success
#: message at most); a collector that answers with megabytes costs this much memory
ANSWER_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class OtlpTarget:
    """Where a run's telemetry goes, resolved from the flag and the environment."""

    #: full signal URLs; None: that signal is not sent
    traces_url: str | None
    metrics_url: str | None
    #: each export request's timeout (s)
    timeout_s: float
    #: header values from the environment, never shown (blanked from any message)
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def shown(self) -> str:
        """The collector as a message names it: scheme, host, port (no path, no query)."""
        url = urllib.parse.urlsplit(self.traces_url or self.metrics_url or "")
        return clean(f"{url.scheme}://{url.netloc}", 200)

    @property
    def deadline_s(self) -> float:
        """The longest the whole export may take."""
        return DEADLINE_TIMEOUTS * self.timeout_s


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _url(value: str, where: str) -> str:
    """A collector URL, checked: http(s), a host, no credentials in it."""
    try:
        url = urllib.parse.urlsplit(value.strip())
        host = url.hostname
    except ValueError:
        host, url = None, urllib.parse.urlsplit("")
    if url.scheme not in ("http", "https") or not host:
        # shown without what may be a secret: a query, a fragment, a user part
        shown = value.split("?")[0].split("#")[0].rsplit("@", 1)[-1]
        raise UsageError(f"{where}: {clean(shown, 120)!r} is not an http(s) URL of a "
                         "collector, e.g. http://localhost:4318")
    if url.username is not None or url.password is not None or url.query or url.fragment:
        # a query is where a token hides (?token=, ?x-api-key=), and the SDK's messages
        # repeat the URL whole; a base URL's query would also swallow the signal's path
        raise UsageError(f"{where}: the URL carries credentials or a query; put a token in "
                         "OTEL_EXPORTER_OTLP_HEADERS (e.g. 'authorization=Bearer%20...'), which "
                         "is never written anywhere")
    return value.strip()


def otlp_target(endpoint: str | None, env: Mapping[str, str]) -> OtlpTarget | None:
    """Where to send, or None when nothing asks for an export.

    UsageError for an endpoint that is not an http(s) URL, one with credentials in it, a
    protocol other than http/protobuf, or a timeout that is not a number.
    """
    if _truthy(env.get("OTEL_SDK_DISABLED")):
        return None
    base = endpoint or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None
    where = "--otlp-endpoint" if endpoint else "OTEL_EXPORTER_OTLP_ENDPOINT"
    urls: dict[str, str | None] = {}
    for signal in ("traces", "metrics"):
        var = f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
        protocol = (env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
                    or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
        if env.get(f"OTEL_{signal.upper()}_EXPORTER", "").strip().lower() == "none":
            urls[signal] = None
        elif base and endpoint:  # the flag names the collector: it wins
            urls[signal] = f"{_url(base, where).rstrip('/')}/v1/{signal}"
        elif env.get(var):
            urls[signal] = _url(env[var], var)
        elif base:
            urls[signal] = f"{_url(base, where).rstrip('/')}/v1/{signal}"
        else:
            urls[signal] = None
        if urls[signal] and protocol.strip().lower() != "http/protobuf":
            raise UsageError(f"OTLP protocol {clean(protocol, 30)!r}: evalkit sends OTLP over "
                             "HTTP (http/protobuf); point it at the collector's HTTP port "
                             "(4318) and unset OTEL_EXPORTER_OTLP_PROTOCOL")
    if not urls["traces"] and not urls["metrics"]:
        return None
    raw = env.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or env.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    timeout = DEFAULT_TIMEOUT_S
    if raw:
        try:
            timeout = float(raw) / 1000  # milliseconds, as the specification says
        except ValueError:
            timeout = math.nan
        if not math.isfinite(timeout) or timeout <= 0:
            raise UsageError(f"OTEL_EXPORTER_OTLP_TIMEOUT={clean(raw, 20)!r}: expected "
                             "milliseconds, e.g. 10000")
    found = {v for k, text in env.items() if k.startswith("OTEL_EXPORTER_OTLP")
             and k.endswith("HEADERS") for v in _header_values(text)}
    secrets = tuple(sorted(found, key=len, reverse=True))  # the longest first
    return OtlpTarget(urls["traces"], urls["metrics"], min(max(timeout, 0.1), 60.0), secrets)


def _header_values(text: str) -> list[str]:
    """The values of a `k=v,k2=v2` header list, to blank: each whole, as written and
    decoded, from 4 characters (a short key is still a key), and each word of 8 or more
    of it (a collector that echoes the token without its "Bearer "; a shorter word, like
    "Bearer" itself, would blank the message's own words)."""
    out: list[str] = []
    for item in text.split(","):
        _, _, value = item.partition("=")
        decoded = urllib.parse.unquote(value.strip())
        wholes = [v for v in (value.strip(), decoded) if len(v) >= 4]
        for v in (*wholes, *(w for w in decoded.split() if len(w) >= 8)):
            if v not in out:
                out.append(v)
    return out


def blank(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret in it replaced by `***`."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


# --------------------------------------------------------------------------- sending


@dataclass(frozen=True)
class ExportOutcome:
    """What an export did: how much of the run reached the collector, and any problem."""

    collector: str
    spans: int
    spans_sent: int
    metric_points: int
    metrics_sent: bool
    seconds: float
    #: why not everything was delivered (cleaned, secrets blanked); None: all delivered
    problem: str | None = None

    @property
    def delivered(self) -> bool:
        return self.problem is None


class _Progress:
    """What the sending thread did so far (read after the deadline too)."""

    def __init__(self) -> None:
        self.spans_sent = 0
        self.metrics_sent = False
        self.problem: str | None = None
        self.done = threading.Event()
        #: when the collector last accepted a batch (time.monotonic)
        self.last_progress = time.monotonic()

    def advanced(self) -> None:
        """A batch was accepted: the wait for the next starts again."""
        self.last_progress = time.monotonic()

    def wait(self, stalled_s: float, total_s: float) -> bool:
        """Wait for the thread to finish: False once the collector has accepted nothing for
        `stalled_s`, or `total_s` has passed whatever it accepted."""
        started = time.monotonic()
        while True:
            now = time.monotonic()
            left = min(self.last_progress + stalled_s, started + total_s) - now
            if left <= 0:
                return self.done.is_set()
            if self.done.wait(min(left, 0.5)):
                return True


class _Messages(logging.Handler):
    """The SDK's log lines, kept (a few) instead of printed: the caller says one line."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < 20:
            try:
                self.lines.append(record.getMessage())
            except Exception:  # a malformed log call: not ours to raise from
                self.lines.append(record.msg if isinstance(record.msg, str) else "?")


def export_run(run_dir: Path, target: OtlpTarget) -> ExportOutcome:
    """Send a run directory's trace and metrics; never raises for the collector's sake.

    The run is read as any reader reads it (`open_run`: bounded, checked), so an
    imported or handed-over run is sent as faithfully as a probe's own; a voice run's
    turns (turns.jsonl, as its summary was checked against them) go as its spans.
    EvalkitError when the run directory cannot be read or the SDK is not installed.
    """
    from evalkit.analysis.summary import measurements
    from evalkit.rundir.otlp.voicetrace import build_voice_metrics, build_voice_trace
    from evalkit.rundir.run import open_run
    from evalkit.voice.records import read_turns

    require_sdk()
    rd = open_run(run_dir)
    facts = run_facts(rd.meta, rd.summary)
    turns = read_turns(rd.turns_path)[0] if rd.turns_path is not None else None
    try:
        trace = (build_trace(facts, rd.records) if turns is None
                 else build_voice_trace(facts, turns, rd.summary.voice))
    except ValueError as exc:
        raise EvalkitError(f"{run_dir}: {exc}") from None
    top = trace.spans[0]
    metrics = (build_metrics(facts, rd.records, measurements(rd.summary), top.start_ns,
                             top.end_ns) if turns is None else
               build_voice_metrics(facts, turns, rd.summary.voice, top.start_ns, top.end_ns))
    return send(trace, metrics, target, {
        "service.version": facts.suite_version or "", **(
            {"evalkit.run.id": facts.run_id} if facts.run_id else {})})


def require_sdk() -> None:
    try:
        import opentelemetry.exporter.otlp.proto.http
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        raise UsageError("OTLP export needs the OpenTelemetry SDK and its OTLP/HTTP "
                         f"exporter: {INSTALL_HINT}") from None


def send(trace: RunTrace, metrics: RunMetrics, target: OtlpTarget,
         resource: Mapping[str, str]) -> ExportOutcome:
    """Send on a daemon thread and wait for it at most `target.deadline_s`."""
    started = time.monotonic()
    progress = _Progress()
    messages = _Messages()
    sdk_log = logging.getLogger("opentelemetry")
    sdk_log.addHandler(messages)
    sdk_log.propagate = False  # the SDK's own lines never reach the terminal unasked
    worker = threading.Thread(target=_deliver, args=(trace, metrics, target, resource,
                                                     progress), daemon=True,
                              name="evalkit-otlp-export")
    worker.start()
    finished = progress.wait(target.deadline_s, max(target.deadline_s, TOTAL_S))
    sdk_log.removeHandler(messages)
    if not any(isinstance(h, logging.NullHandler) for h in sdk_log.handlers):
        sdk_log.addHandler(logging.NullHandler())  # a late line from an abandoned thread
    problem = progress.problem
    if not finished:
        problem = (f"the collector accepted nothing for {target.deadline_s:g} s"
                   if time.monotonic() - progress.last_progress >= target.deadline_s else
                   f"the export took more than {TOTAL_S:g} s") + " (abandoned)"
    if problem is not None and messages.lines:
        problem = f"{problem}; the exporter said: {messages.lines[0]}"
    if problem is not None:
        problem = clean(blank(problem, target.secrets), 300)
    return ExportOutcome(
        collector=target.shown, spans=len(trace.spans) if target.traces_url else 0,
        spans_sent=progress.spans_sent,
        metric_points=metrics.points if target.metrics_url else 0,
        metrics_sent=progress.metrics_sent, seconds=time.monotonic() - started,
        problem=problem)


def _deliver(trace: RunTrace, metrics: RunMetrics, target: OtlpTarget,
             resource_attrs: Mapping[str, str], progress: _Progress) -> None:
    """The sending thread: spans in batches, then the metrics; stops at a failure."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics.export import MetricExportResult
    from opentelemetry.sdk.trace.export import SpanExportResult

    try:
        resource = _resource(resource_attrs)
        if target.traces_url:
            spans = trace.spans
            exporter = OTLPSpanExporter(endpoint=target.traces_url, timeout=target.timeout_s,
                                        session=_session())
            try:
                for i in range(0, len(spans), SPAN_BATCH):
                    batch = spans[i:i + SPAN_BATCH]  # the SDK's spans a batch at a time
                    if exporter.export(_readable_spans(trace.trace_id, batch, resource)) \
                            is not SpanExportResult.SUCCESS:
                        progress.problem = (f"the collector refused or failed spans "
                                            f"{i + 1}-{i + len(batch)}")
                        return
                    progress.spans_sent += len(batch)
                    progress.advanced()
            finally:
                exporter.shutdown()  # type: ignore[no-untyped-call]
        if target.metrics_url and metrics.points:
            m_exporter = OTLPMetricExporter(endpoint=target.metrics_url,
                                            timeout=target.timeout_s, session=_session())
            try:
                result = m_exporter.export(_metrics_data(metrics, resource),
                                           timeout_millis=target.timeout_s * 1000)
            finally:
                m_exporter.shutdown()
            if result is not MetricExportResult.SUCCESS:
                progress.problem = "the collector refused or failed the metrics"
                return
            progress.metrics_sent = True
    except Exception as exc:  # an SDK or transport failure: the caller's warning
        progress.problem = f"{type(exc).__name__}: {exc}"
    finally:
        progress.done.set()


def _session() -> Any:
    """The exporters' HTTP session: a collector's answer is read up to `ANSWER_MAX_BYTES`,
    and a redirect is a failure. The SDK neither follows a redirect nor fails it: it
    counts any 3xx as delivered, and it reads a 200's body whole, however large."""
    import requests

    class Redirected(requests.RequestException):
        """A collector that answers 3xx: nothing was delivered, and the headers (a token)
        are not sent on to wherever it points."""

    class Bounded(requests.Session):
        def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs.update(allow_redirects=False, stream=True)
            response = super().request(method, url, *args, **kwargs)
            try:
                response._content = response.raw.read(ANSWER_MAX_BYTES, decode_content=True)
            finally:
                response.close()
            if 300 <= response.status_code < 400:
                raise Redirected(f"the collector answered {response.status_code} (a "
                                 "redirect, not followed): nothing was delivered; point the "
                                 "endpoint at the collector itself")
            return response

    return Bounded()


def _resource(attrs: Mapping[str, str]) -> Any:
    """The resource: service evalkit (unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
    name another) and the run's id; the SDK merges OTEL_RESOURCE_ATTRIBUTES in."""
    from opentelemetry.sdk.resources import Resource

    import evalkit

    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", "")
    return Resource.create({**({} if named else {"service.name": "evalkit"}),
                            **dict(attrs), "service.version": evalkit.__version__,
                            "evalkit.suite_version": attrs.get("service.version", "")})


def _scope() -> Any:
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    import evalkit

    return InstrumentationScope("evalkit", evalkit.__version__,
                                "https://opentelemetry.io/schemas/1.41.0")


def _readable_spans(trace_id: int, spans: Sequence[PlannedSpan], resource: Any) -> list[Any]:
    """The planned spans as the SDK's ReadableSpans (ids and times are ours)."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    scope = _scope()
    flags = TraceFlags(TraceFlags.SAMPLED)

    def context(span_id: int) -> SpanContext:
        return SpanContext(trace_id, span_id, is_remote=False, trace_flags=flags)

    def readable(s: PlannedSpan) -> ReadableSpan:
        return ReadableSpan(
            name=s.name, context=context(s.span_id),
            parent=context(s.parent_id) if s.parent_id is not None else None,
            resource=resource, attributes=dict(s.attributes),
            events=[Event(e.name, dict(e.attributes), e.time_ns) for e in s.events],
            kind=SpanKind.CLIENT if s.kind == "client" else SpanKind.INTERNAL,
            status=Status(StatusCode.ERROR, s.error) if s.error else Status(StatusCode.UNSET),
            start_time=s.start_ns, end_time=s.end_ns, instrumentation_scope=scope)

    return [readable(s) for s in spans]


def _metrics_data(metrics: RunMetrics, resource: Any) -> Any:
    """The run's metric families as the SDK's MetricsData (cumulative over the run)."""
    from opentelemetry.sdk.metrics.export import (
        AggregationTemporality,
        Gauge,
        Histogram,
        HistogramDataPoint,
        Metric,
        MetricsData,
        NumberDataPoint,
        ResourceMetrics,
        ScopeMetrics,
    )

    start, end = metrics.start_ns, metrics.end_ns
    out = []
    for fam in metrics.families:
        data: Any
        if fam.kind == "histogram":
            data = Histogram(data_points=[HistogramDataPoint(
                attributes=dict(p.attributes), start_time_unix_nano=start,
                time_unix_nano=end, count=p.count, sum=p.total,
                bucket_counts=list(p.bucket_counts), explicit_bounds=list(fam.bounds),
                min=p.least, max=p.most) for p in fam.points if isinstance(p, HistogramPoint)],
                aggregation_temporality=AggregationTemporality.CUMULATIVE)
        else:
            data = Gauge(data_points=[NumberDataPoint(
                attributes=dict(p.attributes), start_time_unix_nano=start,
                time_unix_nano=end, value=p.value)
                for p in fam.points if isinstance(p, GaugePoint)])
        out.append(Metric(fam.name, fam.description, fam.unit, data))
    return MetricsData(resource_metrics=[ResourceMetrics(
        resource=resource, scope_metrics=[ScopeMetrics(scope=_scope(), metrics=out,
                                                        schema_url=_scope().schema_url)],
        schema_url="")])
