"""requests.jsonl is evidence, checked as such (issue 26): a genuine run probed against
the reference endpoint, tampered one way per case, is never a traceback, never `valid`,
and its validity reasons (and page one) name the problem and its line; the records that
are no evidence are kept out of the figures."""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer
from evalkit.render.page import build_page
from evalkit.render.pagetext import key_figures, validity_text
from evalkit.review.pipeline import review
from evalkit.rundir.evidence import (
    DUPLICATE_ID,
    FOREIGN,
    IMPOSSIBLE_TIMING,
    NOT_A_RECORD,
    UNPLANNED_LEVEL,
    RecordCheck,
    check_evidence,
    timing_problem,
)
from evalkit.rundir.run import open_run
from tests.rundir.helpers import RUN_DIR, _page_one, _text

#: a small genuine run: a stream, four baseline requests, ramp levels 1 and 2 for a second
#: (8 requests a level at least, not the quick profile's 36: no level's interval is read)
PROBE = {"output_tokens": 6, "baseline": {"requests": 4},
         "ramp": {"levels": [1, 2], "level_duration_s": 0.6, "level_min_requests": 8}}

Lines = list[bytes]


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """Two genuine runs of one reference endpoint (the second's records to append)."""
    base = tmp_path_factory.mktemp("genuine")
    with ReferenceServer("gpu", {"request_overhead_ms": 2, "decode_base_ms": 4},
                         truth_log=base / "truth.jsonl", mode="thread") as srv:
        for name in ("run1", "run2"):
            run_probe(ProbeConfig(srv.base_url, srv.model, overrides=PROBE,
                                  phases=("connect", "baseline", "ramp")), base / name)
    yield base / "run1", base / "run2"


def _copy(src: Path, dst: Path) -> Path:
    return Path(shutil.copytree(src, dst))


def _edit(i: int, **over: Any) -> Callable[[Lines], Lines]:
    """Set fields of the record on line i+1 (raw JSON values: NaN, huge ints, strings)."""
    def edit(lines: Lines) -> Lines:
        d = json.loads(lines[i])
        d.update(over)
        lines[i] = json.dumps(d).encode()
        return lines
    return edit


def _drop(i: int, key: str) -> Callable[[Lines], Lines]:
    def edit(lines: Lines) -> Lines:
        d = json.loads(lines[i])
        del d[key]
        lines[i] = json.dumps(d).encode()
        return lines
    return edit


def _raw(i: int, old: bytes, new: bytes) -> Callable[[Lines], Lines]:
    def edit(lines: Lines) -> Lines:
        assert old in lines[i]
        lines[i] = lines[i].replace(old, new, 1)
        return lines
    return edit


def _insert(i: int, line: bytes) -> Callable[[Lines], Lines]:
    return lambda lines: [*lines[:i], line, *lines[i:]]


def _ramp_line(lines: Lines, level: int = 2) -> int:
    """The index of the first ok ramp record of a level."""
    return next(i for i, ln in enumerate(lines) if b'"phase":"ramp"' in ln
                and f'"level":{level},'.encode() in ln and b'"outcome":"ok"' in ln)


def _with_chunks(i: int, fn: Callable[[list[list[float]]], list[list[float]]],
                 **over: Any) -> Callable[[Lines], Lines]:
    def edit(lines: Lines) -> Lines:
        d = json.loads(lines[i])
        d["chunks"] = fn(d["chunks"])
        d.update(over)
        lines[i] = json.dumps(d).encode()
        return lines
    return edit


