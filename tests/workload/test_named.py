"""A questionnaire that names the workload its claims hold for: `questionnaire validate`
checks the workload with the questionnaire's own lines, and `probe --questionnaire` plans
and runs it."""

from __future__ import annotations

from pathlib import Path

from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.plan.workloads import describe_lines, with_workload
from evalkit.workload.model import Session
from evalkit.workload.named import questionnaire_workload

HEAD = ("schema: evalkit.questionnaire/1\nvendor: Acme\nmodel: acme-8b\n"
        "Q2: {at_concurrency: 4}\n")
CHAT = """workload:
  name: support-chat
  concurrency: [1, 4]
  units: 8
  shapes:
    - name: chat
      kind: session
      turns: {uniform: [4, 8]}
      system_prompt_tokens: 400
      user_tokens: {lognormal: {median: 60, p90: 200}}
      output_tokens: 150
      think_time_s: 2
"""


def test_a_named_workload_is_read_with_its_source(tmp_path: Path) -> None:
    q = tmp_path / "acme.yaml"
    q.write_text(HEAD + CHAT)
    w = questionnaire_workload(q)
    assert w is not None and w.name == "support-chat" and w.concurrency == (1, 4)
    (shape,) = w.shapes
    assert isinstance(shape, Session) and shape.system_prompt_tokens == 400
    assert (shape.turns.low, shape.turns.high) == (4, 8)
    assert w.source is not None and w.source["name"] == "acme.yaml"
    assert w.source["from"] == "questionnaire" and len(w.source["sha256"]) == 64
    # probe --questionnaire plans it: the workload phase joins the run, its line printed
    config = with_workload(ProbeConfig("http://127.0.0.1:1/v1", "acme-8b", questionnaire=q))
    assert config.workload == w
    assert any(line.startswith("workload support-chat: chat (session, 100%)")
               for line in describe_lines(config))
    from evalkit.probe.plan.runplan import plan_run

    assert "workload" in plan_run(config).settings.phases


def test_no_workload_named_is_none(tmp_path: Path) -> None:
    q = tmp_path / "acme.yaml"
    q.write_text(HEAD)
    assert questionnaire_workload(q) is None
    config = with_workload(ProbeConfig("http://127.0.0.1:1/v1", "m", questionnaire=q))
    assert config.workload is None


def test_a_questionnaires_conversations_file_stays_beside_it(tmp_path: Path) -> None:
    """A vendor's questionnaire naming the buyer's own conversations elsewhere (an
    absolute path, or ../) is refused with its line: the probe would send them to the
    vendor. A file beside the questionnaire is read."""
    import json

    import pytest

    from evalkit.workload.load import WorkloadError

    line = json.dumps({"id": "c1", "messages": [{"role": "user", "content": "hello"}]})
    private = tmp_path / "private"
    private.mkdir()
    (private / "prod.jsonl").write_text(line + "\n")
    folder = tmp_path / "vendor"
    folder.mkdir()
    (folder / "mine.jsonl").write_text(line + "\n")
    shape = ("workload:\n  name: replay\n  units: 4\n  shapes:\n    - name: c\n"
             "      kind: conversations\n      file: {}\n")
    for bad in (str(private / "prod.jsonl"), "../private/prod.jsonl"):
        q = folder / "acme.yaml"
        q.write_text(HEAD + shape.format(json.dumps(bad)))
        with pytest.raises(WorkloadError) as info:
            questionnaire_workload(q)
        said = "\n".join(info.value.problems or [])
        assert "outside this file's folder" in said and "shapes[0].file" in said, said
    q.write_text(HEAD + shape.format("mine.jsonl"))
    w = questionnaire_workload(q)
    assert w is not None and len(w.shapes) == 1
