"""Fail closed, end to end: an endpoint that measured nothing never earns a green mark.

Small misbehaving servers on loopback (real sockets, no mocks), the real probe, and the
real report read back from its PDF and scorecard.json.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pypdf
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EndpointError
from evalkit.probe.client.clients import Target
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.run.connect import explain_failure
from evalkit.probe.suite import run_probe
from evalkit.records import RequestRecord
from evalkit.rundir.digest import RecordDigest
from evalkit.rundir.store import read_records

ROOT = Path(__file__).resolve().parents[2]
FORTHRIGHT = ROOT / "questionnaires" / "forthright.yaml"


class _Hostile(http.server.BaseHTTPRequestHandler):
    """Lists no models; answers every POST with a status and a body full of escapes."""

    status: ClassVar[int] = 400
    body: ClassVar[bytes] = b""

    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hostile() -> Iterator[Any]:
    """Factory: hostile(status, body) -> base URL of a server answering every POST so."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(status: int, body: bytes = b"") -> str:
        handler = type("H", (_Hostile,), {"status": status, "body": body})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _text(pdf: Path) -> str:
    return re.sub(r"\s+", " ", "\n".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages))


class TestConnectGate:
    def test_a_failing_endpoint_stops_at_once_with_status_body_and_advice(
            self, hostile: Any, tmp_path: Path) -> None:
        """One request, not thousands; exit 2; the body is shown without its escapes."""
        url = hostile(400, b'{"error": {"message": "\\u001b]0;owned\\u0007unknown field '
                           b'\\"stream_options\\" \\u001b[2J"}}')
        res = CliRunner().invoke(cli, ["probe", "--base-url", url, "--model", "m", "--quiet",
                                       "--out", str(tmp_path / "run")])
        assert res.exit_code == 2, res.output
        assert "answered HTTP 400: ]0;owned unknown field \"stream_options\"" in res.stderr
        assert "\x1b" not in res.stderr and "\x07" not in res.stderr
        assert "what to try: the server rejects the request field 'stream_options'" in res.stderr
        assert f"the failed request is recorded in {tmp_path / 'run'}" in res.stderr
        [rec] = read_records(tmp_path / "run" / "requests.jsonl")
        assert (rec.phase, rec.outcome, rec.http_status) == ("connect", "error", 400)
        assert rec.error_body is not None and "stream_options" in rec.error_body
        assert "\x1b" not in rec.error_body
        run = json.loads((tmp_path / "run" / "run.json").read_text())
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())
        assert run["status"] == "failed"
        assert summary["validity"]["status"] == "invalid"
        assert summary["validity"]["reasons"][0].startswith("the connect gate failed")

    def test_an_invalid_run_scores_nothing_green(self, hostile: Any, tmp_path: Path) -> None:
        """The scorecard of a dead endpoint leads with RUN INVALID; no ok, no fit, no
        streaming-ready; and a --fail-on gate refuses to pass on it (exit 2)."""
        url = hostile(501, b"<html><body><h1>Unsupported method ('POST')</h1></body></html>")
        with pytest.raises(EndpointError, match="HTTP 501"):
            run_probe(ProbeConfig(base_url=url, model="m"), tmp_path / "run")
        out = tmp_path / "card.pdf"
        res = CliRunner().invoke(cli, ["report", "--run", str(tmp_path / "run"),
                                       "--questionnaire", str(FORTHRIGHT), "--out", str(out),
                                       "--fail-on", "unreconciled"])
        assert res.exit_code == 2, res.output
        assert "--fail-on has nothing to judge: the run is invalid" in res.stderr
        card = json.loads(out.with_suffix(".json").read_text())
        assert card["verdict"]["streaming_ready"] is False
        assert card["run"]["validity"] == "invalid"
        measured = ("Q1", "Q2", "Q3", "Q4", "Q6")
        assert all(card["questions"][q]["status"] != "ok" for q in measured)
        assert {uc["fit"] for uc in card["use_cases"].values()} == {None}
        text = _text(out)
        assert "RUN INVALID" in text
        assert "✓ STREAMING-READY" not in text and "✓ fits" not in text
        assert "Unsupported method" in text  # the error, as the endpoint gave it

    @pytest.mark.parametrize(("status", "body", "advice"), [
        (404, "", "nothing is served at http://h/v1/chat/completions: check --base-url"),
        (404, '{"error": {"message": "model x not found"}}', "does not serve model 'x'"),
        (401, "", "$KEY is not set"),
        (403, "forbidden", "$KEY is not set"),
        (400, "", "without saying which part"),
        (400, "bad x-request-id header", "rejects the 'x-request-id' header"),
        (400, "top_k must be an int", "rejects 'top_k' from --extra-body"),
        (501, "", "does not take POST"),
        (429, "", "not admitting requests now"),
        (500, "", "the server failed on our request"),
    ])
    def test_advice_follows_the_status_and_body(self, status: int, body: str,
                                                advice: str) -> None:
        """Each failure points at the one thing most likely wrong."""
        rec = RequestRecord(id="i", phase="connect", level=1, outcome="error", t0_s=0.0,
                            http_status=status, error=f"HTTP {status}: x",
                            error_body=body or None)
        target = Target("http://h/v1", "x", extra_body={"top_k": "1"})
        message = explain_failure(rec, target, "/chat/completions", "KEY")
        first, second = message.splitlines()
        assert first.startswith(f"the connect stream failed: POST http://h/v1/chat/completions "
                                f"answered HTTP {status}")
        assert advice in second


