"""`evalkit import vllm|inference-perf` of hostile files: every value the tool does not
write (NaN, an infinity, a negative or absurd time, a string where a number goes, chunks
after the request ended) refuses the import naming the file and the field, exit 2; never
a record read as the vendor's failure or a figure. A pipe, a device, a file too large to
parse whole, or a link out of the directory is refused before it is read."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pypdf
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.rundir.importers.common import MAX_JSON_BYTES

PEERS = Path(__file__).parent.parent / "data" / "peers"
VLLM = PEERS / "vllm-bench-serve"
REPORTS = PEERS / "inference-perf" / "reports-20261205-043000"
PER_REQUEST = "per_request_lifecycle_metrics.json"

Edit = Callable[[Any], Any]


def _imported(tool: str, source: Path, out: Path) -> Any:
    res = CliRunner().invoke(cli, ["import", tool, str(source), "--out", str(out)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def _set(key: str, i: int, value: Any) -> Edit:
    return lambda d: d[key].__setitem__(i, value)


@pytest.mark.parametrize(("edit", "says"), [
    (_set("ttfts", 0, float("nan")), r"ttfts\[0\] is nan"),
    (_set("latencies", 1, float("inf")), r"latencies\[1\] is inf"),
    (_set("ttfts", 0, -5.0), r"ttfts\[0\] is -5\.0"),
    (_set("ttfts", 0, 1e300), r"ttfts\[0\] is 1e\+300"),
    (_set("ttfts", 0, "fast"), r"ttfts\[0\] is 'fast'"),
    (_set("ttfts", 0, True), r"ttfts\[0\] is True"),
    (_set("start_times", 0, "x"), r"start_times\[0\] is 'x'"),
    (_set("start_times", 1, 1e308), r"start_times\[1\] is 1e\+308"),
    (_set("itls", 0, [-1.0]), r"itls\[0\]\[0\] is -1\.0"),
    (_set("itls", 0, "abc"), r"itls\[0\] is 'abc'"),
    (_set("errors", 0, {"a": 1}), r"errors\[0\] is a JSON object"),
    (_set("output_lens", 0, -7), r"output_lens\[0\] is -7"),
    (_set("input_lens", 0, 10 ** 30), r"input_lens\[0\] is 1000000000000000000000000"),
    (_set("ttfts", 0, 50.0), r"request 0's ttfts and itls end after its latencies"),
    (lambda d: d.update(date="99991231-235959"), r"date '99991231-235959' is no time a run"),
    (lambda d: d.update(date="00010101-000000"), r"date '00010101-000000' is no time a run"),
])
def test_a_vllm_value_it_never_writes_is_refused_by_name(tmp_path: Path, edit: Edit,
                                                        says: str) -> None:
    doc = json.loads(sorted(VLLM.glob("*.json"))[1].read_text())
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    res = _imported("vllm", path, tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert str(path) in res.stderr and re.search(says, res.stderr), res.stderr
    assert not (tmp_path / "out").exists()


def _ip_copy(tmp: Path, edit: Edit) -> Path:
    folder = tmp / "reports-x"
    shutil.copytree(REPORTS, folder)
    rows = json.loads((folder / PER_REQUEST).read_text())
    edit(rows)
    (folder / PER_REQUEST).write_text(json.dumps(rows))
    return folder


def _chunk(i: int, value: Any) -> Edit:
    return lambda rows: rows[i]["info"]["response_metrics"]["chunk_times"].__setitem__(0, value)


@pytest.mark.parametrize(("edit", "says"), [
    (lambda rows: rows[2].update(start_time="soon"), r"\[2\]\.start_time is 'soon'"),
    (lambda rows: rows[0].update(end_time=float("nan")), r"\[0\]\.end_time is nan"),
    (lambda rows: rows[0].update(end_time=rows[0]["start_time"] + 1e6),
     r"entry 0 ends 1e\+06 s after it starts"),
    (lambda rows: rows.__setitem__(1, "junk"), r"entry 1 is 'junk'"),
    (_chunk(0, "x"), r"chunk_times\[0\] of the request with start_time 812\.1 is 'x'"),
    (_chunk(0, 1e9), r"chunk_times\[0\] of the request with start_time 812\.1 is 1000000000"),
    (lambda rows: rows[0]["info"]["response_metrics"]["server_usage"].update(
        completion_tokens=-3), r"server_usage\.completion_tokens of the request .* is -3"),
])
def test_an_inference_perf_value_it_never_writes_is_refused_by_name(
        tmp_path: Path, edit: Edit, says: str) -> None:
    folder = _ip_copy(tmp_path, edit)
    res = _imported("inference-perf", folder, tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert PER_REQUEST in res.stderr and re.search(says, res.stderr), res.stderr
    assert not (tmp_path / "out").exists()


def _vllm_dir(tmp: Path) -> Path:
    folder = tmp / "results"
    shutil.copytree(VLLM, folder)
    return folder


@pytest.mark.parametrize("kind", ["device", "pipe", "outside", "huge"])
def test_a_file_that_is_no_export_is_refused_before_it_is_read(tmp_path: Path,
                                                               kind: str) -> None:
    """A link to /dev/zero or a pipe would be read without end; a 300 MB file would be
    parsed whole (~3x in memory); a link out of the directory is another file's data."""
    folder = _vllm_dir(tmp_path)
    odd = folder / "zz.json"
    if kind == "device":
        odd.symlink_to("/dev/zero")
        folder = odd  # the file named itself, not found in a directory
    elif kind == "pipe":
        os.mkfifo(odd)
    elif kind == "outside":
        (tmp_path / "other.json").write_bytes(next(VLLM.glob("*.json")).read_bytes())
        odd.symlink_to(tmp_path / "other.json")
    else:
        with odd.open("wb") as fh:
            fh.truncate(MAX_JSON_BYTES + 1)  # sparse: no disk, no time
    res = _imported("vllm", folder, tmp_path / "out")
    assert res.exit_code == 2, res.output
    says = {"device": "not a regular file", "pipe": "not a regular file",
            "outside": f"a link to {tmp_path / 'other.json'}, outside",
            "huge": f"{MAX_JSON_BYTES + 1:,} bytes, more than evalkit reads (256 MiB)"}[kind]
    assert f"{odd}: {says}" in res.stderr.replace("\n", " "), res.stderr
    assert not (tmp_path / "out").exists()


