"""run.json read once, typed (`evalkit.rundir.meta.RunMeta`): `open_run` hands it on as
`RunDir.meta`, and a run.json anyone edited reads as not stated, never as a crash."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.review.rules import RunTarget
from evalkit.rundir.meta import PromptsFile, RunMeta, StandIn
from evalkit.rundir.run import RunDir, open_run

REPORT_RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"


def test_open_run_reads_run_json_once_into_its_fields() -> None:
    run = open_run(REPORT_RUN)
    meta = run.meta
    assert (meta.status, meta.started_at, meta.ended_at) == (
        "complete", "2026-11-30T07:00:00Z", "2026-11-30T07:01:10Z")
    assert (meta.profile, meta.suite_version, meta.tool_version) == ("quick", "1", "0.1.0")
    assert (meta.target.model, meta.target.base_url) == ("ref-model-7b",
                                                         "http://127.0.0.1:8011/v1")
    assert meta.vendor is None and meta.prompts_file is None
    # the review's target is the one the document gives
    assert RunTarget.from_meta(meta) == RunTarget.from_run(run.run) == RunTarget(
        "ref-model-7b", "http://127.0.0.1:8011/v1", None, "quick")


def test_the_settings_and_the_buyer_s_prompts_file() -> None:
    meta = RunMeta.from_json({
        "settings": {"prompt_tokens": 512, "output_tokens": 64,
                     "ramp": {"levels": [1, 2, 4]}},
        "provenance": {"prompts": {"file": {"name": "mine.jsonl", "sha256": "ab" * 32}},
                       "package_sha256": "x"},
        "stands_in_for": {"model": "m", "endpoint": "https://e/v1"}, "vendor": "Acme"})
    assert meta.settings.ramp is not None and meta.settings.ramp.levels == (1, 2, 4)
    assert (meta.settings.prompt_tokens, meta.settings.output_tokens) == (512, 64)
    assert meta.prompts_file == PromptsFile("mine.jsonl", "ab" * 32)
    assert meta.provenance == {"prompts": {"file": {"name": "mine.jsonl", "sha256": "ab" * 32}},
                               "package_sha256": "x"}  # free-form, kept as written
    target = RunTarget.from_meta(meta)
    assert target.prompt_tokens == 512 and target.prompts_file == "mine.jsonl, abababababab"
    assert target.stands_in_for == StandIn("m", "https://e/v1")


def test_an_edited_run_json_reads_as_not_stated() -> None:
    meta = RunMeta.from_json({
        "target": {"model": 7, "base_url": ["x"]}, "status": {"a": 1}, "started_at": 3,
        "profile": True, "settings": {"prompt_tokens": "512", "ramp": {"levels": [1, "2", 4.5]}},
        "provenance": {"prompts": {"file": "mine.jsonl"}}, "prompts_file": {"name": "x"}})
    assert (meta.target.model, meta.target.base_url, meta.status, meta.started_at,
            meta.profile) == (None, None, None, None, None)
    assert meta.settings.prompt_tokens is None
    assert meta.settings.ramp is not None and meta.settings.ramp.levels == (1,)
    assert meta.prompts_file is None  # only provenance names it, as a file object
    assert RunMeta.from_json([1]) == RunMeta() and RunTarget.from_run([1]) is None


def test_a_run_built_by_hand_reads_its_run_json_too() -> None:
    run = RunDir({"target": {"model": "m", "base_url": "http://h/v1"}, "status": "running"},
                 {"schema": "evalkit.summary/1"})
    assert run.meta.target.model == "m" and run.meta.status == "running"
    assert json.dumps(run.run)  # the document itself is kept as written


def test_the_trace_s_facts_read_typed_and_hostile_values_drop_out() -> None:
    """What the OTel trace reads (issue 42: by field, not by key): the auth kind and
    sampling, the clock's wall origin kept whole (a float would move it in 256 ns steps),
    and an import's tool and files; a value of the wrong type is absent, not a crash."""
    wall = 1_764_486_000_123_456_789
    meta = RunMeta.from_json({
        "run_id": "r-1", "clock": {"wall_ns": wall},
        "target": {"auth": "bearer", "sampling": {"temperature": 0, "seed": 7}},
        "imported": {"tool": "vllm", "files": [{"sha256": "cd" * 32}, "junk", {"sha256": 3}]}})
    assert (meta.run_id, meta.clock.wall_ns, meta.target.auth) == ("r-1", wall, "bearer")
    assert (meta.target.sampling.temperature, meta.target.sampling.seed) == (0.0, 7)
    imported = meta.imported_from
    assert imported is not None and imported.tool == "vllm"
    assert [f.sha256 for f in imported.files] == ["cd" * 32, None]
    hostile = RunMeta.from_json({"run_id": 5, "target": {"sampling": {"seed": "7"}},
                                 "imported": ["not", "a", "mapping"]})
    assert hostile.run_id is None and hostile.target.sampling.seed is None
    assert hostile.imported_from is None and RunMeta.from_json({}).imported_from is None
