"""One `evalkit report` reads summary.json once (issue 42): `open_run` reads it into a
`Summary` and every stage after takes that, where a report used to parse the same
document up to 13 times (reconcile, page one's text, each chart, the comparison)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.analysis.summary import Summary
from evalkit.cli import cli

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / "tests" / "data" / "report_run"
HEADLINE = ROOT / "questionnaires" / "headline.yaml"


def test_a_report_reads_the_summary_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = Summary.from_json.__func__  # type: ignore[attr-defined]
    calls: list[object] = []

    def counted(cls: type[Summary], doc: object) -> Summary:
        calls.append(doc)
        summary: Summary = read(cls, doc)
        return summary

    monkeypatch.setattr(Summary, "from_json", classmethod(counted))
    out = tmp_path / "card.pdf"
    res = CliRunner().invoke(cli, ["report", "--run", str(RUN_DIR), "--questionnaire",
                                   str(HEADLINE), "--out", str(out)])
    assert res.exit_code in (0, 1), res.output  # 1: the sample is built to be flagged
    assert out.is_file() and out.with_suffix(".json").is_file()
    assert len(calls) == 1, f"summary.json read {len(calls)} times by one report"
    assert isinstance(calls[0], dict) and calls[0].get("schema") == "evalkit.summary/1"


def test_the_count_sees_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The counter counts: two readings of the fixture are two."""
    import json
    seen: list[Any] = []
    read = Summary.from_json.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Summary, "from_json",
                        classmethod(lambda cls, doc: seen.append(doc) or read(cls, doc)))
    doc = json.loads((RUN_DIR / "summary.json").read_text())
    Summary.from_json(doc)
    Summary.from_json(doc)
    assert len(seen) == 2