def test_an_inference_perf_file_linked_out_of_its_directory_is_refused(tmp_path: Path) -> None:
    folder = _ip_copy(tmp_path, lambda rows: rows)
    moved = tmp_path / "elsewhere.json"
    (folder / PER_REQUEST).rename(moved)
    (folder / PER_REQUEST).symlink_to(moved)
    res = _imported("inference-perf", folder, tmp_path / "out")
    assert res.exit_code == 2 and "outside" in res.stderr, res.output


# --------------------------------------------------------------------------- Q1


QUESTIONNAIRE = """schema: evalkit.questionnaire/1
vendor: Acme
model: evalkit-reference
endpoint: http://127.0.0.1:8934
Q1:
  ttft_p50_ms: 400
  at_concurrency: 2
  source: production
  window: "2026-11-16 to 2026-11-22"
"""


def _twelve_at_two(tmp: Path) -> Path:
    """inference-perf's fixture with its concurrency-2 stage made of 12 requests, two at
    a time back to back (its first request's stamps, shifted): enough to decide a p50 at
    2 streams. Its endpoint and model are the questionnaire's."""
    folder = tmp / "reports-20261205-043000"
    shutil.copytree(REPORTS, folder)
    rows = json.loads((folder / PER_REQUEST).read_text())
    first = next(r for r in rows if r["start_time"] == 815.0)
    stage = []
    for k in range(12):
        shift = 0.418 * (k // 2) + 0.0005 * (k % 2)
        r = json.loads(json.dumps(first))
        r["start_time"] += shift
        r["end_time"] += shift
        metrics = r["info"]["response_metrics"]
        metrics["chunk_times"] = [t + shift for t in metrics["chunk_times"]]
        stage.append(r)
    kept = [r for r in rows if r["start_time"] < 815.0]
    (folder / PER_REQUEST).write_text(json.dumps(kept + stage))
    s1 = folder / "stage_1_lifecycle_metrics.json"
    doc = json.loads(s1.read_text())
    doc["load_summary"]["count"] = 12
    s1.write_text(json.dumps(doc))
    return folder


def test_a_ttft_that_is_not_ours_never_decides_q1(tmp_path: Path) -> None:
    """An import whose TTFT means something else (run.json's imported.differs) keeps its
    figure beside the claim but never earns a green mark (nor a red one): Q1 is
    unverified, and page one says whose TTFT it is. Without the rule this claim reads ok
    (measured p50 220 ms at 2 streams against 400 ms claimed)."""
    run = tmp_path / "run"
    assert _imported("inference-perf", _twelve_at_two(tmp_path), run).exit_code == 0
    q = tmp_path / "q.yaml"
    q.write_text(QUESTIONNAIRE)
    pdf = tmp_path / "r.pdf"
    res = CliRunner().invoke(cli, ["report", "--run", str(run), "--questionnaire", str(q),
                                   "--out", str(pdf)])
    assert res.exit_code == 0, res.output
    q1 = json.loads(pdf.with_suffix(".json").read_text())["questions"]["Q1"]
    assert q1["measured"]["ttft_p50_ms"] == pytest.approx(220, abs=15)
    assert q1["status"] == "unverified", q1
    assert "not decided: the TTFT is inference-perf's" in q1["reason"]
    text = re.sub(r"\s+", " ", pypdf.PdfReader(pdf).pages[0].extract_text())
    assert "TTFT is inference-perf's, not evalkit's" in text


def test_vllms_ttft_never_decides_q1_either() -> None:
    """vLLM's TTFT (to a role-only first chunk: earlier than ours) would let a claim hold
    that ours might break; its run names no endpoint today, so the rule is shown on the
    run.json its import writes, with the endpoint a careless hand might add."""
    from evalkit.questionnaire.model import TtftAnswer
    from evalkit.review.measured import TtftMeasured
    from evalkit.review.reconcile import ttft_not_ours
    from evalkit.review.rules import Judgement, RunTarget
    from evalkit.rundir.importers.common import DIFFERS

    run = {"target": {"model": "m", "base_url": "http://x:1"},
           "imported": {"tool": "vllm", "differs": DIFFERS["vllm"]}}
    target = RunTarget.from_run(run)
    assert target is not None and target.ttft_not_ours is not None
    ok = Judgement("ok", "Claimed TTFT p50 400 ms at 2 streams vs measured 220 ms: holds.",
                   TtftAnswer(), TtftMeasured(ttft_p50_ms=220.0), "")
    judged = ttft_not_ours(ok, target.ttft_not_ours)
    assert judged.status == "unverified" and judged.measured == TtftMeasured(ttft_p50_ms=220.0)
    assert "vllm's: vllm bench serve stops its TTFT clock" in judged.reason
    assert RunTarget.from_run({"target": {}}).ttft_not_ours is None  # type: ignore[union-attr]


def test_a_config_nested_past_the_parsers_depth_is_refused_by_name(tmp_path: Path) -> None:
    folder = _ip_copy(tmp_path, lambda rows: rows)
    (folder / "config.yaml").write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    res = _imported("inference-perf", folder, tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert f"{folder / 'config.yaml'}: not YAML" in res.stderr, res.stderr


def test_a_stage_reports_own_figures_are_kept_few_and_clean(tmp_path: Path) -> None:
    """`imported.reported` keeps the tool's figures as it reported them: a stage report
    with 5,000 throughput names carrying escapes leaves 16, cleaned, in run.json."""
    folder = _ip_copy(tmp_path, lambda rows: rows)
    stage = folder / "stage_0_lifecycle_metrics.json"
    doc = json.loads(stage.read_text())
    doc.setdefault("successes", {})["throughput"] = {
        f"\x1b[2J\x07rate{i}" + "x" * 100: float(i) for i in range(5000)}
    stage.write_text(json.dumps(doc))
    assert _imported("inference-perf", folder, tmp_path / "out").exit_code == 0
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    kept = run["imported"]["reported"]["1"]["throughput"]
    assert len(kept) == 16 and not any("\x1b" in k or "\x07" in k for k in kept)


def test_a_directory_of_results_too_large_together_is_refused(tmp_path: Path) -> None:
    """Each file under the cap, five together over 1 GiB: every parsed document is held
    at once, so the directory is refused before any is read."""
    folder = _vllm_dir(tmp_path)
    for i in range(5):
        with (folder / f"big{i}.json").open("wb") as fh:
            fh.truncate(MAX_JSON_BYTES - 1)  # sparse
    res = _imported("vllm", folder, tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert "more than evalkit reads at once" in res.stderr, res.stderr
