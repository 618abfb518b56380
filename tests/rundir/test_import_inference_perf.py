"""`evalkit import inference-perf`: an inference-perf report directory becomes a run.

The fixture tests/data/peers/inference-perf/reports-20261205-043000/ is built by hand in
the format inference-perf writes, not made by it (it was not installed here): the files
and keys are from kubernetes-sigs/inference-perf's source, upstream as read 2026-12-05
(inference_perf/reportgen/base.py `generate_reports`: per_request_lifecycle_metrics.json
as a list of start_time, end_time, request, response, info, error, in the collector's
order; `summarize_requests`: each stage's load_summary count and concurrency;
inference_perf/apis/base.py: info's request_metrics and response_metrics;
inference_perf/apis/streaming_parser.py: chunk_times of content-bearing messages only;
inference_perf/client/modelserver/openai_client.py: a non-200 is error_type "HTTP Error
<status>"). Two concurrency stages: 1 (3 requests, one without server usage) and 2 (4
requests, one refused 429).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import InputError
from evalkit.rundir.importers.run import import_run
from evalkit.rundir.run import open_run

REPORTS = Path(__file__).parent.parent / "data" / "peers" / "inference-perf" / \
    "reports-20261205-043000"


@pytest.fixture(scope="module")
def ip_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imp") / "ip"
    import_run("inference-perf", REPORTS, out)
    return out


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(
        (REPORTS / "per_request_lifecycle_metrics.json").read_text())
    return sorted(rows, key=lambda r: r["start_time"])


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]


def test_the_records_are_its_stamps_under_our_definitions(ip_run: Path) -> None:
    """Each request in start order is one record at its stage's concurrency; TTFT, chunk
    times and E2E come from its content chunks' stamps less its start; usage is the
    server's where sent (else marked estimated); the 429 is a refusal."""
    records = _records(ip_run)
    rows = _rows()
    assert [r["level"] for r in records] == [1, 1, 1, 2, 2, 2, 2]
    for rec, row in zip(records, rows, strict=True):
        assert rec["t0_s"] == pytest.approx(row["start_time"] - rows[0]["start_time"])
        assert rec["end_s"] == pytest.approx(row["end_time"] - row["start_time"])
        if row["error"]:
            assert rec["outcome"] == "rejected" and rec["http_status"] == 429
            assert rec["error"].startswith("HTTP Error 429: ")
            continue
        times = row["info"]["response_metrics"]["chunk_times"]
        assert [c[0] for c in rec["chunks"]] == pytest.approx(
            [t - row["start_time"] for t in times])
        assert rec["ttft_s"] == pytest.approx(times[0] - row["start_time"])
        assert rec["e2e_s"] == pytest.approx(times[-1] - row["start_time"])
        usage = row["info"]["response_metrics"]["server_usage"]
        assert rec.get("usage_completion_tokens") == (usage and usage["completion_tokens"])
        assert rec["output_tokens_estimated"] is (usage is None)
    summary = json.loads((ip_run / "summary.json").read_text())
    stage = json.loads((REPORTS / "stage_0_lifecycle_metrics.json").read_text())
    assert summary["ramp"]["levels"][0]["ttft_s"]["mean"] == pytest.approx(
        stage["successes"]["latency"]["time_to_first_token"]["mean"])
    run = json.loads((ip_run / "run.json").read_text())
    assert run["target"] == {"base_url": "http://127.0.0.1:8934", "model": "evalkit-reference"}


def test_what_differs_is_named(ip_run: Path) -> None:
    imported = json.loads((ip_run / "run.json").read_text())["imported"]
    assert "reasoned first" in imported["differs"]["TTFT"]
    assert imported["definitions"]["warmup"].startswith("in:")
    notes = open_run(ip_run).notes
    assert any(n.startswith("TTFT is inference-perf's, not evalkit's") for n in notes)
    assert json.loads((ip_run / "summary.json").read_text())["validity"]["status"] == \
        "degraded"
    res = CliRunner().invoke(cli, ["import", "inference-perf", str(REPORTS), "--out",
                                   str(ip_run.parent / "cli")])
    assert res.exit_code == 0, res.output
    assert "imported 7 requests from inference-perf" in res.output
    assert "note: TTFT is inference-perf's, not evalkit's" in res.stderr


def _copy(tmp: Path) -> Path:
    folder = tmp / "reports-x"
    shutil.copytree(REPORTS, folder)
    return folder


def _edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_a_rate_stage_overlapping_stages_and_no_per_request_file_are_refused(
        tmp_path: Path) -> None:
    rate = _copy(tmp_path / "a")
    _edit(rate / "stage_1_lifecycle_metrics.json",
          lambda d: d["load_summary"].pop("concurrency"))
    with pytest.raises(InputError, match=r"stage 1 has no concurrency: evalkit imports "
                                         r"concurrency stages only"):
        import_run("inference-perf", rate, tmp_path / "out-a")
    overlap = _copy(tmp_path / "b")
    _edit(overlap / "per_request_lifecycle_metrics.json",
          lambda rows: [r.update(end_time=r["end_time"] + 5) for r in rows])
    with pytest.raises(InputError, match=r"stage 1 began before stage 0 ended"):
        import_run("inference-perf", overlap, tmp_path / "out-b")
    bare = _copy(tmp_path / "c")
    (bare / "per_request_lifecycle_metrics.json").unlink()
    with pytest.raises(InputError, match=r"no per_request_lifecycle_metrics\.json.*"
                                         r"per_request: true"):
        import_run("inference-perf", bare, tmp_path / "out-c")
    short = _copy(tmp_path / "d")
    _edit(short / "per_request_lifecycle_metrics.json", lambda rows: rows.pop())
    with pytest.raises(InputError, match=r"6 requests, the stage reports count 7"):
        import_run("inference-perf", short, tmp_path / "out-d")
    assert not any((tmp_path / f"out-{x}").exists() for x in "abcd")
