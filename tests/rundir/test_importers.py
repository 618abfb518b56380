"""`evalkit import aiperf|guidellm`: real peer exports become run directories.

The fixtures in tests/data/peers/ are real exports, made by AIPerf 0.13.0 and guidellm
0.8.1 against evalkit's reference endpoint, with that endpoint's truth log beside each
(README.md there has the commands). The import must reproduce the figures the tool itself
reported in its own aggregate output, agree with the server's truth for the same
requests, and never read better than the evidence: what the export lacks is absent.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pypdf
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import InputError
from evalkit.rundir.importers.run import import_run
from evalkit.rundir.run import open_run as read_run

PEERS = Path(__file__).parent.parent / "data" / "peers"
AIPERF = PEERS / "aiperf-0.13.0-c2"
GUIDELLM = PEERS / "guidellm-0.8.1" / "benchmarks.json"


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _truth(path: Path) -> dict[str, dict[str, Any]]:
    return {t["request_id"]: t for t in map(json.loads, path.read_text().splitlines())}


def _content_writes(t: dict[str, Any]) -> list[int]:
    return [w[0] for w in t["writes"] if w[3] in ("content", "reasoning")]


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def aiperf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imp") / "aiperf"
    import_run("aiperf", AIPERF, out)
    return out


@pytest.fixture(scope="module")
def guidellm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imp") / "guidellm"
    import_run("guidellm", GUIDELLM, out)
    return out


# --------------------------------------------------------------------------- AIPerf


def test_aiperf_figures_are_the_ones_aiperf_reported(aiperf_run: Path) -> None:
    """TTFT, E2E, per-token and per-chunk figures re-derived from the records equal
    AIPerf's own aggregate (both use linear-interpolated percentiles)."""
    agg = _json(AIPERF / "profile_export_aiperf.json")
    level = _json(aiperf_run / "summary.json")["ramp"]["levels"]
    assert [lv["concurrency"] for lv in level] == [2]
    lv = level[0]
    for ours, theirs in (("ttft_s", "time_to_first_token"), ("e2e_s", "request_latency"),
                         # one token per chunk here: AIPerf's "ITL" is evalkit's TPOT
                         ("tpot_s", "inter_token_latency"), ("itl_s", "inter_chunk_latency")):
        assert lv[ours]["mean"] * 1e3 == pytest.approx(agg[theirs]["avg"], rel=1e-9), ours
        for q in ("p50", "p90", "p99"):
            assert lv[ours][q] * 1e3 == pytest.approx(agg[theirs][q], rel=1e-9), (ours, q)
    assert lv["ttft_s"]["n"] == agg["time_to_first_token"]["count"] == 9
    assert lv["itl_s"]["n"] == agg["inter_chunk_latency"]["count"]
    # 10 sent, one answered 500: AIPerf's request_count is the 9 that succeeded
    assert lv["outcomes"]["ok"] == agg["request_count"]["avg"] == 9
    assert lv["outcomes"]["error"] == 1 == agg["error_summary"][0]["count"]
    assert lv["requests"] == agg["completed_request_count"]["avg"]
    # AIPerf's benchmark duration is first start to last end; its throughput is the total
    # output over its observation window (start_time to end_time). The records carry
    # both the total and the span (evalkit's steady-state rate is its own, not compared)
    recs = _records(aiperf_run)
    tokens = sum(r["output_tokens"] for r in recs if r["outcome"] == "ok")
    assert tokens == agg["total_osl"]["avg"] == 144
    span = max(r["t0_s"] + r["end_s"] for r in recs) - min(r["t0_s"] for r in recs)
    assert span == pytest.approx(agg["benchmark_duration"]["avg"], abs=1e-6)
    window = (datetime.fromisoformat(agg["end_time"])
              - datetime.fromisoformat(agg["start_time"])).total_seconds()
    assert tokens / window == pytest.approx(agg["output_token_throughput"]["avg"], rel=1e-6)


