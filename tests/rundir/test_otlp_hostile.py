"""A hostile collector and a careless endpoint: a redirect is not delivered and not
followed, a huge answer is read only to a cap, and a token in the endpoint's query is
refused before anything is measured (the SDK's messages repeat a URL whole)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evalkit.errors import UsageError
from evalkit.rundir.otlp.send import ANSWER_MAX_BYTES, export_run, otlp_target

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"
TOKEN = "x-api-key=hunter2hunter2hunter2"


class Collector:
    """An HTTP server whose every POST is answered by `answer(handler)`; keeps the headers
    of each POST it was sent."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.headers.append(dict(self.headers))
                answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def run(tmp_path: Path) -> Path:
    shutil.copytree(RUN, tmp_path / "run")
    return tmp_path / "run"


def _empty(status: int, **headers: str) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("content-length", "0")
        h.end_headers()
    return answer


def test_a_redirect_is_no_delivery_and_the_token_does_not_follow_it(
        run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK counts a 3xx as delivered (it does not follow it): the export says nothing
    was delivered, and the host it points at is never sent the collector's header."""
    elsewhere = Collector(_empty(200))
    redirecting = Collector(_empty(307, location=f"{elsewhere.url}/v1/traces"))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", TOKEN)
    try:
        target = otlp_target(redirecting.url, {"OTEL_EXPORTER_OTLP_HEADERS": TOKEN})
        assert target is not None
        outcome = export_run(run, target)
    finally:
        elsewhere.close()
        redirecting.close()
    assert outcome.spans_sent == 0 and not outcome.metrics_sent
    assert outcome.problem is not None and "307" in outcome.problem
    assert redirecting.headers and redirecting.headers[0]["x-api-key"] == TOKEN.split("=")[1]
    assert elsewhere.headers == []


def test_a_huge_answer_is_read_only_to_the_cap(run: Path) -> None:
    """A collector that answers 200 with 64 MB: the export reads ANSWER_MAX_BYTES and
    hangs up, so the collector cannot send the rest (the SDK alone reads it whole)."""
    sent: list[int] = []
    block = b"x" * (1 << 20)

    def huge(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("content-length", str(64 * len(block)))
        h.end_headers()
        n = 0
        try:
            for _ in range(64):
                h.wfile.write(block)
                n += len(block)
        except OSError:
            pass
        sent.append(n)

    collector = Collector(huge)
    try:
        target = otlp_target(collector.url, {})
        assert target is not None
        outcome = export_run(run, target)
        collector.server.shutdown()  # waits for the handlers' last writes
    finally:
        collector.close()
    assert outcome.delivered and outcome.spans_sent == outcome.spans
    assert sent and max(sent) < 32 * len(block), sent  # socket buffers, not the body
    assert ANSWER_MAX_BYTES <= 1 << 20


@pytest.mark.parametrize("where", ["flag", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
def test_a_token_in_the_endpoints_query_is_refused(where: str) -> None:
    url = "http://127.0.0.1:9/v1/traces?token=hunter2hunter2"
    with pytest.raises(UsageError, match="OTEL_EXPORTER_OTLP_HEADERS") as caught:
        otlp_target(url, {}) if where == "flag" else otlp_target(None, {where: url})
    assert "hunter2" not in str(caught.value)


def test_a_handed_over_runs_text_reaches_no_span_or_metric_raw(run: Path) -> None:
    """A run directory from elsewhere whose records carry escapes, a bell, a carriage
    return and a bidi override in their phase, id, model, finish reason and error: every
    span name, attribute, status and metric attribute the collector receives is clean."""
    from tests.rundir.test_otlp import Receiver, attrs

    evil = "\x1b[31m\x07\r\u202eEVIL" + "Z" * 150
    lines = (run / "requests.jsonl").read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    for rec in recs[:3]:
        rec.update(phase=evil, id=evil, model=evil, finish_reason=evil, error=evil,
                   outcome="error")
    (run / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    collector = Receiver()
    try:
        target = otlp_target(collector.url, {})
        assert target is not None
        outcome = export_run(run, target)
    finally:
        collector.close()
    assert outcome.delivered
    texts = []
    for _, span in collector.spans():
        texts += [span.name, span.status.message,
                  *(v for v in attrs(span).values() if isinstance(v, str))]
    for metric in collector.metrics().values():
        data = getattr(metric, metric.WhichOneof("data"))
        texts += [v for p in data.data_points for v in attrs(p).values() if isinstance(v, str)]
    assert any("EVIL" in t for t in texts)  # the phase got there, cleaned
    assert not [t for t in texts if any(c in t for c in "\x1b\x07\u202e")], "raw text"


@pytest.mark.parametrize("endpoint", ["collector.example.com:4318/?token=hunter2hunter2",
                                      "user:hunter2hunter2@collector:4318",
                                      "ftp://u:hunter2hunter2@h/#hunter2hunter2"])
def test_a_url_refused_as_no_url_is_shown_without_its_secret(endpoint: str) -> None:
    with pytest.raises(UsageError, match="not an http") as caught:
        otlp_target(endpoint, {})
    assert "hunter2" not in str(caught.value)


def test_a_run_placed_beyond_otlps_clock_is_not_sent_as_the_collectors_fault(
        run: Path) -> None:
    """run.json (a handed-over or imported run) dated in the year 9999: its spans' times
    do not fit OTLP's nanoseconds. The export says so before sending, rather than report
    that the collector refused the spans."""
    from evalkit.errors import EvalkitError

    meta = json.loads((run / "run.json").read_text())
    meta.pop("clock", None)
    meta["started_at"] = "9999-12-31T23:59:59Z"
    (run / "run.json").write_text(json.dumps(meta))
    target = otlp_target("http://127.0.0.1:9", {})
    assert target is not None
    with pytest.raises(EvalkitError, match="places the run at no time"):
        export_run(run, target)
