"""`evalkit import vllm`: `vllm bench serve` result JSON becomes a run directory.

The fixtures in tests/data/peers/vllm-bench-serve/ are built by hand in the format vLLM
writes, not made by vLLM (it does not install here: it needs CUDA's torch): its keys and
their meaning are from vllm/benchmarks/serve.py (`benchmark`'s `result`, `main_async`'s
`result_json`, `--save-detailed`) and vllm/benchmarks/lib/endpoint_request_func.py (what
`ttfts`, `itls`, `latencies`, `start_times` and `errors` hold), upstream as read on
2026-12-05 (tests/data/peers/README.md). Two runs: --max-concurrency 1 (3 requests) and 2
(4 requests, one refused "Service Unavailable").
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pypdf
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import InputError
from evalkit.rundir.importers.run import import_run
from evalkit.rundir.run import open_run

VLLM = Path(__file__).parent.parent / "data" / "peers" / "vllm-bench-serve"
INFERENCE_PERF = Path(__file__).parent.parent / "data" / "peers" / "inference-perf" / \
    "reports-20261205-043000"


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imp") / "vllm"
    import_run("vllm", VLLM, out)
    return out


def _files() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(VLLM.glob("*.json"))]


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]


def test_the_records_are_vllms_stamps(vllm_run: Path) -> None:
    """Each request of each file is one record at its level: TTFT, E2E and every chunk's
    time are vLLM's (ttft, ttft + the itls in turn, latency), its spacing within a level
    is vLLM's send times', the levels do not overlap, and the refusal is a 503."""
    records = _records(vllm_run)
    files = _files()
    assert [r["level"] for r in records] == [1, 1, 1, 2, 2, 2, 2]
    for (level, recs), doc in zip(itertools.groupby(records, key=lambda r: r["level"]),
                                  files, strict=True):
        recs = list(recs)
        assert doc["max_concurrency"] == level and len(recs) == len(doc["ttfts"])
        for i, rec in enumerate(recs):
            gap = rec["t0_s"] - recs[0]["t0_s"]
            assert gap == pytest.approx(doc["start_times"][i] - doc["start_times"][0])
            if doc["errors"][i]:
                assert rec["outcome"] == "rejected" and rec["http_status"] == 503
                assert rec["error"] == doc["errors"][i] and rec.get("ttft_s") is None
                continue
            assert rec["outcome"] == "ok"
            assert rec["ttft_s"] == doc["ttfts"][i]
            assert rec["e2e_s"] == doc["latencies"][i]
            want = list(itertools.accumulate([doc["ttfts"][i], *doc["itls"][i]]))
            assert [c[0] for c in rec["chunks"]] == pytest.approx(want)
            assert rec["chunks"][-1][0] == pytest.approx(rec["e2e_s"])
            assert rec["output_tokens"] == doc["output_lens"][i]
            assert rec["output_tokens_estimated"] is True  # usage or vLLM's count: unsaid
    ends = [r["t0_s"] + (r.get("end_s") or 0) for r in records if r["level"] == 1]
    assert min(r["t0_s"] for r in records if r["level"] == 2) > max(ends)
    summary = json.loads((vllm_run / "summary.json").read_text())
    level1 = summary["ramp"]["levels"][0]
    assert level1["ttft_s"]["p50"] == pytest.approx(files[0]["median_ttft_ms"] / 1000)
    assert level1["ttft_s"]["mean"] == pytest.approx(files[0]["mean_ttft_ms"] / 1000)


def test_the_ttft_that_differs_is_named(vllm_run: Path) -> None:
    """vLLM's TTFT stops at the first message with choices (a role-only one included):
    kept, and named as not evalkit's in run.json, in what every reader's notes say, and
    at import; what the file lacks is said, and the run is at best degraded."""
    imported = json.loads((vllm_run / "run.json").read_text())["imported"]
    assert "role-only" in imported["differs"]["TTFT"]
    assert "first SSE message with choices" in imported["definitions"]["ttft_s"]
    assert any("HTTP status codes" in a for a in imported["absent"])
    assert imported["per_chunk_times"] is True
    notes = open_run(vllm_run).notes
    assert any(n.startswith("TTFT is vllm bench serve's, not evalkit's") for n in notes)
    summary = json.loads((vllm_run / "summary.json").read_text())
    assert summary["validity"]["status"] == "degraded"
    assert "TTFT" in summary["imported"]["differs"]


def _edited(tmp: Path, edit: Any) -> Path:
    doc = _files()[1]
    edit(doc)
    path = tmp / "edited.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d.pop("ttfts"), r"no per-request ttfts: re-run `vllm bench serve` with "
                               r"--save-detailed"),
    (lambda d: d.update(request_rate=4.0), r"request_rate 4\.0, max_concurrency 2: evalkit "
                                           r"imports closed-loop runs only"),
    (lambda d: d.update(max_concurrency=None), r"closed-loop runs only"),
    (lambda d: d["itls"].pop(), r"per-request lists differ in length"),
    (lambda d: d.pop("model_id"), r"not a `vllm bench serve` result"),
])
def test_what_cannot_be_imported_is_refused(tmp_path: Path, edit: Any, says: str) -> None:
    with pytest.raises(InputError, match=says):
        import_run("vllm", _edited(tmp_path, edit), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_report_and_compare_read_it(vllm_run: Path, tmp_path: Path) -> None:
    """A real PDF says on page one where the figures came from and that the TTFT is not
    evalkit's; compare takes it beside inference-perf's import, and names both."""
    pdf = tmp_path / "v.pdf"
    res = CliRunner().invoke(cli, ["report", "--run", str(vllm_run), "--out", str(pdf)])
    assert res.exit_code == 0, res.output
    text = re.sub(r"\s+", " ", pypdf.PdfReader(pdf).pages[0].extract_text())  # page one
    assert "imported from vllm bench serve" in text
    assert "TTFT is vllm bench serve's, not evalkit's" in text
    other = tmp_path / "inference-perf"
    import_run("inference-perf", INFERENCE_PERF, other)
    both = tmp_path / "both.pdf"
    res = CliRunner().invoke(cli, ["compare", str(vllm_run), str(other), "--out", str(both)])
    assert res.exit_code == 0, res.output
    assert "imported from vllm bench serve" in res.stderr
    assert "imported from inference-perf" in res.stderr
    assert len(json.loads(both.with_suffix(".json").read_text())["runs"]) == 2
