"""AWS Bedrock (ConverseStream) and Google's Gemini API / Vertex AI, probed over real
loopback sockets against the reference endpoint, whose truth log is the judge.

Bedrock's requests are signed by botocore with credentials from the AWS chain (here the
environment, AWS's documented example keys) and the reference verifies the signature with
its own SigV4, written apart; its answers are AWS event-stream messages the reference
writes by hand and the prober reads with botocore's parser. Gemini's are SSE. Each is
checked as the other APIs are (tests/probe/apis/test_api.py): TTFT and every chunk
against the server's writes, reasoning first, usage read, an error mid-stream, a
throttle as a rejection with its hint; and the credentials: missing or wrong ones say
what to fix, and no secret reaches a message, a record or the run directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit.errors import UsageError
from evalkit.probe.apis.base import get_adapter
from evalkit.probe.client.clients import Target, ready_target
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.run.connect import explain_failure
from evalkit.probe.wire.eventstream import MAX_MESSAGE_BYTES, EventStreamError, EventStreamFramer
from evalkit.records import RequestRecord
from evalkit.reference.clouds import BEDROCK_MODEL, EXAMPLE_ACCESS_KEY, EXAMPLE_SECRET_KEY
from evalkit.reference.eventstream import event, exception
from evalkit.reference.server import ReferenceServer
from tests.probe.helpers import _Scripted

GEMINI_KEY = "gk-fake-gemini-key-5c1e7a"
APIS = ("bedrock-converse", "gemini")


def aws_environment(secret: str = EXAMPLE_SECRET_KEY, key_id: str = EXAMPLE_ACCESS_KEY,
                    region: str | None = "us-east-1") -> dict[str, str]:
    """The AWS chain's variables for a test: these credentials and region, no shared file
    and no instance metadata (nothing may leave the machine)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret,
               AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE="/nonexistent/config",
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent/credentials")
    if region:
        env["AWS_REGION"] = region
    return env


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example credentials in this process's environment."""
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    for k, v in aws_environment().items():
        if k.startswith("AWS_"):
            monkeypatch.setenv(k, v)


def _target(root: str, api: str, **kw: Any) -> Target:
    if api == "bedrock-converse":
        return ready_target(Target(root, BEDROCK_MODEL, api=api, tag_requests=True, **kw))
    return ready_target(Target(root + "/v1beta", "evalkit-reference", api=api,
                               tag_requests=True, secret=kw.pop("secret", GEMINI_KEY), **kw))


def _streams(target: Target, n: int = 1, out: int = 8) -> tuple[int, list[RequestRecord]]:
    async def run() -> tuple[int, list[RequestRecord]]:
        async with Prober(target, time.perf_counter_ns(), "c") as prober:
            return prober.origin_ns, [
                await prober.stream(synthetic(48, out, f"c-{target.api}-{i}"), "baseline", 1)
                for i in range(n)]
    return asyncio.run(run())


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    """A subprocess reference (its clock apart from ours), 3 reasoning tokens first."""
    truth = tmp_path_factory.mktemp("truth") / "truth.jsonl"
    with ReferenceServer("gpu", {"fault_reasoning_tokens": 3, "decode_base_ms": 8,
                                 "request_overhead_ms": 5, "prefill_overhead_ms": 1},
                         truth_log=truth, mode="subprocess") as srv:
        yield srv


