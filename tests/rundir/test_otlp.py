"""OTLP export: a run's records reach a collector as one span per request, and a
collector that is down, hangs or trickles costs a warning and a bounded wait, never a
figure or a record.

The collector is an OTLP/HTTP receiver the test starts (no OpenTelemetry Collector or
Jaeger installs from PyPI, Debian or npm); what it receives is decoded with
opentelemetry-proto, the protocol's own definitions, as a collector would.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from evalkit.cli import cli
from evalkit.errors import UsageError
from evalkit.records import RequestRecord
from evalkit.rundir.otlp.send import blank, export_run, otlp_target
from evalkit.rundir.otlp.trace import CHUNK_TIMES_MAX, RunFacts, build_trace
from evalkit.rundir.run import open_run

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"
PEERS = Path(__file__).resolve().parents[1] / "data" / "peers" / "guidellm-0.8.1"
SECRET = "sekrit-collector-token-7f3a"


class Receiver:
    """An OTLP/HTTP collector: keeps every POST (path, headers, body), answers `status`."""

    def __init__(self, status: int = 200, reason: str | None = None) -> None:
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.posts.append((self.path, dict(self.headers), body))
                self.send_response(status, reason)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self) -> list[tuple[Any, Any]]:
        """(resource, span) for every span received."""
        out = []
        for path, _, body in self.posts:
            if path == "/v1/traces":
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                out += [(rs.resource, s) for rs in req.resource_spans
                        for ss in rs.scope_spans for s in ss.spans]
        return out

    def metrics(self) -> dict[str, Any]:
        out = {}
        for path, _, body in self.posts:
            if path == "/v1/metrics":
                req = ExportMetricsServiceRequest()
                req.ParseFromString(body)
                out.update({m.name: m for rm in req.resource_metrics
                            for sm in rm.scope_metrics for m in sm.metrics})
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def attrs(span: Any) -> dict[str, Any]:
    """A span's (or event's) attributes as Python values."""
    def value(v: Any) -> Any:
        kind = v.WhichOneof("value")
        if kind == "array_value":
            return [value(x) for x in v.array_value.values]
        return getattr(v, kind)
    return {a.key: value(a.value) for a in span.attributes}


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "requests.jsonl").read_text().splitlines()]


def _digests(run: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(run.iterdir())}


# --------------------------------------------------------------------------- the probe


def test_a_probe_delivers_one_span_per_request_with_its_ttft(
        tmp_path: Path, reference: Any, receiver: Receiver) -> None:
    """Against the reference endpoint, with the collector the test started: every record
    is one GenAI client span whose TTFT is the record's, under its level's span, its
    phase's and the run's; the metrics count the same requests."""
    srv = reference("gpu", mode="thread", decode_base_ms=1, request_overhead_ms=0)
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, [
        "probe", "--base-url", srv.base_url, "--model", srv.model, "--out", str(out),
        "--phases", "connect,baseline,ramp", "--levels", "1,2", "--output-tokens", "8",
        "--quiet", "--otlp-endpoint", receiver.url])
    assert r.exit_code == 0, r.output
    records = _records(out)
    spans = receiver.spans()
    assert f"otlp: {len(spans)} spans and" in r.stdout
    requests = {attrs(s)["evalkit.request.id"]: s for _, s in spans
                if s.kind == s.SPAN_KIND_CLIENT}
    assert len(requests) == len(records) == json.loads((out / "run.json").read_text())[
        "requests"]
    run = json.loads((out / "run.json").read_text())
    wall = run["clock"]["wall_ns"]
    by_id = {s.span_id: s for _, s in spans}
    assert len({s.trace_id for _, s in spans}) == 1
    for rec in records:
        span = requests[rec["id"]]
        a = attrs(span)
        assert span.name == f"chat {srv.model}"
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.system"] == "openai" and a["gen_ai.request.stream"] is True
        assert a["gen_ai.request.model"] == srv.model
        assert a["evalkit.outcome"] == rec["outcome"]
        if rec["outcome"] == "ok":
            assert a["gen_ai.response.time_to_first_chunk"] == rec["ttft_s"]
            assert a["gen_ai.usage.output_tokens"] == rec["usage_completion_tokens"]
            assert a["gen_ai.response.finish_reasons"] == [rec["finish_reason"]]
            first = next(e for e in span.events if e.name == "evalkit.first_chunk")
            assert first.time_unix_nano - span.start_time_unix_nano == round(
                rec["chunks"][0][0] * 1e9)
            assert a["evalkit.chunk.offsets_s"] == [c[0] for c in rec["chunks"]]
        assert span.start_time_unix_nano == wall + round(rec["t0_s"] * 1e9)
        parent = by_id[span.parent_span_id]
        if rec["phase"] == "ramp":
            assert parent.name == f"evalkit ramp level {rec['level']}"
            parent = by_id[parent.parent_span_id]
        assert parent.name == f"evalkit phase {rec['phase']}"
        top = by_id[parent.parent_span_id]
        assert top.name == f"evalkit probe {srv.model}" and not top.parent_span_id
    # the run's span holds every request; the wall anchor is the probe's own clock
    assert top.start_time_unix_nano <= min(s.start_time_unix_nano for s in requests.values())
    assert abs(wall / 1e9 - time.time()) < 120
    m = receiver.metrics()
    ttfc = m["gen_ai.client.operation.time_to_first_chunk"].histogram.data_points
    assert sum(p.count for p in ttfc) == sum(1 for x in records if x["outcome"] == "ok")
    summary = json.loads((out / "summary.json").read_text())
    p90 = {(attrs(p)["evalkit.phase"], attrs(p)["evalkit.level"]): p.as_double
           for p in m["evalkit.ttft"].gauge.data_points if attrs(p)["evalkit.stat"] == "p90"}
    assert p90[("ramp", 2)] == summary["ramp"]["levels"][-1]["ttft_s"]["p90"]


def _probe(srv: Any, out: Path, *extra: str) -> tuple[Any, float]:
    """`evalkit probe` of connect and baseline, and how long it took (s)."""
    t = time.monotonic()
    r = CliRunner().invoke(cli, [
        "probe", "--base-url", srv.base_url, "--model", srv.model, "--out", str(out),
        "--phases", "connect,baseline", "--output-tokens", "8", "--quiet", *extra])
    return r, time.monotonic() - t


def _measured(out: Path) -> tuple[list[tuple[str, Any, str, int]], dict[str, Any]]:
    """What a run measured that does not depend on the moment: each record's phase, level,
    outcome and chunk count, and the summary's counts, outcomes and keys. Not its validity:
    this test runs beside the timing tests at nice 10, and a baseline the loaded client
    fell behind in is flagged client-bound (degraded) in one run and not in the next;
    that no validity reason names the collector is checked here apart."""
    records = sorted((r["phase"], r["level"], r["outcome"], len(r["chunks"]))
                     for r in _records(out))
    s = json.loads((out / "summary.json").read_text())
    assert "otlp" not in json.dumps(s["validity"]).lower()
    return records, {"keys": sorted(s), "requests": s["requests"], "outcomes": s["outcomes"],
                     "baseline": sorted(s["baseline"])}


def test_a_collector_down_or_hanging_changes_no_figure_and_costs_a_bounded_wait(
        tmp_path: Path, reference: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same probe without a collector, with one that refuses and with one that accepts
    and then trickles a byte every 0.2 s: each exits as its run says (0) with every record
    in requests.jsonl and the summary the records' own, the same requests, outcomes and
    figures; the failures cost a warning that names what was not delivered, and the
    hanging one costs the probe at most the deadline (3 timeouts of 1 s) more."""
    srv = reference("gpu", mode="thread", decode_base_ms=1, request_overhead_ms=0)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
    alone, took_alone = _probe(srv, tmp_path / "alone")
    assert alone.exit_code == 0, alone.output
    assert "otlp" not in alone.output + alone.stderr
    hanging = _Silent(trickle=True)
    try:
        down, _ = _probe(srv, tmp_path / "down", "--otlp-endpoint",
                         f"http://127.0.0.1:{_closed_port()}")
        slow, took_slow = _probe(srv, tmp_path / "slow", "--otlp-endpoint", hanging.url)
    finally:
        hanging.close()
    for r in (down, slow):
        assert r.exit_code == 0, r.output
        assert r.stderr.count("warning: otlp:") == 1 and "Delivered 0 of" in r.stderr
        assert "sends it again" in r.stderr
    assert "accepted nothing for 3 s" in slow.stderr
    # the export's own wait (what the warning says it took), and the probe's whole time
    # beside the probe without a collector, with room for a loaded machine's variance
    said = re.search(r"\(abandoned\) \(([0-9.]+) s\)", slow.stderr)
    assert said is not None, slow.stderr
    waited = float(said[1])
    assert 3.0 <= waited < 3.0 + 0.7, slow.stderr
    assert took_slow - took_alone < 3.0 + 4.0, (took_slow, took_alone)
    want = _measured(tmp_path / "alone")
    for out in (tmp_path / "down", tmp_path / "slow"):
        assert _measured(out) == want
        records = _records(out)
        assert len(records) == json.loads((out / "run.json").read_text())["requests"] > 0
        assert open_run(out).rebuilt is None  # the summary is still the records' own