def _tamperings(lines: Lines, other: Lines) -> dict[str, tuple[Callable[[Lines], Lines],
                                                              str, int | None, int]]:
    """name -> (damage, the kind it is, the line named (None: several), records lost).

    Records lost: how many genuine records the damage keeps out of the figures."""
    r = _ramp_line(lines)
    n = len(lines)
    big = b'{"id": "' + b"x" * (50 << 20) + b'"}'
    rid = json.loads(lines[0])["id"]
    return {
        "level 0": (_edit(r, level=0), UNPLANNED_LEVEL, r + 1, 1),
        'level "4"': (_edit(r, level="4"), NOT_A_RECORD, r + 1, 1),
        "level -1": (_edit(r, level=-1), NOT_A_RECORD, r + 1, 1),
        "a level the plan never had": (_edit(r, level=3), UNPLANNED_LEVEL, r + 1, 1),
        "a baseline at level 2": (_edit(1, level=2), UNPLANNED_LEVEL, 2, 1),
        "every id the first's": (lambda ls: [_set_id(ln, rid) for ln in ls], DUPLICATE_ID,
                                 None, n - 1),
        "a record copied to the end": (lambda ls: [*ls, ls[3]], DUPLICATE_ID, n + 1, 0),
        "another run's records appended": (lambda ls: [*ls, *other], FOREIGN, n + 1, 0),
        "a record of another run id": (_edit(4, run_id="0ther1"), FOREIGN, 5, 1),
        "a record with no run id": (_drop(4, "run_id"), FOREIGN, 5, 1),
        "broken JSON mid-file": (lambda ls: [*ls[:r], ls[r][:40], *ls[r + 1:]], NOT_A_RECORD,
                                 r + 1, 1),
        "a null line": (_insert(3, b"null"), NOT_A_RECORD, 4, 0),
        "a [] line": (_insert(3, b"[]"), NOT_A_RECORD, 4, 0),
        "a {} line": (_insert(3, b"{}"), NOT_A_RECORD, 4, 0),
        "bytes that are no text": (_insert(3, b"\xff\xfe\x00"), NOT_A_RECORD, 4, 0),
        "a 50 MB line at line 11": (_insert(10, big), NOT_A_RECORD, 11, 0),
        "a deeply nested line": (_insert(3, b"[" * 100_000), NOT_A_RECORD, 4, 0),
        "ttft 10x e2e": (_copy_field(r, "ttft_s", 10), IMPOSSIBLE_TIMING, r + 1, 1),
        "chunks reversed": (_with_chunks(r, lambda c: c[::-1]), IMPOSSIBLE_TIMING, r + 1, 1),
        "a negative chunk time": (_with_chunks(r, lambda c: [[-1.0, 1], *c[1:]]),
                                  NOT_A_RECORD, r + 1, 1),
        "an end before the last chunk": (_with_chunks(r, lambda c: c, end_s=0.0),
                                         IMPOSSIBLE_TIMING, r + 1, 1),
        "e2e before the last chunk": (_with_chunks(r, lambda c: c, e2e_s=0.0),
                                      IMPOSSIBLE_TIMING, r + 1, 1),
        "a ttft that is not the first chunk": (
            _with_chunks(r, lambda c: [[c[0][0] + 0.5, c[0][1]], *c[1:]]),
            IMPOSSIBLE_TIMING, r + 1, 1),
        "a NaN TTFT": (_raw(r, b'"ttft_s":', b'"ttft_s":NaN,"x":'), NOT_A_RECORD, r + 1, 1),
        "an infinite e2e": (_raw(r, b'"e2e_s":', b'"e2e_s":Infinity,"x":'), NOT_A_RECORD,
                            r + 1, 1),
        "a t0 of 400 digits": (_raw(r, b'"t0_s":', b'"t0_s":' + b"9" * 400 + b',"x":'),
                               NOT_A_RECORD, r + 1, 1),
        "a t0 of 5,000 digits": (_raw(r, b'"t0_s":', b'"t0_s":' + b"9" * 5000 + b',"x":'),
                                 NOT_A_RECORD, r + 1, 1),
        "tokens of 30 digits": (_edit(r, output_tokens=10**30), NOT_A_RECORD, r + 1, 1),
        "a t0 that is text": (_edit(r, t0_s="0.5"), NOT_A_RECORD, r + 1, 1),
        "a chunk that is text": (_with_chunks(r, lambda c: [["0.1", 1], *c[1:]]),
                                 NOT_A_RECORD, r + 1, 1),
        "no outcome": (_drop(r, "outcome"), NOT_A_RECORD, r + 1, 1),
        "no id": (_drop(r, "id"), NOT_A_RECORD, r + 1, 1),
        "an outcome that is not one": (_edit(r, outcome="great"), NOT_A_RECORD, r + 1, 1),
    }


def _set_id(line: bytes, rid: str) -> bytes:
    d = json.loads(line)
    d["id"] = rid
    return json.dumps(d).encode()


def _copy_field(i: int, key: str, times: float) -> Callable[[Lines], Lines]:
    def edit(lines: Lines) -> Lines:
        d = json.loads(lines[i])
        d[key] = d["e2e_s"] * times
        lines[i] = json.dumps(d).encode()
        return lines
    return edit


def _names(reasons: list[str], kind: str, line: int | None) -> bool:
    words = {NOT_A_RECORD: "not a request record", FOREIGN: "another run's",
             DUPLICATE_ID: "an earlier record's id", UNPLANNED_LEVEL: "concurrency the run "
             "never had", IMPOSSIBLE_TIMING: "timings that cannot be"}[kind]
    for r in reasons:
        if words in r and (line is None or re.search(rf"\(lines? (\d+, )*{line}\b", r)):
            return True
    return False


