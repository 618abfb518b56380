"""The records file line by line (`evalkit.rundir.store`): every damaged line named, none
trusted."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import RunDirError
from evalkit.records import RequestRecord
from evalkit.rundir import run as rundir_run
from evalkit.rundir.export import requests_frame
from evalkit.rundir.store import (
    MAX_LINE_BYTES,
    RecordScan,
    iter_records,
    parse_record,
    read_records,
)
from tests.rundir.helpers import RUN_DIR, _lines, _page_one, _put_lines, _record, _text

#: Lines that are not request records, each with what the reader says about it.
BAD_LINES = {
    b"[1, 2]": "not a JSON object but list",
    b"null": "not a JSON object but NoneType",
    b'"a string"': "not a JSON object but str",
    b"7": "not a JSON object but int",
    b'{"id": "\xff\xfe"}': "not UTF-8",
    b"{not json": "not JSON",
    b'{"id": "x", "phase": "ramp", "level": 1, "outcome": "ok"}': "no t0_s",
}


BAD_FIELDS = {
    "ttft_s is not a number": _record(ttft_s="fast"),
    "ttft_s -0.5 is a negative duration": _record(ttft_s=-0.5),
    "ttft_s is not a finite number": _record(ttft_s=math.nan),
    "e2e_s 1e+300 is out of range": _record(e2e_s=1e300),
    "level is not a number": _record(level="x"),
    "level is not a whole number": _record(level=1.5),
    "outcome 'weird' is not one of": _record(outcome="weird"),
    "a chunk is not [seconds, tokens]": _record(chunks=[[1]]),
    "chunks is not a list": _record(chunks="abc"),
    "a chunk's time is negative": _record(chunks=[[0.1, 1], [-1, 1]]),
    "a chunk's token count is out of range": _record(chunks=[[0.1, 10**30]]),
    "id is not a string": _record(id=5),
    "phase is not a string": _record(phase=["x"]),
}


class TestRecordLines:
    def test_every_malformed_line_is_skipped_and_counted(self, run_dir: Path) -> None:
        """Lists, nulls, non-UTF-8 bytes, wrong types, NaN, negative durations: each line is
        skipped and counted with its reason; the others are all read."""
        good = _lines(run_dir)
        bad = list(BAD_LINES) + list(BAD_FIELDS.values())
        _put_lines(run_dir, good[:10] + bad + good[10:])
        scan = RecordScan(run_dir / "requests.jsonl")
        recs = list(iter_records(run_dir / "requests.jsonl", scan))
        assert [r.id for r in recs] == [json.loads(line)["id"] for line in good]
        assert scan.malformed == len(bad) and scan.records == len(good)
        assert scan.lines == len(good) + len(bad) and not scan.torn_tail
        assert scan.examples[0] == "line 11: not a JSON object but list"
        for i, line in enumerate(bad):  # each one's own reason
            one = RecordScan(run_dir / "x")
            (run_dir / "one.jsonl").write_bytes(line + b"\n")
            assert list(iter_records(run_dir / "one.jsonl", one)) == []
            reason = (list(BAD_LINES.values()) + list(BAD_FIELDS))[i]
            assert one.examples[0].startswith(f"line 1: {reason}"), (line, one.examples)
        # the strict reader refuses, naming the line: no traceback
        with pytest.raises(RunDirError, match=r"requests.jsonl:11: not a request record"):
            read_records(run_dir / "requests.jsonl")

    def test_the_report_says_how_many_lines_it_skipped(self, run_dir: Path) -> None:
        """The records still agree with the summary; page one and the terminal name the
        skipped lines, the appendix counts them beside the records."""
        good = _lines(run_dir)
        _put_lines(run_dir, [*good[:3], b"[]", b"null", b'{"a": "\xff"}', *good[3:]])
        res = CliRunner().invoke(cli, ["report", "--run", str(run_dir),
                                       "--out", str(run_dir.parent / "card.pdf")])
        assert res.exit_code == 0, res.output
        assert "note: requests.jsonl: 3 of 249 lines are not request records and were " \
               "skipped" in res.stderr
        page = _page_one(run_dir.parent / "card.pdf")
        assert "3 of 249 lines are not request records" in page
        assert "summary.json" not in page  # it agrees with the records: kept as written
        text = _text(run_dir.parent / "card.pdf")
        assert (f"Request records {len(good)} (3 lines of requests.jsonl are not records "
                "and were skipped)") in text

    def test_a_long_line_is_skipped_in_bounded_memory(self, tmp_path: Path) -> None:
        """A line of 8 MiB is skipped ("longer than 1 MiB") without ever being held whole."""
        path = tmp_path / "requests.jsonl"
        good = _lines(RUN_DIR)[0]
        with path.open("wb") as fh:
            fh.write(good + b"\n" + b'{"id": "' + b"x" * (8 << 20) + b'"}\n' + good + b"\n")
        scan = RecordScan(path)
        tracemalloc.start()
        recs = list(iter_records(path, scan))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert len(recs) == 2 and scan.malformed == 1
        assert scan.examples == [f"line 2: longer than {MAX_LINE_BYTES:,} bytes"]
        assert peak < 4 * MAX_LINE_BYTES, peak  # never the 8 MiB line whole
        assert scan.bytes == path.stat().st_size

    def test_a_line_cut_mid_write_is_not_an_error(self, tmp_path: Path) -> None:
        """A kill while a line was written leaves it torn: noted, not counted as malformed,
        not refused even by the strict reader."""
        path = tmp_path / "requests.jsonl"
        good = _lines(RUN_DIR)
        path.write_bytes(b"\n".join(good[:5]) + b"\n" + good[5][:40])
        scan = RecordScan(path)
        assert len(list(iter_records(path, scan))) == 5
        assert scan.torn_tail and scan.malformed == 0
        assert len(read_records(path)) == 5

    def test_hash_is_of_the_bytes_read(self, run_dir: Path) -> None:
        """requests.jsonl's SHA-256 is taken as it is read: the printed hash is of the
        very bytes the figures came from."""
        import hashlib

        run = rundir_run.open_run(run_dir)
        assert run.requests_sha256 == hashlib.sha256(
            (run_dir / "requests.jsonl").read_bytes()).hexdigest()


class TestCountedPrompt:
    """Issue 24: our count of the prompt is kept beside the vendor's prompt_tokens."""

    def test_it_is_read_back_typed_and_bounded(self) -> None:
        rec = parse_record(json.loads(_record(prompt_tokens=768, prompt_tokens_estimated=False,
                                              counted_prompt_tokens=256)))
        assert (rec.prompt_tokens, rec.counted_prompt_tokens) == (768, 256)
        assert parse_record(json.loads(_record())).counted_prompt_tokens is None  # older runs
        for bad, why in (("256", "is not a number"), (2.5, "is not a whole number"),
                         (-1, "out of range"), (10**13, "out of range")):
            with pytest.raises(ValueError, match=f"counted_prompt_tokens .*{why}|"
                                                 f"counted_prompt_tokens {why}"):
                parse_record(json.loads(_record(counted_prompt_tokens=bad)))

    def test_it_survives_the_jsonl_and_parquet(self, tmp_path: Path) -> None:
        rec = RequestRecord(id="a", phase="prefill", level=1, outcome="ok", t0_s=0.0,
                            prompt_tokens=768, prompt_tokens_estimated=False,
                            counted_prompt_tokens=256, chunks=[(0.1, 1)])
        (tmp_path / "requests.jsonl").write_text(rec.to_json() + "\n")
        [back] = read_records(tmp_path / "requests.jsonl")
        assert back == rec
        df = requests_frame([back])
        df.to_parquet(tmp_path / "r.parquet", index=False)
        row = pd.read_parquet(tmp_path / "r.parquet").iloc[0]
        assert str(df["counted_prompt_tokens"].dtype) == "Int64"
        assert (row["prompt_tokens"], row["counted_prompt_tokens"]) == (768, 256)


class TestRateLimitHeaders:
    """Issue 27: a record's rate-limit headers are read back typed and bounded."""

    def test_read_back_and_refused_when_not_short_text(self) -> None:
        heads = {"x-ratelimit-limit-requests": "30", "retry-after": "2"}
        assert parse_record(json.loads(_record(rate_limit_headers=heads))
                            ).rate_limit_headers == heads
        assert parse_record(json.loads(_record())).rate_limit_headers is None  # older runs
        for bad in ("30", {"a": 1}, {f"x{i}": "1" for i in range(17)}, {"a": "9" * 81}):
            with pytest.raises(ValueError, match=r"rate_limit_headers|rate-limit header"):
                parse_record(json.loads(_record(rate_limit_headers=bad)))

    def test_they_survive_parquet_as_json_text(self, tmp_path: Path) -> None:
        rec = RequestRecord(id="a", phase="baseline", level=1, outcome="rejected", t0_s=0.0,
                            http_status=429, rate_limit_headers={"retry-after": "2"})
        requests_frame([rec]).to_parquet(tmp_path / "r.parquet", index=False)
        row = pd.read_parquet(tmp_path / "r.parquet").iloc[0]
        assert json.loads(row["rate_limit_headers"]) == {"retry-after": "2"}