def test_an_imported_run_exports_as_a_probe_does(tmp_path: Path, receiver: Receiver) -> None:
    """`evalkit import` then `evalkit export otlp`: a peer tool's run (guidellm's report
    in tests/data/peers) reaches the collector one span per record, with the record's
    TTFT, under a run span that says it was imported, placed at the run's start."""
    out = tmp_path / "imported"
    r = CliRunner().invoke(cli, ["import", "guidellm", str(PEERS / "benchmarks.json"),
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["export", "otlp", str(out), "--otlp-endpoint", receiver.url])
    assert r.exit_code == 0, r.output
    spans = [s for _, s in receiver.spans()]
    requests = {attrs(s)["evalkit.request.id"]: s for s in spans
                if s.kind == s.SPAN_KIND_CLIENT}
    records = _records(out)
    assert len(requests) == len(records) > 0
    assert sum(1 for rec in records if rec.get("ttft_s") is not None) > 0
    for rec in records:  # absent where the record has none (a request that failed)
        assert attrs(requests[rec["id"]]).get("gen_ai.response.time_to_first_chunk") == \
            rec.get("ttft_s")
    [top] = [s for s in spans if not s.parent_span_id]
    assert top.name.startswith("evalkit import guidellm")
    assert attrs(top)["evalkit.imported.tool"] == "guidellm"
    assert top.start_time_unix_nano >= 1_600_000_000 * 10**9  # on the calendar, not at 0


# --------------------------------------------------------------------------- bounded


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


class _Silent:
    """A collector that accepts connections and then says nothing, or one byte a while
    (`trickle`): a read timeout alone would never end the second."""

    def __init__(self, trickle: bool = False) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        self.conns: list[socket.socket] = []
        self.trickle = trickle
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(conn)
            if self.trickle:
                threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        for b in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200:
            if self.stop.wait(0.2):
                return
            try:
                conn.sendall(bytes([b]))
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize("kind", ["refused", "silent", "trickle"])
def test_every_wait_is_bounded(kind: str, tmp_path: Path) -> None:
    """Refused, accepted and never answered, answered a byte at a time: each costs at most
    the deadline (3 timeouts), writes nothing, and says what reached the collector."""
    run = tmp_path / "run"
    run.mkdir()
    for p in RUN.iterdir():
        (run / p.name).write_bytes(p.read_bytes())
    before = _digests(run)
    server = None if kind == "refused" else _Silent(trickle=kind == "trickle")
    url = server.url if server else f"http://127.0.0.1:{_closed_port()}"
    try:
        target = otlp_target(url, {"OTEL_EXPORTER_OTLP_TIMEOUT": "1000"})
        assert target is not None and target.deadline_s == 3.0
        t = time.monotonic()
        outcome = export_run(run, target)
        took = time.monotonic() - t
    finally:
        if server:
            server.close()
    assert outcome.problem is not None and outcome.spans_sent == 0
    assert not outcome.metrics_sent
    assert took < target.deadline_s + 1.5, took
    if kind == "trickle":  # only the deadline ends it: the SDK's read timeout never fires
        assert "accepted nothing for 3 s (abandoned)" in outcome.problem
    assert _digests(run) == before


def test_a_secret_header_reaches_the_collector_and_nowhere_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """OTEL_EXPORTER_OTLP_HEADERS is sent; a collector that echoes it back in its refusal
    has it blanked from the warning."""
    run = tmp_path / "run"
    run.mkdir()
    for p in RUN.iterdir():
        (run / p.name).write_bytes(p.read_bytes())
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{SECRET}")
    hostile = Receiver(status=401, reason=f"bad token Bearer {SECRET}")
    try:
        r = CliRunner().invoke(cli, ["export", "otlp", str(run), "--otlp-endpoint", hostile.url])
    finally:
        hostile.close()
    assert r.exit_code == 1
    assert hostile.posts[0][1]["authorization"] == f"Bearer {SECRET}"
    assert "401" in r.stderr and SECRET not in r.output + r.stderr
    assert all(SECRET not in p.read_text(errors="replace") for p in run.iterdir())


# --------------------------------------------------------------------------- the target


class TestTarget:
    """Where an export goes, from --otlp-endpoint and the standard variables."""

    def test_a_short_header_value_is_still_blanked(self) -> None:
        """A 6-character key is a key: blanked whole where a collector echoes it; so is a
        token echoed without its "Bearer ", while the word "Bearer" alone is not (it
        would blank the message's own words)."""
        t = otlp_target("http://c:4318", {"OTEL_EXPORTER_OTLP_HEADERS":
                                          "api-key=ab12cd,authorization=Bearer%20tok3n-9f8e7d"})
        assert t is not None
        assert blank("Bearer refused: api-key ab12cd, token tok3n-9f8e7d", t.secrets) == \
            "Bearer refused: api-key ***, token ***"

    def test_nothing_asked_nothing_sent(self) -> None:
        assert otlp_target(None, {}) is None
        assert otlp_target("http://c:4318", {"OTEL_SDK_DISABLED": "true"}) is None

    def test_the_flag_is_a_base_url_and_wins(self) -> None:
        t = otlp_target("http://c:4318/", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/t"})
        assert t is not None
        assert (t.traces_url, t.metrics_url) == ("http://c:4318/v1/traces",
                                                 "http://c:4318/v1/metrics")

    def test_the_signal_variables_are_full_urls(self) -> None:
        t = otlp_target(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://o.example",
                               "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/in",
                               "OTEL_METRICS_EXPORTER": "none",
                               "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"})
        assert t is not None
        assert (t.traces_url, t.metrics_url, t.timeout_s) == ("https://t.example/in", None, 2.5)

    @pytest.mark.parametrize(("endpoint", "env", "says"), [
        ("http://user:pw@c:4318", {}, "OTEL_EXPORTER_OTLP_HEADERS"),
        ("c:4318", {}, "not an http(s) URL"),
        ("http://c:4317", {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http/protobuf"),
        ("http://c:4318", {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "milliseconds"),
    ])
    def test_refused(self, endpoint: str, env: dict[str, str], says: str) -> None:
        with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")):
            otlp_target(endpoint, env)
        assert "pw" not in str(otlp_target.__name__)

# --------------------------------------------------------------------------- the trace


def _facts(**kw: Any) -> RunFacts:
    base: dict[str, Any] = dict(identity="run-1", wall_origin_ns=1_700_000_000_000_000_000,
                                run_id="abc", status="complete", profile="quick",
                                suite_version="1", base_url="https://api.v.example/v1",
                                model="m-8b", api="openai-chat", auth="bearer",
                                temperature=0.0, seed=None, vendor=None)
    return RunFacts(**{**base, **kw})


def test_the_trace_is_the_same_trace_when_sent_twice() -> None:
    recs = [RequestRecord(id="a", phase="baseline", level=1, outcome="ok", t0_s=0.5,
                          ttft_s=0.1, e2e_s=0.3, chunks=[(0.1, 1), (0.3, 1)])]
    one, two = build_trace(_facts(), recs), build_trace(_facts(), recs)
    assert one == two
    other = build_trace(_facts(identity="run-2"), recs)
    assert other.trace_id != one.trace_id


def test_a_failed_request_is_an_error_span_and_stalls_are_events() -> None:
    stalled = [(0.2, 1), (0.25, 1), (2.5, 1), *((2.5 + i * 0.01, 1) for i in range(1, 600))]
    recs = [RequestRecord(id="s", phase="ramp", level=4, outcome="ok", t0_s=1.0, ttft_s=0.2,
                          e2e_s=stalled[-1][0], end_s=stalled[-1][0], chunks=stalled),
            RequestRecord(id="r", phase="ramp", level=4, outcome="rejected", t0_s=1.1,
                          http_status=429, error="rate limited \x1b[2J", end_s=0.05)]
    trace = build_trace(_facts(api="anthropic-messages"), recs)
    spans = {s.attributes.get("evalkit.request.id"): s for s in trace.spans}
    ok, refused = spans["s"], spans["r"]
    assert ok.name == "chat m-8b" and ok.attributes["gen_ai.provider.name"] == "anthropic"
    [stall] = [e for e in ok.events if e.name == "evalkit.stall"]
    assert stall.attributes["evalkit.gap_s"] == pytest.approx(2.25)
    assert stall.time_ns == 1_700_000_000_000_000_000 + round((1.0 + 2.5) * 1e9)
    assert len(ok.attributes["evalkit.chunk.offsets_s"]) == CHUNK_TIMES_MAX  # type: ignore[arg-type]
    assert ok.attributes["evalkit.chunk.truncated"] is True
    assert ok.attributes["evalkit.chunks"] == 602 and ok.error is None
    assert refused.attributes["error.type"] == "429" and "\x1b" not in (refused.error or "")
    assert "gen_ai.response.time_to_first_chunk" not in refused.attributes
    assert trace.requests == 2 and len(trace.spans) == 5  # run, phase, level, 2 requests


def test_usage_is_the_vendors_and_our_count_is_ours() -> None:
    """gen_ai.usage.* carry only what the vendor reported; our estimate is evalkit's."""
    counted = RequestRecord(id="c", phase="baseline", level=1, outcome="ok", t0_s=0.0,
                            ttft_s=0.1, output_tokens=40, output_tokens_estimated=True,
                            prompt_tokens=300, prompt_tokens_estimated=True,
                            chunks=[(0.1, 40)])
    [*_, span] = build_trace(_facts(auth="api-key"), [counted]).spans
    assert "gen_ai.usage.output_tokens" not in span.attributes
    assert "gen_ai.usage.input_tokens" not in span.attributes
    assert span.attributes["evalkit.output_tokens"] == 40
    assert span.attributes["evalkit.output_tokens_estimated"] is True
    assert span.attributes["gen_ai.provider.name"] == "azure.ai.openai"
    assert span.attributes["server.address"] == "api.v.example"
    assert span.attributes["server.port"] == 443


def test_the_clouds_apis_name_their_providers() -> None:
    """Bedrock is aws.bedrock; Gemini is gcp.gemini with a key and gcp.vertex_ai with
    Google's application default credentials (the same API on Vertex AI)."""
    assert _facts(api="bedrock-converse", auth="sigv4").operation == ("chat", "aws.bedrock")
    assert _facts(api="gemini", auth="x-goog-api-key").operation == ("generate_content",
                                                                    "gcp.gemini")
    assert _facts(api="gemini", auth="google-adc").operation == ("generate_content",
                                                                "gcp.vertex_ai")
    # a realtime call's turns: "realtime", the provider's flavour by its auth as above
    assert _facts(api="openai-realtime", auth="api-key").operation == ("realtime",
                                                                      "azure.ai.openai")
    assert _facts(api="gemini-live", auth="x-goog-api-key").operation == ("realtime",
                                                                         "gcp.gemini")
    assert _facts(api="gemini-live", auth="google-adc").operation == ("realtime",
                                                                     "gcp.vertex_ai")
