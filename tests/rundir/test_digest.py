"""The records read in bounded memory (`evalkit.rundir.digest`): a fixed, uniform sample of the
inter-token gaps."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from evalkit.analysis.summarize import summarize
from evalkit.records import RequestRecord
from evalkit.rundir import checked
from evalkit.rundir import run as rundir_run
from evalkit.rundir.digest import ITL_SAMPLE, RecordDigest
from evalkit.rundir.store import read_records
from tests.rundir.helpers import RUN_DIR


class TestBoundedMemory:
    def test_records_are_digested_not_held(self, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
        """Loading a run keeps a bounded digest, not the records: peak memory stays below
        the file's size (the old reader held its text, its lines and every record). That
        is the path of a requests.jsonl over the size whose summary is re-derived whole
        (which holds the records), set here just under this file's."""
        d = Path(shutil.copytree(RUN_DIR, tmp_path / "run"))
        base = read_records(RUN_DIR / "requests.jsonl")
        ramp = [r for r in base if r.phase == "ramp" and r.level == 16]
        records = list(base)
        for k in range(120):
            records += [RequestRecord(**{**r.__dict__, "id": f"{r.id}-{k}",
                                         "t0_s": r.t0_s + 100 * (k + 1)}) for r in ramp]
        with open(d / "requests.jsonl", "w") as fh:
            for r in records:
                fh.write(r.to_json() + "\n")
        summary = summarize(read_records(d / "requests.jsonl"), {"run_status": "complete"})
        (d / "summary.json").write_text(json.dumps(summary))
        size = (d / "requests.jsonl").stat().st_size
        monkeypatch.setattr(checked, "REDERIVE_MAX_BYTES", size - 1)
        tracemalloc.start()
        run = rundir_run.open_run(d)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert run.rebuilt is None, run.rebuilt
        assert run.stats.n == len(records) and run.stats.itl_seen[16] > ITL_SAMPLE
        assert len(run.stats.itl[16]) == ITL_SAMPLE
        assert len(run.stats.raster_streams(16)) == 40
        assert peak < size / 2, (peak, size)
        assert run.notes == (f"requests.jsonl is over {(size - 1) >> 20} MiB: summary.json "
                             "was checked against it on counts, outcomes and TTFT, not "
                             "re-derived whole",)


def test_digest_samples_are_fixed_and_uniform() -> None:
    """The ITL sample is a fixed-seed uniform sample: the same PDF every time."""
    def sampled() -> list[float]:
        d = RecordDigest()
        for i in range(0, 400_000, 40):
            d._sample_itl(2, [float(v) for v in range(i, i + 40)])
        return d.itl[2]

    a, b = sampled(), sampled()
    assert a == b and len(a) == ITL_SAMPLE and len(set(a)) == ITL_SAMPLE
    assert abs(sum(a) / len(a) - 200_000) < 5_000
