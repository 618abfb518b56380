"""No byte of the buyer's corpus reaches anything a run or a report writes (issue 40).

The corpus is the buyer's secret; a run directory, a scorecard and its attachments, the
catalog and the commands' output are not: they are filed, shared and disputed. These
tests probe with a hand-written corpus and grep everything that was written and printed
for its text; and a vendor that echoes the request in its errors has the echo cut out.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.corpus.store import load_text
from evalkit.probe.plan.prompts import synthetic
from evalkit.rundir.store import read_run_files
from tests.conftest import CORPUS_FILES, SECRET_SENTENCE
from tests.probe.helpers import http_servers
from tests.probe.test_fail_closed_servers import MODEL, _Bare400


def _secrets() -> list[bytes]:
    """The unique sentence, and a run of six words from each paragraph of the corpus: any
    one found anywhere is corpus text written down."""
    from evalkit.corpus.readers import read_document

    out = [SECRET_SENTENCE]
    for f in sorted(CORPUS_FILES.iterdir()):
        for par in read_document(f)[1].split("\n\n"):
            ws = par.split()
            if len(ws) >= 12:
                out.append(" ".join(ws[3:9]))
    return [s.encode() for s in out]


def _everything(root: Path, pdf: Path, catalog: Path) -> dict[str, bytes]:
    """Every byte written: the run directory's files, the PDF, its attachments (the
    records decompressed), its pages' text, the scorecard JSON, the catalog."""
    import pypdf

    out = {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    out[str(catalog)] = catalog.read_bytes()
    reader = pypdf.PdfReader(pdf)
    for name, blobs in reader.attachments.items():
        for blob in blobs:
            out[f"attachment {name}"] = gzip.decompress(blob) if name.endswith(".gz") else blob
    out["page text"] = "\n".join(p.extract_text() or "" for p in reader.pages).encode()
    assert {"attachment run.json", "attachment requests.jsonl.gz",
            "attachment scorecard.json"} <= set(out)
    return out


@pytest.mark.slow
def test_no_byte_of_the_corpus_is_written_or_printed(reference: Any, private_corpus: Path,
                                                    tmp_path: Path) -> None:
    """A probe (with the vendor's metrics scraped) and its report, through the CLI: the
    corpus's sentences were sent, and are nowhere in the run directory, the PDF, its
    decompressed attachments, its page text, scorecard.json, the catalog, or stdout and
    stderr."""
    srv = reference("gpu", mode="thread", decode_base_ms=2, request_overhead_ms=2)
    catalog = tmp_path / "catalog.sqlite"
    run_dir, pdf = tmp_path / "out" / "run", tmp_path / "out" / "card.pdf"
    runner = CliRunner()
    probe = runner.invoke(cli, [
        "probe", "--base-url", srv.base_url, "--model", srv.model, "--out", str(run_dir),
        "--corpus", str(private_corpus), "--levels", "1,2", "--quiet", "--catalog",
        str(catalog), "--metrics-url", srv.base_url.removesuffix("/v1") + "/metrics",
        "--profile", str(_short_profile(tmp_path))])
    assert probe.exit_code == 0, probe.output
    assert "prompt text: your corpus" in probe.stdout
    report = runner.invoke(cli, ["report", "--run", str(run_dir), "--out", str(pdf),
                                 "--catalog", str(catalog), "--html"])
    assert report.exit_code == 0, report.output
    # the corpus was sent: a 2,048-token prefill prompt runs round the whole of it
    meta, records = read_run_files(run_dir)
    longest = max((r for r in records if r.phase == "prefill"), key=lambda r: r.prompt_tokens or 0)
    text = load_text(private_corpus)
    sent = synthetic(longest.counted_prompt_tokens or 0, longest.requested_output_tokens or 0,
                     longest.prompt_id or "", 0, text).content
    assert SECRET_SENTENCE in str(sent)
    assert meta["prompt_text"]["corpus"]["sha256"] == text.facts["sha256"]  # type: ignore[index]
    written = _everything(tmp_path / "out", pdf, catalog)
    written["stdout and stderr"] = (probe.stdout + probe.stderr + report.stdout
                                    + report.stderr).encode()
    assert str(run_dir / "vendor_scrapes.jsonl") in written  # the scrape log, too
    leaks = [(where, s.decode()) for where, data in written.items() for s in _secrets()
             if s in data]
    assert not leaks


def _short_profile(tmp_path: Path) -> Path:
    f = tmp_path / "short.json"
    f.write_text(json.dumps({
        "extends": "quick", "name": "short", "baseline": {"requests": 3},
        "prefill": {"prompt_tokens": [64, 2048], "repeats": 1, "output_tokens": 2},
        "cache": {"pairs": 1, "prompt_tokens": 512, "output_tokens": 2},
        "canaries": {"count": 2, "alone_repeats": 1, "every": 3},
        "ramp": {"levels": [1, 2], "level_duration_s": 0.5, "level_min_requests": 6}}))
    return f


class _Echo(_Bare400):
    """Lists a model; answers every POST 400 with the request's last message quoted, as
    validation errors often do."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        said = body["messages"][-1]["content"]
        self._send(400, json.dumps({"error": {"message": f"Invalid prompt: {said[:2000]}",
                                              "type": "invalid_request_error"}}).encode(),
                   "application/json")


@pytest.fixture
def echo_server() -> Iterator[str]:
    with http_servers() as serve:
        yield serve(_Echo)


def test_a_vendor_echoing_the_request_has_the_echo_cut(echo_server: str,
                                                       private_corpus: Path,
                                                       tmp_path: Path) -> None:
    """The connect gate fails on the echo's 400 and prints the body, as it should: with
    the corpus's words cut out of it, there and in the record."""
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["probe", "--base-url", echo_server, "--model", MODEL,
                                      "--out", str(out), "--corpus", str(private_corpus),
                                      "--quiet"])
    assert result.exit_code == 2
    # (punctuation before the first word cut, a ticket's '#', stays)
    assert re.search(r"HTTP 400: Invalid prompt: \W*\[request text\]", result.stderr)
    _, records = read_run_files(out)
    (rec,) = records
    assert rec.error_body is not None and "[request text]" in rec.error_body
    sent = str(synthetic(rec.counted_prompt_tokens or 0, rec.requested_output_tokens or 0,
                         rec.prompt_id or "", 0, load_text(private_corpus)).content)
    ws = re.findall(r"\w+", sent)
    runs = {" ".join(ws[i:i + 4]) for i in range(len(ws) - 3)}
    printed = " ".join(re.findall(r"\w+", result.output + (rec.error or "") + rec.error_body))
    assert not [r for r in runs if r in printed]


