"""The summary rebuilt from the records (`evalkit.rundir.rederive`)."""

from __future__ import annotations

import json
from pathlib import Path


def test_a_rebuilt_summary_keeps_the_lost_workers() -> None:
    """A Ray worker lost at a level voids its capacity conclusion; the summary rebuilt
    after a kill says so as the probe's own did (the text cleaned, non-text dropped)."""
    from evalkit.rundir.rederive import rebuild_summary
    from evalkit.rundir.store import read_records

    records = read_records(Path(__file__).parent.parent / "data" / "report_run" / "requests.jsonl")
    level = max(r.level or 0 for r in records if r.phase == "ramp")
    check = {"client_bound": True, "client_bound_reasons": ["lost_worker"],
             "lost": ["actor 1 on node b: lost\x1b[2J", {"x": 1}]}
    summary = json.loads(json.dumps(rebuild_summary(
        records, {"status": "interrupted", "client_checks": {"levels": {str(level): check}}},
        "test", None)))
    assert summary["client"]["levels"][str(level)]["lost"] == ["actor 1 on node b: lost [2J"]
    assert any("actor 1 on node b" in r for r in summary["validity"]["reasons"])
