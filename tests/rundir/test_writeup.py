"""A run written up whatever ended it (`evalkit.rundir.writeup`): each step that fails
says so in run.json and costs nothing else."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evalkit.rundir.store import RunStore
from evalkit.rundir.writeup import RunEnd, write_up
from tests.analysis.helpers import closed_loop


class _BrokenVendor:
    shown_url = "http://vendor.example/metrics"

    def summary(self, records: Sequence[Any]) -> dict[str, Any]:
        raise RuntimeError("a counter went backwards")


def _store(tmp_path: Path) -> RunStore:
    store = RunStore(tmp_path / "run", {"status": "running", "clock": {"origin_ns": 1}})
    for rec in closed_loop("ramp", 2, 3):
        store.append(rec)
    return store


def test_a_run_is_written_up_with_its_end(tmp_path: Path) -> None:
    store = _store(tmp_path)
    summary = write_up(store, RunEnd("interrupted", None, summary_meta={},
                                     run_meta={"connect": {"ok": True}},
                                     vendor=_BrokenVendor()))
    meta = json.loads((store.dir / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["requests"] == 6
    assert meta["connect"] == {"ok": True} and meta["ended_at"]
    on_disk = json.loads((store.dir / "summary.json").read_text())
    # handed back typed, read from the very document written (its keys in their order)
    assert summary is not None and summary.sections.run_status == "interrupted"
    assert list(summary.to_json().items()) == list(on_disk.items())
    assert on_disk["run_status"] == "interrupted"
    assert on_disk["ramp"]["levels"][0]["requests"] == 6
    # the vendor's page failed: said in the summary, which is still written
    assert on_disk["vendor_metrics"] == {"url": _BrokenVendor.shown_url,
                                         "error": "RuntimeError: a counter went backwards"}
    assert len(pd.read_parquet(store.dir / "requests.parquet")) == 6


def test_a_summary_that_cannot_be_made_is_said_and_a_complete_run_raises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.analysis import summarize

    def broken(*_args: Any) -> Any:
        raise ValueError("no such level")

    monkeypatch.setattr(summarize, "summarize", broken)
    store = _store(tmp_path)
    assert write_up(store, RunEnd("crashed", "boom", summary_meta={})) is None
    meta = json.loads((store.dir / "run.json").read_text())
    assert meta["status"] == "crashed" and meta["error"] == "boom"
    assert meta["summary_error"] == "ValueError: no such level"
    assert not (store.dir / "summary.json").exists()
    assert (store.dir / "requests.parquet").exists()  # the rest still written
    # a run that says it completed must not end without its summary
    with pytest.raises(ValueError, match="no such level"):
        write_up(_store(tmp_path / "again"), RunEnd("complete", None, summary_meta={}))