def test_a_genuine_run_is_evidence(genuine: tuple[Path, Path]) -> None:
    """The untampered run: every record carries run.json's id, nothing is found, and the
    run is as valid as the probe said."""
    run1, run2 = genuine
    meta = json.loads((run1 / "run.json").read_text())
    lines = (run1 / "requests.jsonl").read_bytes().splitlines()
    assert len(lines) >= 8
    assert {json.loads(ln)["run_id"] for ln in lines} == {meta["run_id"]}
    assert meta["run_id"] != json.loads((run2 / "run.json").read_text())["run_id"]
    run = open_run(run1)
    assert run.evidence is not None and run.evidence.total == 0, run.evidence.to_json()
    assert run.evidence.records == len(lines) == run.summary["requests"]
    written = json.loads((run1 / "summary.json").read_text())
    assert run.summary["validity"] == written["validity"]
    assert run.rebuilt is None and not any("run id" in n for n in run.notes)


def test_every_tampering_is_named_and_kept_out(genuine: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    """Each damage, read and reviewed to page one's words (no PDF): no exception, the run
    not valid, a validity reason naming the kind of damage and its line, page one's
    validity line naming it too, and the figures drawn on the genuine records left."""
    run1, run2 = genuine
    lines = (run1 / "requests.jsonl").read_bytes().splitlines()
    other = (run2 / "requests.jsonl").read_bytes().splitlines()
    failed = []
    for i, (name, (damage, kind, line, lost)) in enumerate(
            _tamperings(lines, other).items()):
        d = _copy(run1, tmp_path / f"t{i}")
        (d / "requests.jsonl").write_bytes(b"\n".join(damage(list(lines))) + b"\n")
        run = open_run(d)
        done = review(d, None, run=run)
        page = validity_text(done.card.run)
        key_figures(run.summary)  # page one's figures in words
        if i == 0:  # the whole page's context once (its charts take seconds)
            build_page(done.card, done.run, {})
        validity = run.summary["validity"]
        reasons = validity["reasons"]
        problems = []
        if validity["status"] == "valid" or ("DEGRADED" not in page and "INVALID" not in page):
            problems.append(f"status {validity['status']}: {page}")
        if not _names(reasons, kind, line):
            problems.append(f"no reason names {kind} at line {line}: {reasons[:3]}")
        if not _names([page], kind, line):
            problems.append(f"page one does not name it: {page}")
        if run.summary["requests"] != len(lines) - lost:
            problems.append(f"{run.summary['requests']} requests in the figures, "
                            f"{len(lines) - lost} genuine")
        if problems:
            failed.append((name, problems))
    assert not failed, failed


def test_the_report_names_the_damage_on_page_one(genuine: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    """`evalkit report` on two tampered copies: exit 0, no traceback, page one says the
    run is degraded and names the lines; the page's figures count the genuine records."""
    run1, run2 = genuine
    lines = (run1 / "requests.jsonl").read_bytes().splitlines()
    other = (run2 / "requests.jsonl").read_bytes().splitlines()
    r = _ramp_line(lines)
    zero = json.loads(lines[r])
    zero["level"] = 0
    cases = {"level0": [*lines[:r], json.dumps(zero).encode(), *lines[r + 1:]],
             "appended": [*lines, *other]}
    for name, damaged in cases.items():
        d = _copy(run1, tmp_path / name)
        (d / "requests.jsonl").write_bytes(b"\n".join(damaged) + b"\n")
        pdf = tmp_path / f"{name}.pdf"
        res = CliRunner().invoke(cli, ["report", "--run", str(d), "--out", str(pdf)])
        assert res.exit_code == 0 and res.exception is None, (name, res.output)
        page = _page_one(pdf)
        assert "DEGRADED" in page, page[:600]
        if name == "level0":
            assert f"at a concurrency the run never had (line {r + 1})" in page, page[:900]
        else:
            assert (f"{len(other)} records are another run's (its run id is not this "
                    f"run's) (lines {len(lines) + 1}, ") in page, page[:900]
        card = json.loads(pdf.with_suffix(".json").read_text())
        assert card["run"]["validity"] == "degraded"
        left = "1 record is" if name == "level0" else f"{len(other)} records are"
        assert (f"Request records {len(lines) - 1 if name == 'level0' else len(lines)} "
                f"({left} no evidence of this run and were left out of every "
                "figure)") in _text(pdf)


def test_a_run_from_an_older_suite_is_read_and_named(tmp_path: Path) -> None:
    """Records without a run id (the suite before this one): read, said, not degraded."""
    d = _copy(RUN_DIR, tmp_path / "old")
    meta = json.loads((d / "run.json").read_text())
    del meta["run_id"]
    (d / "run.json").write_text(json.dumps(meta))
    out = []
    for line in (d / "requests.jsonl").read_bytes().splitlines():
        rec = json.loads(line)
        del rec["run_id"]
        out.append(json.dumps(rec).encode())
    (d / "requests.jsonl").write_bytes(b"\n".join(out) + b"\n")
    run = open_run(d)
    assert run.summary["validity"]["status"] == "valid"
    assert run.rebuilt is None
    assert ("requests.jsonl: records carry no run id (written by an older suite): a record "
            "appended from another run cannot be told apart") in run.notes


def _record(**over: Any) -> RequestRecord:
    base: dict[str, Any] = dict(id="a", phase="ramp", level=2, outcome="ok", t0_s=1.0,
                                ttft_s=0.1, e2e_s=0.3, end_s=0.31,
                                chunks=[(0.1, 1), (0.2, 1), (0.3, 1)], sent_s=0.0)
    base.update(over)
    return RequestRecord(**base)


def test_timings_that_can_be_and_cannot() -> None:
    """Hand-made records: the limits of each timing rule, and the tolerance of a clock
    that stamps some reads a few microseconds late."""
    assert timing_problem(_record()) is None
    assert timing_problem(_record(chunks=[(0.1, 1), (0.2, 1), (0.1995, 1)],
                                  e2e_s=0.1995)) is None  # 0.5 ms back: a stamp's jitter
    assert "out of order" in str(timing_problem(_record(chunks=[(0.1, 1), (0.3, 1),
                                                                (0.2, 1)])))
    assert "not its first chunk" in str(timing_problem(_record(ttft_s=0.1 + 2e-6)))
    assert timing_problem(_record(ttft_s=0.1 + 5e-7)) is None  # chunks round to 1e-7 s
    assert "after the stream's end" in str(timing_problem(_record(chunks=[], ttft_s=0.5)))
    assert "before its last chunk" in str(timing_problem(_record(end_s=0.25)))
    assert "before its last chunk" in str(timing_problem(_record(e2e_s=0.25)))
    assert "before the first token" in str(timing_problem(_record(ttfa_s=0.05)))
    assert "before the request was sent" in str(timing_problem(_record(sent_s=0.2)))
    # a failed request with no chunks and only an end is a possible record
    assert timing_problem(_record(outcome="rejected", chunks=[], ttft_s=None, e2e_s=None,
                                  end_s=0.004)) is None


def test_the_check_is_pure_and_bounded() -> None:
    """`check_evidence` on bytes in memory (as `verify` holds an attachment) finds what
    `open_run` finds; every finding is counted, a bounded number kept whole."""
    lines = (RUN_DIR / "requests.jsonl").read_bytes().splitlines()
    run = json.loads((RUN_DIR / "run.json").read_text())
    clean = check_evidence(b"\n".join(lines) + b"\n", run)
    assert clean.total == 0 and clean.records == len(lines) and clean.run_id == "f1c7e0"
    many = check_evidence(b"\n".join(lines * 6) + b"\n", run)
    assert many.counts == {DUPLICATE_ID: 5 * len(lines)}
    assert len(many.findings) == 1_000 and many.to_json()["truncated"] is True
    assert many.findings[0].to_json() == {
        "kind": DUPLICATE_ID, "line": len(lines) + 1, "record_id": "b-0",
        "message": f"line {len(lines) + 1}: id 'b-0' is line 1's too"}
    assert many.reasons() == [
        f"requests.jsonl: {5 * len(lines):,} records repeat an earlier record's id (lines "
        f"{', '.join(str(len(lines) + k) for k in range(1, 6))}, …): kept out of every "
        "figure"]


def test_levels_are_checked_against_the_plan() -> None:
    """With run.json's settings, a ramp level must be one of them, the soak's its own or
    a ramp level, a serial phase's 1; without them only a level no run has is found."""
    planned = RecordCheck({"settings": {"ramp": {"levels": [1, 2, 4]},
                                        "soak": {"concurrency": 3}}})
    unplanned = RecordCheck({})
    cases = [(_record(id="1", level=4), True, True),
             (_record(id="2", level=8), False, True),
             (_record(id="3", phase="soak", level=3), True, True),
             (_record(id="4", phase="soak", level=5), False, True),
             (_record(id="4b", phase="soak", level=1), True, True),  # a soak with no ramp
             (_record(id="5", phase="baseline", level=2), False, True),
             (_record(id="6", phase="rate", level=None), True, True),
             (_record(id="7", level=0), False, False),
             (_record(id="8", level=10**8), False, False)]
    for rec, with_plan, without in cases:
        assert planned.record(1, rec) is with_plan, rec
        assert unplanned.record(1, rec) is without, rec
    assert math.isclose(planned.counts[UNPLANNED_LEVEL], 5)