class TestRequestIds:
    def test_request_ids_are_uuids_and_the_record_keeps_our_label(
            self, reference: Any, tmp_path: Path) -> None:
        """The vendor sees a UUID (llama.cpp rejects anything else); the record keeps both."""
        srv = reference("gpu", mode="thread")
        result = run_probe(ProbeConfig(base_url=srv.base_url, model=srv.model, tag_requests=True,
                                       phases=("connect", "baseline"),
                                       # each kind of request: an ordinary one, 4 canaries
                                       overrides={"baseline": {"requests": 1},
                                                  "canaries": {"alone_repeats": 1}}),
                           tmp_path / "r")
        assert result.validity == "valid"
        records = read_records(tmp_path / "r" / "requests.jsonl")
        seen = {t["request_id"] for t in srv.truth()}
        assert {r.id for r in records} <= seen
        for r in records:
            assert str(uuid.UUID(r.id)) == r.id
            assert r.label is not None and r.label.endswith(f"-{r.label[-6:]}")
        assert len({r.label for r in records}) == len(records) == 1 + 1 + 4


class TestInvalidRun:
    def test_a_baseline_that_never_succeeds_is_run_invalid_exit_2(
            self, reference: Any, tmp_path: Path) -> None:
        """Without the connect gate (not asked for), the baseline's failures make the run
        invalid: the last lines say RUN INVALID and the exit code is 2."""
        srv = reference("gpu", mode="thread", fault_http_500=1.0)
        # a baseline of 6 failing requests, not the quick profile's 14 (its 6 with 8 canary
        # sends): each failure backs off up to 2 s, and any failed baseline is invalid
        short = tmp_path / "short.json"
        short.write_text(json.dumps({"extends": "quick", "baseline": {"requests": 2},
                                     "canaries": {"alone_repeats": 1}}))
        res = CliRunner().invoke(cli, ["probe", "--tag-requests", "--profile", str(short),
                                       "--base-url", srv.base_url, "--model",
                                       srv.model, "--phases", "baseline,ramp", "--levels", "1,2",
                                       "--quiet", "--out", str(tmp_path / "r")])
        assert res.exit_code == 2, res.output
        assert any(line.startswith("RUN INVALID: ") for line in res.stdout.splitlines())
        assert "no level breached" not in res.stdout
        assert "Error: the run is invalid" in res.stderr
        assert "complete, invalid: " in res.stdout  # finished is not the same as measured
        summary = json.loads((tmp_path / "r" / "summary.json").read_text())
        assert summary["validity"]["status"] == "invalid"
        assert summary["baseline"]["validity"]["status"] == "invalid"
        assert summary["baseline"]["requests"] == 6
        assert {lv["status"] for lv in summary["ramp"]["levels"]} == {"failed"}
        # a level whose failures already confirm the breach does not wait for the profile's
        # 36-request floor (each one would cost a failing vendor more backoff for nothing)
        assert all(lv["requests"] < 36 for lv in summary["ramp"]["levels"])
        assert summary["client"]["client_bound"] is False  # failures are not the client's