@pytest.mark.parametrize("api", APIS)
def test_ttft_chunks_usage_and_reasoning_first_match_the_truth(
        timed: ReferenceServer, aws: None, api: str) -> None:
    """TTFT and every chunk within 2 ms (median) and 10 ms (worst) of the server's write;
    reasoning first (TTFA the fourth chunk); the output and prompt counts the vendor's
    usage says, not estimated; the finish reason its own."""
    origin, recs = _streams(_target(timed.root_url, api), n=4)
    truth = {t["request_id"]: t for t in timed.truth()}
    errors: list[float] = []
    ttft_errors: list[float] = []
    for rec in recs:
        assert rec.outcome == "ok", rec.error
        t = truth[rec.id]
        writes = [w for w in t["writes"] if w[3] in ("content", "reasoning")]
        assert [w[3] for w in writes[:4]] == ["reasoning"] * 3 + ["content"]
        assert len(rec.chunks) == len(writes) == 8
        t0 = origin + rec.t0_s * 1e9
        assert rec.ttft_s is not None and rec.ttfa_s == rec.chunks[3][0]
        ttft_errors.append(abs(t0 + rec.ttft_s * 1e9 - t["first_write_ns"]) / 1e6)
        errors += [abs(t0 + at * 1e9 - w[0]) / 1e6 for (at, _), w in zip(rec.chunks, writes,
                                                                         strict=True)]
        assert rec.output_tokens == rec.usage_completion_tokens == t["completion_tokens"] == 8
        assert not rec.output_tokens_estimated and not rec.prompt_tokens_estimated
        assert rec.prompt_tokens == t["prompt_tokens"]
        assert rec.finish_reason == {"bedrock-converse": "max_tokens", "gemini": "MAX_TOKENS"}[api]
        # signed by botocore and verified by the reference's own SigV4; the Gemini API's key
        assert t["auth_headers"] == {"bedrock-converse": ["authorization"],
                                     "gemini": ["x-goog-api-key"]}[api]
        assert t["api"] == {"bedrock-converse": "converse", "gemini": "gemini"}[api]
    # as tests/probe/client/test_stream.py judges accuracy on a shared machine: the
    # median within 2 ms, none past 10 (a preempted process is late, never wrong)
    for errs in (ttft_errors, errors):
        assert sorted(errs)[len(errs) // 2] <= 2.0 and max(errs) <= 10.0, sorted(errs)


@pytest.mark.parametrize("api", APIS)
def test_an_error_mid_stream_is_an_error(reference: Any, aws: None, api: str) -> None:
    """Bedrock's modelStreamErrorException message, Gemini's error object, after 5 chunks."""
    srv = reference("gpu", mode="thread", fault_error_payload=1.0)
    _, (rec,) = _streams(_target(srv.root_url, api), out=10)
    assert rec.outcome == "error" and "injected fault" in (rec.error or ""), rec.error
    assert len(rec.chunks) == 5
    assert {t["request_id"]: t for t in srv.truth()}[rec.id]["outcome"] == "fault:error_payload"


@pytest.mark.parametrize("api,named", [("bedrock-converse", "ThrottlingException"),
                                       ("gemini", "RESOURCE_EXHAUSTED")])
def test_a_throttle_is_a_rejection_with_the_clouds_own_retry_hint(
        reference: Any, aws: None, api: str, named: str) -> None:
    """The second request in a window that admits one is answered 429 in the cloud's own
    shape, its hint only there (Bedrock's x-amz-retry-after in ms, Google's RetryInfo
    retryDelay): read, it is a rejection (never an error of the vendor's) with that hint."""
    srv = reference("gpu", mode="thread", rate_limit_rpm=6, rate_limit_window_s=10)
    _, (first, second) = _streams(_target(srv.root_url, api), n=2)
    assert first.outcome == "ok", first.error
    assert second.outcome == "rejected" and named in (second.error or ""), second.error
    assert second.retry_after_s == 10.0  # ceil of the ~10 s until the window frees
    assert {t["request_id"]: t for t in srv.truth()}[second.id]["status"] == 429


def _scripted(api: str, parts: list[bytes]) -> RequestRecord:
    kind = b"application/vnd.amazon.eventstream" if api == "bedrock-converse" else \
        b"text/event-stream"
    with _Scripted(200, parts, kind) as srv:
        model = BEDROCK_MODEL if api == "bedrock-converse" else "evalkit-reference"
        target = ready_target(Target(srv.base_url, model, api=api, secret=GEMINI_KEY))
        _, (rec,) = _streams(target)
    return rec


def _delta(text: str) -> bytes:
    return event("contentBlockDelta", json.dumps({"contentBlockIndex": 0,
                                                  "delta": {"text": text}}).encode())


def _gemini(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _part(text: str, **candidate: Any) -> bytes:
    return _gemini({"candidates": [{"content": {"parts": [{"text": text}]}, **candidate}]})


def test_a_throttle_inside_a_begun_stream_is_a_rejection(aws: None) -> None:
    """Bedrock's throttlingException message, Google's RESOURCE_EXHAUSTED error object with
    a RetryInfo (bounded as a Retry-After is), after content: "not now", not a failure."""
    rec = _scripted("bedrock-converse", [
        event("messageStart", b'{"role":"assistant"}'), _delta(" a"), _delta(" b"),
        exception("throttlingException", b'{"message":"Too many tokens, please wait."}')])
    assert rec.outcome == "rejected" and "throttlingException" in (rec.error or "")
    assert len(rec.chunks) == 2
    rec = _scripted("gemini", [_part(" a"), _gemini({"error": {
        "code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                     "retryDelay": "7s"}]}})])
    assert rec.outcome == "rejected" and "RESOURCE_EXHAUSTED" in (rec.error or "")
    assert rec.retry_after_s == 7.0


def test_a_safety_block_is_an_outcome_naming_it(aws: None) -> None:
    """Gemini's SAFETY finish and Bedrock's guardrail_intervened stop end a stream the
    vendor cut: incomplete, naming the reason; a blocked prompt is an error saying so."""
    rec = _scripted("gemini", [_part(" a"), _part("", finishReason="SAFETY")])
    assert rec.outcome == "incomplete" and "SAFETY" in (rec.error or ""), rec.error
    rec = _scripted("bedrock-converse", [
        _delta(" a"), event("messageStop", b'{"stopReason":"guardrail_intervened"}'),
        event("metadata", b'{"usage":{"inputTokens":3,"outputTokens":1}}')])
    assert rec.outcome == "incomplete" and "guardrail_intervened" in (rec.error or "")
    rec = _scripted("gemini", [_gemini({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})])
    assert rec.outcome == "error" and "PROHIBITED_CONTENT" in (rec.error or ""), rec.error


def test_geminis_usage_counts_thoughts_as_output_and_cached_tokens() -> None:
    adapter = get_adapter("gemini")
    delta = adapter.parse(json.dumps({"usageMetadata": {
        "promptTokenCount": 100, "candidatesTokenCount": 7, "thoughtsTokenCount": 5,
        "cachedContentTokenCount": 64}, "modelVersion": "gemini-2.5-flash-001"}))
    assert (delta.usage_completion_tokens, delta.usage_prompt_tokens,
            delta.usage_cached_tokens, delta.model) == (12, 100, 64, "gemini-2.5-flash-001")
    assert adapter.parse(json.dumps({"usageMetadata": {
        "promptTokenCount": 10, "candidatesTokenCount": 1,
        "cachedContentTokenCount": 64}})).usage_cached_tokens is None  # not a count of them
    thought = adapter.parse(json.dumps({"candidates": [{"content": {"parts": [
        {"text": "hmm", "thought": True}, {"text": "Yes"}]}}]}))
    assert (thought.reasoning, thought.text) == ("hmm", "Yes")


def test_the_event_stream_framing_reads_any_split_and_refuses_a_bad_message() -> None:
    """botocore reads each whole message, whatever reads it came in (one byte each too);
    a checksum that disagrees, or a length past the bound, is an error before buffering."""
    stream = _delta(" one") + event("messageStop", b'{"stopReason":"end_turn"}')
    whole = [(e.event, e.data) for e in EventStreamFramer().feed(stream)]
    assert whole == [("contentBlockDelta", '{"contentBlockIndex": 0, "delta": {"text": " one"}}'),
                     ("messageStop", '{"stopReason":"end_turn"}')]
    framer = EventStreamFramer()
    assert [(e.event, e.data) for b in range(len(stream))
            for e in framer.feed(stream[b:b + 1])] == whole and not framer.pending
    bad = bytearray(_delta(" x"))
    bad[-6] ^= 0xFF  # a payload byte: the message's CRC no longer holds
    with pytest.raises(EventStreamError, match="unreadable"):
        EventStreamFramer().feed(bytes(bad))
    with pytest.raises(EventStreamError, match="bytes"):
        EventStreamFramer().feed((MAX_MESSAGE_BYTES + 1).to_bytes(4, "big") + b"\0" * 8)


def test_the_connect_gate_checks_the_model_id_region_and_credentials(
        monkeypatch: pytest.MonkeyPatch, aws: None) -> None:
    with pytest.raises(UsageError, match="no Bedrock model id"):
        Target("https://bedrock-runtime.us-east-1.amazonaws.com", "anthropic claude",
               api="bedrock-converse")
    arn = "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-x"
    with pytest.raises(UsageError, match="region eu-west-1 but requests are signed for "
                                         "us-east-1"):
        ready_target(Target("https://bedrock-runtime.us-east-1.amazonaws.com", arn,
                            api="bedrock-converse"))
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(UsageError, match="no AWS region"):
        ready_target(Target("http://127.0.0.1:9", BEDROCK_MODEL, api="bedrock-converse"))
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(UsageError, match="no AWS credentials") as caught:
        ready_target(Target("http://127.0.0.1:9", BEDROCK_MODEL, api="bedrock-converse"))
    assert "never from a flag" in str(caught.value)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(UsageError, match="credential chain failed: ProfileNotFound"):
        ready_target(Target("http://127.0.0.1:9", BEDROCK_MODEL, api="bedrock-converse"))


@pytest.mark.parametrize("key_id,secret,advice", [
    (EXAMPLE_ACCESS_KEY, "wrong-secret-0f3a9c77d2", "signature was refused"),
    ("AKIDUNKNOWNEXAMPLE", EXAMPLE_SECRET_KEY, "AWS does not know these credentials")])
def test_refused_aws_credentials_say_what_to_fix_and_never_the_secret(
        reference: Any, monkeypatch: pytest.MonkeyPatch, key_id: str, secret: str,
        advice: str) -> None:
    for k, v in aws_environment(secret, key_id).items():
        if k.startswith("AWS_"):
            monkeypatch.setenv(k, v)
    srv = reference("gpu", mode="thread")
    target = _target(srv.root_url, "bedrock-converse")
    _, (rec,) = _streams(target)
    assert rec.outcome == "error" and rec.http_status == 403
    said = explain_failure(rec, target, target.adapter.path, "OPENAI_API_KEY")
    assert advice in said, said
    assert secret not in said + (rec.error_body or "") + json.dumps(target.describe())


def test_a_missing_gemini_key_says_where_to_put_it(reference: Any) -> None:
    srv = reference("gpu", mode="thread")
    target = Target(srv.root_url + "/v1beta", "evalkit-reference", api="gemini")
    _, (rec,) = _streams(target)
    assert rec.outcome == "error" and rec.http_status == 403
    assert "GEMINI_API_KEY" in explain_failure(rec, target, target.adapter.path, "GEMINI_KEY")


def test_geminis_key_is_its_own_variable_never_openais(reference: Any, tmp_path: Path) -> None:
    """Without --api-key-env, `--api gemini` reads GEMINI_API_KEY: an OPENAI_API_KEY in the
    environment is not sent to Google (the reference takes any key, so a request that
    carried it would have streamed); the gate stops, naming the variable."""
    srv = reference("gpu", mode="thread")
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    proc = subprocess.run(
        [sys.executable, "-m", "evalkit.cli", "probe", "--api", "gemini",
         "--base-url", srv.root_url + "/v1beta", "--model", "evalkit-reference",
         "--out", str(tmp_path / "run"), "--phases", "connect,baseline"],
        env={**env, "OPENAI_API_KEY": "sk-openai-not-for-google"},
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "HTTP 403" in proc.stderr, proc.stderr
    assert "GEMINI_API_KEY" in proc.stderr
    assert [t["auth_headers"] for t in srv.truth()] == [[]]


def test_a_signed_cloud_reads_no_key_variable(reference: Any, tmp_path: Path) -> None:
    """Bedrock signs with the AWS chain: an OPENAI_API_KEY left in the shell (here with a
    smart quote pasted into it) is neither read, checked nor named in run.json, so it can
    neither ride along nor stop a run that never needed it."""
    srv = reference("gpu", mode="thread")
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "evalkit.cli", "probe", "--api", "bedrock-converse",
         "--base-url", srv.root_url, "--model", BEDROCK_MODEL, "--out", str(out),
         "--phases", "connect"],
        env={**aws_environment(), "OPENAI_API_KEY": "sk-\u201cpasted\u201d"},
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "run.json").read_text())["api_key_env"] is None


@pytest.mark.parametrize("api", APIS)
def test_a_whole_run_keeps_no_secret(reference: Any, tmp_path: Path, api: str) -> None:
    """`evalkit probe --api …` end to end: every request ok, and neither the AWS secret
    (the chain's) nor the Gemini key (--api-key-env's) is in the run directory or the
    command's output; run.json names where the credentials came from, never a value."""
    srv = reference("gpu", decode_base_ms=2, request_overhead_ms=5)
    out = tmp_path / "run"
    env = {**aws_environment(), "GEMINI_KEY": GEMINI_KEY}
    base, model = ((srv.root_url, BEDROCK_MODEL) if api == "bedrock-converse"
                   else (srv.root_url + "/v1beta", "evalkit-reference"))
    proc = subprocess.run(
        [sys.executable, "-m", "evalkit.cli", "probe", "--api", api, "--base-url", base,
         "--model", model, "--api-key-env", "GEMINI_KEY", "--out", str(out),
         "--phases", "connect,baseline", "--output-tokens", "8"],
        env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert records and all(r["outcome"] == "ok" for r in records)
    meta = json.loads((out / "run.json").read_text())
    assert meta["target"]["credential"] == {"bedrock-converse": "AWS credential chain",
                                            "gemini": "environment"}[api]
    if api == "bedrock-converse":
        assert meta["target"]["signing"] == {"kind": "aws-sigv4", "region": "us-east-1",
                                             "service": "bedrock", "source": "env"}
    written = proc.stdout + proc.stderr + "".join(
        p.read_bytes().decode("latin-1") for p in out.iterdir())
    for secret in (EXAMPLE_SECRET_KEY, GEMINI_KEY):
        assert secret not in written


def test_a_vendor_echoing_the_aws_secrets_shows_none_of_them(
        aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 403 whose body repeats the session token and the secret key (a hostile or careless
    vendor): the record's error body and the connect advice blank both, as they blank an
    API key (the signer's values join `Target.redact`'s)."""
    token = "FwoGZXIvYXdzEfakesessiontoken0123456789"
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    echo = json.dumps({"message": f"bad token {token} for secret {EXAMPLE_SECRET_KEY}"})
    with _Scripted(403, [echo.encode()], b"application/json") as srv:
        target = ready_target(Target(srv.base_url, BEDROCK_MODEL, api="bedrock-converse"))
        _, (rec,) = _streams(target)
    said = explain_failure(rec, target, target.adapter.path, "OPENAI_API_KEY")
    shown = said + (rec.error_body or "") + (rec.error or "")
    assert rec.outcome == "error" and "***" in (rec.error_body or ""), rec.error_body
    assert token not in shown and EXAMPLE_SECRET_KEY not in shown


def _token_server(token: str) -> tuple[str, list[bytes], Any]:
    """A loopback OAuth token endpoint: every POST gets `token` for an hour."""
    import http.server
    import threading

    asked: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked.append(self.rfile.read(int(self.headers["content-length"])))
            body = json.dumps({"access_token": token, "expires_in": 3600,
                               "token_type": "Bearer"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/token", asked, server


def test_vertex_takes_an_oauth_token_from_application_default_credentials(
        reference: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Vertex AI base URL signs with google-auth's ADC (here a service account's key
    file whose token endpoint is a loopback server): one token for every stream, sent as
    a bearer, and neither it nor the key in run.json's description; without ADC, a usage
    error that says how to get them."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    token = "ya29.fake-vertex-access-token-81c2"
    uri, asked, server = _token_server(token)
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    key_file = tmp_path / "sa.json"
    key_file.write_text(json.dumps({
        "type": "service_account", "project_id": "p", "private_key_id": "k1",
        "private_key": pem, "client_email": "probe@p.iam.gserviceaccount.com",
        "client_id": "1", "token_uri": uri}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    srv = reference("gpu", mode="thread")
    base = srv.root_url + "/v1/projects/p/locations/us-central1/publishers/google"
    try:
        target = ready_target(Target(base, "evalkit-reference", api="gemini",
                                     tag_requests=True, secret="sk-not-sent-to-vertex"))
        _, recs = _streams(target, n=2)
    finally:
        server.shutdown()
        server.server_close()
    assert [r.outcome for r in recs] == ["ok", "ok"], recs[0].error
    truth = {t["request_id"]: t for t in srv.truth()}
    assert {truth[r.id]["api"] for r in recs} == {"vertex"}
    assert truth[recs[0].id]["auth_headers"] == ["authorization"]
    assert len(asked) == 1 and b"assertion" in asked[0]  # one refresh, a signed JWT
    described = json.dumps(target.describe())
    assert target.credential == "Google application default credentials"
    assert token not in described and "PRIVATE KEY" not in described
    assert target.redact(f"echo {token}") == "echo ***"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "none.json"))
    with pytest.raises(UsageError, match="gcloud auth application-default login"):
        ready_target(Target(base, "evalkit-reference", api="gemini"))


def test_a_run_refused_for_its_aws_secret_stops_saying_why_and_keeps_it_unsaid(
        reference: Any, tmp_path: Path) -> None:
    """The connect gate stops the run (exit 2) with AWS's reason and what to fix; neither
    the wrong secret nor the session token is in its output or the run directory."""
    srv = reference("gpu", mode="thread")
    wrong, token = "wrong-secret-key-73be0f1d", "IQoJb3JpZ2luX2VjEfakesessiontoken9"
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "evalkit.cli", "probe", "--api", "bedrock-converse",
         "--base-url", srv.root_url, "--model", BEDROCK_MODEL, "--out", str(out),
         "--phases", "connect,baseline", "--output-tokens", "8"],
        env={**aws_environment(wrong), "AWS_SESSION_TOKEN": token},
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "InvalidSignatureException" in proc.stderr
    assert "signature was refused" in proc.stderr, proc.stderr
    written = proc.stdout + proc.stderr + "".join(
        p.read_bytes().decode("latin-1") for p in out.iterdir() if p.is_file())
    assert wrong not in written and token not in written


def test_a_pickled_bedrock_target_carries_no_credential_and_signs_again(
        reference: Any, aws: None) -> None:
    """Ray sends each shard's target to its worker pickled: the bytes hold no AWS secret
    (the signer drops its credentials), and the copy resolves the chain where it runs and
    signs requests the reference accepts."""
    import pickle

    srv = reference("gpu", mode="thread")
    target = _target(srv.root_url, "bedrock-converse")
    assert target.request_auth is not None and target.request_auth.credentials()
    raw = pickle.dumps(target)
    assert EXAMPLE_SECRET_KEY.encode() not in raw and EXAMPLE_ACCESS_KEY.encode() not in raw
    _, (rec,) = _streams(pickle.loads(raw))
    assert rec.outcome == "ok", rec.error


def test_a_conversation_goes_to_each_cloud_in_its_own_shape() -> None:
    """System messages (which neither cloud has as a role) go to the body's own field, the
    turns keep their order, an assistant's turn is Gemini's `model`, content parts are
    joined as text."""
    from evalkit.probe.apis.bedrock import BedrockConverse
    from evalkit.probe.apis.gemini import Gemini

    convo = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
             {"role": "user", "content": "and?"}]
    bedrock = BedrockConverse().build_body("m", convo, 8, False)
    assert bedrock["system"] == [{"text": "be brief"}]
    assert bedrock["messages"] == [{"role": "user", "content": [{"text": "hi"}]},
                                   {"role": "assistant", "content": [{"text": "hello"}]},
                                   {"role": "user", "content": [{"text": "and?"}]}]
    gemini = Gemini().build_body("m", convo, 8, False)
    assert gemini["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert [(c["role"], c["parts"][0]["text"]) for c in gemini["contents"]] == [
        ("user", "hi"), ("model", "hello"), ("user", "and?")]
    assert "system" not in BedrockConverse().build_body("m", "hi", 8, False)