def test_aiperf_records_agree_with_the_server_truth(aiperf_run: Path) -> None:
    """Joined by X-Request-ID: every request's outcome, token count and chunk count is the
    server's; chunk gaps land within a few ms of the server's writes; TTFT is the
    server's plus the client's share (never less)."""
    truth = _truth(AIPERF / "reference-truth.jsonl")
    recs = _records(aiperf_run)
    assert {r["id"] for r in recs} == set(truth)
    gap_err = []
    for r in recs:
        t = truth[r["id"]]
        if t["outcome"] != "ok":
            assert (r["outcome"], r["http_status"]) == ("error", 500)
            assert "injected fault" in r["error"] and r["chunks"] == []
            continue
        writes = _content_writes(t)
        assert r["outcome"] == "ok" and r["output_tokens"] == t["completion_tokens"]
        assert r["usage_completion_tokens"] == t["completion_tokens"]
        assert len(r["chunks"]) == len(writes)
        server_ttft = (writes[0] - t["received_ns"]) / 1e9
        assert 0 < r["ttft_s"] - server_ttft < 0.06, r["id"]
        ours = [b[0] - a[0] for a, b in itertools.pairwise(r["chunks"])]
        theirs = [(b - a) / 1e9 for a, b in itertools.pairwise(writes)]
        gap_err += [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
    assert max(gap_err) < 0.015 and sorted(gap_err)[len(gap_err) // 2] < 0.002


# --------------------------------------------------------------------------- guidellm


def test_guidellm_figures_are_the_ones_guidellm_reported(guidellm_run: Path) -> None:
    """Per benchmark: TTFT, and guidellm's 'ITL' as evalkit's TPOT, equal its own
    figures (mean, median, min, max, count); outcomes equal its totals."""
    benches = _json(GUIDELLM)["benchmarks"]
    levels = {lv["concurrency"]: lv for lv in _json(guidellm_run / "summary.json")["ramp"]
              ["levels"]}
    assert sorted(levels) == [1, 2]
    for bench in benches:
        lv = levels[bench["config"]["strategy"]["streams"]]
        m = bench["metrics"]
        for ours, theirs in (("ttft_s", "time_to_first_token_ms"),
                             ("tpot_s", "inter_token_latency_ms")):
            got, want = lv[ours], m[theirs]["successful"]
            # guidellm weights its ITL by the tokens after the first (5 requests x 15);
            # every request here has 16 tokens, so its weighted mean is the plain one
            assert got["n"] == 5 and want["count"] == (5 if ours == "ttft_s" else 5 * 15)
            assert got["mean"] * 1e3 == pytest.approx(want["mean"], rel=1e-9)
            assert got["p50"] * 1e3 == pytest.approx(want["median"], rel=1e-9)
            assert got["min"] * 1e3 == pytest.approx(want["min"], rel=1e-9)
            assert got["max"] * 1e3 == pytest.approx(want["max"], rel=1e-9)
        totals = m["request_totals"]
        assert lv["outcomes"]["ok"] == totals["successful"]
        assert lv["outcomes"]["error"] == totals["errored"] == 1
        assert lv["requests"] == totals["total"]


def test_guidellm_records_agree_with_the_server_truth(guidellm_run: Path) -> None:
    """Joined by the response id (chatcmpl-<server id>): the token count is the server's,
    TTFT and the last token are the server's plus the client's share."""
    truth = _truth(PEERS / "guidellm-0.8.1" / "reference-truth.jsonl")
    recs = _records(guidellm_run)
    joined = 0
    for r in recs:
        if r["outcome"] != "ok":
            assert r["http_status"] == 500 and r["output_tokens"] is None
            continue
        t = truth[r["label"].removeprefix("chatcmpl-")]
        writes = _content_writes(t)
        assert r["output_tokens"] == t["completion_tokens"] == 16
        server_ttft = (writes[0] - t["received_ns"]) / 1e9
        server_last = (writes[-1] - t["received_ns"]) / 1e9
        assert 0 < r["ttft_s"] - server_ttft < 0.06
        assert 0 < r["e2e_s"] - server_last < 0.06
        joined += 1
    assert joined == 10
    assert sum(t["outcome"] == "fault:http_500" for t in truth.values()) == 2


# --------------------------------------------------------------------------- fail closed


def test_what_guidellm_does_not_carry_is_absent_never_zero(guidellm_run: Path) -> None:
    s = _json(guidellm_run / "summary.json")
    for lv in s["ramp"]["levels"]:
        assert lv["itl_s"]["n"] == 0 and lv["itl_s"]["p99"] is None
        assert lv["tokens_per_chunk"]["p50"] is None
        assert lv["stalls"] is None and lv["stalled_streams"] is None
        assert lv["aggregate_tokens_per_s"] is None
        assert lv["output_tokens_estimated"] is True  # usage or the requested length?
        assert lv["validity"]["status"] == "degraded"
    assert s["checks"]["usage_honesty"]["checked"] == 0
    assert s["checks"]["usage_honesty"]["flagged"] is None
    assert s["client"]["client_bound"] is None
    assert s["client"]["capacity_judgement_affected"] is None
    assert all(r["chunks"] == [] and r["usage_completion_tokens"] is None
               for r in _records(guidellm_run))


def test_the_run_says_where_it_came_from(aiperf_run: Path, guidellm_run: Path) -> None:
    for run, tool, version, files in (
            (aiperf_run, "aiperf", "0.13.0",
             [AIPERF / "profile_export_aiperf.json", AIPERF / "profile_export.jsonl"]),
            (guidellm_run, "guidellm", "0.8.1", [GUIDELLM])):
        doc = _json(run / "run.json")
        imp = doc["imported"]
        assert (imp["tool"], imp["tool_version"]) == (tool, version)
        assert [(f["name"], f["sha256"]) for f in imp["files"]] == [
            (p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in files]
        assert doc["suite_version"] == f"import:{tool}" and imp["absent"]
        s = _json(run / "summary.json")
        assert s["validity"]["status"] == "degraded"
        assert s["validity"]["reasons"][-1].startswith(
            f"imported from {'AIPerf' if tool == 'aiperf' else 'guidellm'} {version}: "
            "not measured by evalkit")
    reported = _json(aiperf_run / "run.json")["imported"]["reported"]
    assert reported["time_to_first_token"]["unit"] == "ms"
    assert reported["time_to_first_token"]["avg"] == pytest.approx(188.4082611111111)


def test_an_edited_summary_cannot_lift_the_cap(aiperf_run: Path, tmp_path: Path) -> None:
    """Reading back re-applies the cap: validity forced to valid in summary.json (the
    records still agree with it) reads degraded, with the import named first."""
    run = tmp_path / "run"
    shutil.copytree(aiperf_run, run)
    s = _json(run / "summary.json")
    s["validity"] = {**s["validity"], "status": "valid", "reasons": []}
    s["ramp"]["levels"][0]["validity"]["status"] = "valid"
    (run / "summary.json").write_text(json.dumps(s))
    checked = read_run(run)
    assert checked.rebuilt is None
    assert checked.summary["validity"]["status"] == "degraded"
    assert checked.summary["ramp"]["levels"][0]["validity"]["status"] == "degraded"
    assert checked.notes[0].startswith("imported from AIPerf 0.13.0: not measured by evalkit")
    # a missing summary is rebuilt from the records, capped just the same
    (run / "summary.json").unlink()
    again = read_run(run)
    assert again.rebuilt and again.summary["validity"]["status"] == "degraded"
    assert "imported from AIPerf" in " ".join(again.summary["validity"]["reasons"])


def test_report_and_compare_read_an_imported_run(aiperf_run: Path, guidellm_run: Path,
                                                 tmp_path: Path) -> None:
    """A real PDF from each import says on page one where the figures came from; the two
    imports compare (as different suites: not set side by side as alike)."""
    pdf = tmp_path / "g.pdf"
    res = CliRunner().invoke(cli, ["report", "--run", str(guidellm_run), "--out", str(pdf)])
    assert res.exit_code == 0, res.output
    page = re.sub(r"\s+", " ", pypdf.PdfReader(pdf).pages[0].extract_text())
    assert "imported from guidellm 0.8.1: not measured by evalkit" in page
    assert "(imported from guidellm: not evalkit's suite)" in page and "vimport" not in page
    assert "DEGRADED" in page
    card = _json(pdf.with_suffix(".json"))
    assert card["run"]["validity"] == "degraded"
    both = tmp_path / "both.pdf"
    res = CliRunner().invoke(cli, ["compare", str(aiperf_run), str(guidellm_run),
                                   "--out", str(both)])
    assert res.exit_code == 0, res.output
    assert "imported from AIPerf 0.13.0" in res.stderr
    labels = [r["label"] for r in _json(both.with_suffix(".json"))["runs"]]
    assert len(labels) == 2


# --------------------------------------------------------------------------- wrong input


def _with(path: Path, tmp: Path, edit: Any, name: str | None = None) -> Path:
    doc = _json(path)
    edit(doc)
    out = tmp / (name or path.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc))
    return out


def test_wrong_kind_and_version_are_named(tmp_path: Path) -> None:
    agg = AIPERF / "profile_export_aiperf.json"
    with pytest.raises(InputError, match=r"profile_export_aiperf\.json: no metadata\."
                       r"guidellm_version and benchmarks list: not a guidellm JSON report"):
        import_run("guidellm", agg, tmp_path / "a")
    with pytest.raises(InputError, match=r"benchmarks\.json: not an AIPerf artifact directory: "
                       r"profile_export_aiperf\.json and profile_export\.jsonl not found.*"
                       r"expected the directory `aiperf profile --artifact-dir`"):
        import_run("aiperf", GUIDELLM, tmp_path / "b")
    newer = _with(GUIDELLM, tmp_path, lambda d: d["metadata"].update(version=3))
    with pytest.raises(InputError, match=r"guidellm report version 3 \(guidellm 0\.8\.1\); "
                       r"evalkit reads version 2"):
        import_run("guidellm", newer, tmp_path / "c")
    art = tmp_path / "art"
    art.mkdir()
    shutil.copy(AIPERF / "profile_export.jsonl", art)
    _with(agg, art, lambda d: d.update(schema_version="2.0"))
    with pytest.raises(InputError, match=r"AIPerf export schema 2\.0 \(AIPerf 0\.13\.0\); "
                       r"evalkit reads schema 1\.x"):
        import_run("aiperf", art, tmp_path / "d")
    rate = _with(GUIDELLM, tmp_path / "r", lambda d: d["benchmarks"][1]["config"]["strategy"]
                 .update(type_="poisson"))
    with pytest.raises(InputError, match=r"benchmark 2 ran strategy 'poisson': evalkit "
                       r"imports closed-loop benchmarks only"):
        import_run("guidellm", rate, tmp_path / "e")
    assert not any((tmp_path / x).exists() for x in "abcde")  # nothing half-written


def test_vendor_text_in_an_export_is_hostile(tmp_path: Path) -> None:
    """An export is input: error text is stripped of control and bidi characters and
    capped, credentials and queries are dropped from the URL, a value of the wrong type
    is absent rather than a crash, and nothing of the key survives in run.json."""
    art = tmp_path / "art"
    art.mkdir()
    agg = _json(AIPERF / "profile_export_aiperf.json")
    agg["input_config"]["endpoint"]["urls"] = ["https://user:s3cret@vendor.example/v1?key=s3cret"]
    agg["input_config"]["models"]["items"][0]["name"] = "model\x1b[31m\nINJECTED"
    (art / "profile_export_aiperf.json").write_text(json.dumps(agg))
    rows = [json.loads(line) for line in (AIPERF / "profile_export.jsonl").read_text()
            .splitlines()]
    failed = next(r for r in rows if r.get("error"))
    failed["error"]["message"] = "\u202eevil\x1b[2J" + "x" * 10_000
    rows[0]["metrics"]["time_to_first_token"]["value"] = "NaN"
    (art / "profile_export.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    out = tmp_path / "run"
    import_run("aiperf", art, out)
    run_text = (out / "run.json").read_text()
    assert "s3cret" not in run_text and "user" not in _json(out / "run.json")["target"]["base_url"]
    assert _json(out / "run.json")["target"] == {"base_url": "https://vendor.example/v1",
                                                 "model": "model [31m INJECTED"}
    recs = {r["id"]: r for r in _records(out)}
    err = recs[failed["metadata"]["x_request_id"]]["error"]
    assert len(err) < 400 and "\u202e" not in err and "\x1b" not in err
    first = recs[rows[0]["metadata"]["x_request_id"]]
    assert first["outcome"] == "incomplete" and first["ttft_s"] is None
    # a directory holding guidellm's default file name is read as that file
    assert import_run("guidellm", GUIDELLM.parent, tmp_path / "g").levels == [1, 2]


def test_an_integer_beyond_float_range_is_absent_not_a_crash(tmp_path: Path) -> None:
    """JSON has no bound on integers: 10^400 where a latency belongs is no measurement
    (math.isfinite on it raises OverflowError; the import read it that way once)."""
    art = tmp_path / "art"
    shutil.copytree(AIPERF, art)
    rows = [json.loads(line) for line in (art / "profile_export.jsonl").read_text()
            .splitlines()]
    ok = next(r for r in rows if not r.get("error"))
    ok["metrics"]["time_to_first_token"]["value"] = 10 ** 400
    (art / "profile_export.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    import_run("aiperf", art, tmp_path / "run")
    rec = next(r for r in _records(tmp_path / "run")
               if r["id"] == ok["metadata"]["x_request_id"])
    assert rec["ttft_s"] is None and rec["outcome"] != "ok"


@pytest.mark.parametrize("tool", ["aiperf", "guidellm"])
def test_a_field_of_the_wrong_type_is_an_input_error(tool: str, tmp_path: Path) -> None:
    """A number where the tool writes a list (AIPerf's phases, guidellm's data): an
    InputError naming the file, never a TypeError traceback; nothing is written."""
    if tool == "aiperf":
        src = tmp_path / "art"
        shutil.copytree(AIPERF, src)
        doc = _json(src / "profile_export_aiperf.json")
        doc["input_config"]["phases"] = 5
        (src / "profile_export_aiperf.json").write_text(json.dumps(doc))
    else:
        src = tmp_path / "benchmarks.json"
        doc = _json(GUIDELLM)
        doc["config"]["spec"]["data"] = 5
        src.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"evalkit cannot read this .* export"):
        import_run(tool, src, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_counts_past_any_range_write_no_half_run(tmp_path: Path) -> None:
    """Output counts of 1e300 sum to infinity in the summary: the import is refused
    whole (it once left run.json and requests.jsonl without a summary)."""
    src = tmp_path / "benchmarks.json"
    doc = _json(GUIDELLM)
    for bench in doc["benchmarks"]:
        for r in bench["requests"]["successful"]:
            r["output_tokens"] = 1e300
    src.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="figures do not make a run"):
        import_run("guidellm", src, tmp_path / "run")
    assert not (tmp_path / "run").exists()