class TestPromptHonesty:
    @pytest.mark.slow
    def test_a_vendor_reporting_3x_its_prompts_gets_its_true_prefill_rate(
            self, reference: Any, tmp_path: Path) -> None:
        """Issue 24: prefill runs at 20,000 tokens/s but usage reports 3x every prompt (the
        truth log keeps both). On the vendor's counts the fit read ~60,000 tokens/s on a run
        called valid; now every record keeps our count beside the vendor's, the run is
        degraded with the ratio, and the prefill rate is fitted on our count."""
        srv = reference("gpu", prefill_tokens_per_s=20_000, prompt_usage_factor=3.0)
        out = tmp_path / "run"
        res = run_probe(ProbeConfig(srv.base_url, srv.model,
                                    phases=("connect", "baseline", "prefill"),
                                    overrides={"output_tokens": 16, "baseline": {"requests": 4},
                                               "prefill": {"repeats": 2},
                                               "connect": {"rtt_samples": 5}}), out)
        assert res.status == "complete" and res.summary is not None
        truth = [t for t in srv.truth() if t.get("outcome") == "ok"]
        assert truth and all(t["billed_prompt_tokens"] == 3 * t["prompt_tokens"] for t in truth)
        records = [r for r in read_records(out / "requests.jsonl") if r.outcome == "ok"]
        # our count is what the server counted (both o200k), the vendor's is 3x it
        assert sorted(r.counted_prompt_tokens or 0 for r in records) == sorted(
            t["prompt_tokens"] for t in truth)
        assert all(r.prompt_tokens == 3 * (r.counted_prompt_tokens or 0)
                   and not r.prompt_tokens_estimated for r in records)
        s = res.summary
        check = s["checks"]["prompt_honesty"]
        # every request but the 64-token prompts: 192 billed for 64 sent is within the
        # allowance for a chat template (64 x 1.25 + 128 tokens)
        assert check["checked"] == len(records) and check["flagged"] is True
        assert check["disagreeing"] == sum((r.counted_prompt_tokens or 0) > 64 for r in records)
        assert check["usage_over_counted"]["p50"] == pytest.approx(3.0, rel=0.01)
        assert s["validity"]["status"] == "degraded"
        assert any(r.startswith("the vendor's usage (prompt_tokens, what it bills) is 3.00× "
                                "our count of the prompt we sent")
                   for r in s["validity"]["reasons"]), s["validity"]
        # the configured rate, as tests/probe/test_suite.py checks it for an honest vendor
        assert s["prefill"]["lengths_from"] == "counted_prompt_tokens"
        assert s["prefill"]["tokens_per_s"] == pytest.approx(20_000, rel=0.25)
        assert s["checks"]["usage_honesty"]["flagged"] is False  # the output side is honest
        # the report's prefill scatter is drawn on the fit's lengths: ours
        digest = RecordDigest()
        for r in read_records(out / "requests.jsonl"):
            digest.add(r)
        assert [c for c, _ in digest.prefill_points] != digest.prefill_counted
        assert sorted(digest.prefill_counted) == sorted(
            float(p["prompt_tokens"]) for p in s["prefill"]["points"] for _ in range(p["n"]))

class TestUsageHonesty:
    def test_a_vendor_billing_twice_what_it_streams_earns_no_verdict(
            self, reference: Any, tmp_path: Path) -> None:
        """The reference bills 2× the tokens it streams (its truth log keeps both). Every
        rate counts usage, so the stream rate reads 2× the truth: the run is degraded with
        the ratio and the question to ask, and the scorecard draws no readiness from it."""
        srv = reference("gpu", mode="thread", usage_factor=2.0)
        run = tmp_path / "run"
        res = CliRunner().invoke(cli, ["probe", "--tag-requests",
                                       "--base-url", srv.base_url, "--model",
                                       srv.model, "--phases", "connect,baseline", "--quiet",
                                       "--output-tokens", "32", "--out", str(run)])
        assert res.exit_code == 0, res.output
        truth = [json.loads(x) for x in srv.truth_log.read_text().splitlines()]
        streamed = [t for t in truth if t.get("outcome") == "ok"]
        assert streamed and all(t["billed_tokens"] == 2 * t["completion_tokens"] == 64
                                for t in streamed)
        summary = json.loads((run / "summary.json").read_text())
        usage = summary["checks"]["usage_honesty"]
        assert usage["flagged"] is True
        assert usage["usage_over_counted"]["p50"] == pytest.approx(2.0, rel=0.1)
        # what the inflated counts do to the figures: 64 "tokens" in the time of 32
        ends = [(t["end_ns"] - t["first_write_ns"]) / 1e9 for t in streamed]
        true_rate = 31 / (sorted(ends)[len(ends) // 2])
        assert summary["baseline"]["stream_tokens_per_s"]["p50"] > 1.6 * true_rate
        assert summary["validity"]["status"] == "degraded"
        assert any(re.search(r"usage \(completion_tokens, what it bills\) is [12]\.\d\d× our "
                             r"count of the text it streamed", r)
                   for r in summary["validity"]["reasons"]), summary["validity"]
        out = tmp_path / "card.pdf"
        res = CliRunner().invoke(cli, ["report", "--run", str(run), "--questionnaire",
                                       str(FORTHRIGHT), "--out", str(out)])
        assert res.exit_code == 0, res.output
        card = json.loads(out.with_suffix(".json").read_text())
        assert card["run"]["validity"] == "degraded"
        assert card["verdict"]["streaming_ready"] is False
        # the reason stands whole on page one, not cut at the page's 200 characters
        assert "counts we could not check; ask which tokenizer it uses" in " ".join(
            _text(out).split())
