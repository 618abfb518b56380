"""Results where analysts work: requests.parquet and evalkit.load_run, from a real probe."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalkit
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.rundir.store import read_records


def test_a_run_writes_parquet_that_load_run_reads_back(reference: Any, tmp_path: Path) -> None:
    """Every record is a typed row; TTFT and chunk times are the JSONL's to the microsecond."""
    srv = reference("gpu", mode="thread")
    run_probe(ProbeConfig(srv.base_url, srv.model, phases=("connect", "baseline"),
                          overrides={"baseline": {"requests": 4}, "output_tokens": 8}),
              tmp_path / "run")
    assert (tmp_path / "run" / "requests.parquet").is_file()
    records = read_records(tmp_path / "run" / "requests.jsonl")
    df = evalkit.load_run(tmp_path / "run")
    assert list(df["id"]) == [r.id for r in records]
    assert df["level"].dtype == "Int64" and df["outcome"].dtype == "string"
    for (_, row), rec in zip(df.iterrows(), records, strict=True):
        assert row["ttft_s"] == pytest.approx(rec.ttft_s, abs=1e-6)
        assert list(row["chunk_s"]) == pytest.approx([t for t, _ in rec.chunks], abs=1e-6)
        assert list(row["chunk_tokens"]) == [n for _, n in rec.chunks]
    ok = df[df["outcome"] == "ok"]
    assert (ok["tpot_s"] > 0).all() and not ok["output_tokens_estimated"].any()


def test_a_stale_parquet_is_not_trusted(reference: Any, tmp_path: Path) -> None:
    """Records appended after the Parquet was written (a cut run): read from the JSONL."""
    srv = reference("gpu", mode="thread")
    run = tmp_path / "run"
    run_probe(ProbeConfig(srv.base_url, srv.model, phases=("connect",)), run)
    jsonl = run / "requests.jsonl"
    line = jsonl.read_text().splitlines()[0]
    jsonl.write_text(jsonl.read_text() + line.replace('"phase":"connect"',
                                                      '"phase":"baseline"') + "\n")
    later = time.time() + 5
    os.utime(jsonl, (later, later))
    df = evalkit.load_run(run)
    assert list(df["phase"]) == ["connect", "baseline"]
    assert isinstance(pd.read_parquet(run / "requests.parquet"), pd.DataFrame)