class _EchoStream(_Echo):
    """Streams the request's last message back, a few words a chunk: a model that
    quotes the text it was given."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        words = str(body["messages"][-1]["content"]).split(" ")[:60]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        chunks = [" ".join(words[i:i + 5]) + " " for i in range(0, len(words), 5)]
        for i, text in enumerate(chunks):
            delta = {"choices": [{"index": 0, "delta": {"content": text},
                                  "finish_reason": "stop" if i == len(chunks) - 1 else None}]}
            self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True


def test_answers_that_quote_the_corpus_are_kept_as_digests(private_corpus: Path,
                                                           tmp_path: Path) -> None:
    """A vendor whose answers quote the prompt: the canaries' answers are compared by
    keyed digests of their pieces (the precision section still judges them), and no
    record keeps a word of them."""
    from evalkit.probe.plan.settings import ProbeConfig
    from evalkit.probe.suite import run_probe

    with http_servers() as serve:
        result = run_probe(ProbeConfig(
            serve(_EchoStream), MODEL, levels=(2,),
            phases=("connect", "baseline", "ramp"), corpus_dir=private_corpus,
            overrides={"baseline": {"requests": 2}, "canaries": {"count": 2, "every": 2},
                       "ramp": {"level_duration_s": 0.3, "level_min_requests": 8}}),
            tmp_path / "run")
    _, records = read_run_files(tmp_path / "run")
    canaries = [r for r in records if r.canary and r.outcome == "ok"]
    assert len(canaries) >= 6
    assert all(r.answer_text is None and r.answer_tokens for r in canaries)
    assert all(re.fullmatch(r"[0-9a-f]{12}", t) for r in canaries for t in r.answer_tokens or [])
    level = (result.summary or {})["precision"]["levels"][0]
    assert level["compared"] >= 2 and level["status"] == "held"
    written = b"".join(p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file())
    sent = str(synthetic(canaries[0].counted_prompt_tokens or 0,
                         canaries[0].requested_output_tokens or 0, canaries[0].prompt_id or "",
                         0, load_text(private_corpus)).content).split()
    quoted = [" ".join(sent[i:i + 5]) for i in range(0, 50, 5)]
    assert not [q for q in quoted if q.encode() in written]


def test_an_echo_in_escaped_text_is_cut_too() -> None:
    """A JSON body holds the request's quotes and breaks as \\u201c and \\n, an HTML one as
    &quot;: the words between them are still the request's, and are cut."""
    from evalkit.probe.plan.privacy import scrub

    sent = "Explain “rolled in a damp” please.\n\nResults go in the germination book."
    body = json.dumps({"error": {"message": f"Invalid prompt: {sent}"}})
    assert "\\u201crolled" in body
    assert scrub(body, sent) == '{"error": {"message": "Invalid prompt: [request text]."}}'
    assert scrub("got &quot;Results go in the germination&quot; twice", sent) == \
        "got &quot;[request text]&quot; twice"
    assert scrub("the request is invalid", sent) == "the request is invalid"
