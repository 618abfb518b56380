"""summary.json as a typed tree (`Summary.sections`): read once, written back byte for byte.

summary.json's keys are a contract, so `Summary.to_json()` must write exactly what was
read (the same keys, in the same order, with the same values), for the fixture runs and
for a run a real probe of the reference endpoint just wrote; and every typed field must
hold what its key holds (a misread field reads as a different figure on the page).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from evalkit.analysis.summarize import summary_of
from evalkit.analysis.summary import Sections, Summary, measurements
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.rundir.store import read_records, write_json

DATA = Path(__file__).parent.parent / "data"
FIXTURES = sorted(DATA.rglob("summary.json"))


def _written_back(path: Path, tmp_path: Path) -> tuple[bytes, Summary]:
    """summary.json's bytes, and those `to_json` gives when written as the probe writes."""
    summary = Summary.from_json(json.loads(path.read_bytes()))
    out = tmp_path / "again.json"
    write_json(out, summary.to_json())
    return out.read_bytes(), summary


def _agrees(typed: object, raw: object, where: str, seen: list[str]) -> None:
    """Every scalar field of `typed` (a section's dataclass) equals its key in `raw`,
    walking down the sections, their lists and mappings; `seen` collects the paths
    compared (so a test can tell the walk reached the figures)."""
    if is_dataclass(typed) and isinstance(raw, Mapping):
        for f in fields(typed):
            key = f.metadata.get("key", f.name)
            if f.name != "raw" and key in raw:
                _agrees(getattr(typed, f.name), raw[key], f"{where}.{key}", seen)
    elif isinstance(typed, tuple) and isinstance(raw, list) and typed \
            and is_dataclass(typed[0]):
        for i, (t, r) in enumerate(zip(typed, raw, strict=False)):
            _agrees(t, r, f"{where}[{i}]", seen)
    elif isinstance(typed, Mapping) and isinstance(raw, Mapping):
        for k, v in typed.items():
            if str(k) in raw:
                _agrees(v, raw[str(k)], f"{where}.{k}", seen)
    elif isinstance(typed, bool | int | float | str) and isinstance(raw, bool | int | float | str):
        seen.append(where)
        assert typed == raw and isinstance(typed, bool) == isinstance(raw, bool), where


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_every_fixture_summary_is_written_back_byte_for_byte(path: Path,
                                                             tmp_path: Path) -> None:
    again, summary = _written_back(path, tmp_path)
    assert again == path.read_bytes()
    seen: list[str] = []
    _agrees(summary.sections, summary.to_json(), "summary", seen)
    assert len(seen) > 300  # the walk reached the levels' figures, not just the top


def test_a_real_probe_s_summary_is_typed_and_written_back_byte_for_byte(
        reference: Any, tmp_path: Path) -> None:
    """The reference endpoint, probed briefly (connect, baseline, prefill, a 2-level ramp):
    its summary.json round-trips exactly, every figure typed as written, and the records
    summarised again give the same document (`summary_of`)."""
    srv = reference("gpu", mode="thread")
    run = tmp_path / "run"
    run_probe(ProbeConfig(srv.base_url, srv.model,
                          phases=("connect", "baseline", "prefill", "ramp"), output_tokens=8,
                          overrides={"baseline": {"requests": 4},
                                     "ramp": {"levels": [1, 2], "level_duration_s": 0.5,
                                              "level_min_requests": 4}}), run)
    again, summary = _written_back(run / "summary.json", tmp_path)
    assert again == (run / "summary.json").read_bytes()
    seen: list[str] = []
    _agrees(summary.sections, summary.to_json(), "summary", seen)
    assert "summary.connect.tokens_per_chunk.p50" in seen
    assert "summary.ramp.levels[1].ttft_s.p90" in seen
    s = summary.sections
    assert s.connect is not None and s.connect.tokens_per_chunk.p50 is not None
    assert s.ramp is not None and [lv.concurrency for lv in s.ramp.levels] == [1, 2]
    assert s.prefill is not None and s.validity.status in ("valid", "degraded", "invalid")
    assert s.checks is not None and s.checks.streaming is not None
    # the records summarised again: the typed summary's document is summarize's own
    records = read_records(run / "requests.jsonl")
    rebuilt = summary_of(records, {"thresholds": summary.to_json()["thresholds"]})
    assert rebuilt.sections.requests == s.requests == len(records)
    assert rebuilt.sections.outcomes == s.outcomes


#: values a tampered summary may hold where a figure belongs (a negative figure is a
#: number: `evalkit.rundir.audit` refuses the file before anything reads it)
HOSTILE = [math.nan, math.inf, "3", True, 10**400, [1, 2], {"p50": 1}, None]


@pytest.mark.parametrize("junk", HOSTILE, ids=repr)
def test_hostile_values_read_as_nothing_never_a_crash(junk: Any) -> None:
    """Every section and figure replaced by junk: the reading is None (or empty), the
    document still comes back as written, and nothing was measured."""
    doc: dict[str, Any] = {k.name: junk for k in fields(Sections)}
    doc["ramp"] = {"levels": [{"concurrency": 2, "ttft_s": junk, "requests": junk,
                               "outcomes": {"ok": junk}}, junk],
                   "max_sustained_concurrency": junk}
    doc["connect"] = {"tokens_per_chunk": {"p50": junk}, "ttft_s": junk}
    summary = Summary.from_json(doc)
    assert summary.to_json() == doc
    s = summary.sections
    assert s.connect is not None and s.connect.tokens_per_chunk.p50 in (None, 1.0) \
        and s.connect.ttft_s is None
    assert s.ramp is not None and s.ramp.max_sustained_concurrency is None
    level = s.ramp.level(2)
    assert level is not None and level.ttft_s.p90 is None
    assert level.requests in (None, 0)  # 0: outcomes named, none of them a count
    assert s.validity.status == "unknown" and summary.max_sustained is None
    assert measurements(doc) is not None  # level 2 was named, though nothing in it reads


@pytest.mark.parametrize("doc", [[], "summary", 3, None])
def test_a_document_that_is_no_object_is_refused_by_name(doc: Any) -> None:
    with pytest.raises(ValueError, match=f"not {type(doc).__name__}"):
        Summary.from_json(doc)


def test_a_summary_read_is_not_read_again() -> None:
    """`measurements` of a `Summary` is that Summary (one parse per command)."""
    summary = Summary.from_json(json.loads(FIXTURES[0].read_bytes()))
    assert measurements(summary) is summary
    assert summary["schema"] == "evalkit.summary/1" and len(summary) == len(summary.raw)
