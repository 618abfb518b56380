"""A run is decided once (`plan_run`) and what was decided is what runs.

The CLI prints the plan and then hands that same object to `run_probe`: before, run_probe
planned again from the files, so a questionnaire edited (or removed) between the printout
and the first request gave a run other than the one printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.errors import EndpointError
from evalkit.probe.plan.prompttext import PromptText
from evalkit.probe.plan.runplan import plan_run
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe

CLAIMS = """schema: evalkit.questionnaire/1
Q1: {ttft_p50_ms: 300, ttft_p90_ms: 900, at_concurrency: 24, prompt_tokens: 512,
     source: production}
Q4: {max_concurrent_streams_per_node: 48, first_degrades: itl, source: lab}
"""


def test_the_run_is_the_plan_that_was_printed(tmp_path: Path) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(CLAIMS)
    planned = plan_run(ProbeConfig("http://127.0.0.1:9/v1", "m", questionnaire=path,
                                   phases=("connect", "ramp")))
    assert planned.plan is not None and 24 in planned.settings.ramp.levels
    assert isinstance(planned.config.prompt_text, PromptText)  # the text chosen once
    path.unlink()  # gone after the printout: the run must not read it again
    out = tmp_path / "run"
    with pytest.raises(EndpointError):  # nothing listens on port 9: connect fails
        run_probe(planned, out)
    meta = json.loads((out / "run.json").read_text())
    assert meta["settings"]["ramp"]["levels"] == list(planned.settings.ramp.levels)
    assert meta["plan"]["levels"] == list(planned.plan.levels)
    assert meta["prompt_text"]["source"] == planned.config.prompt_text.source


def test_a_config_alone_is_planned_by_run_probe(tmp_path: Path) -> None:
    """A notebook may hand run_probe a config: it is planned there (and a file it names
    that is missing fails before a run directory exists)."""
    with pytest.raises(Exception, match=r"acme\.yaml"):
        run_probe(ProbeConfig("http://127.0.0.1:9/v1", "m",
                              questionnaire=tmp_path / "acme.yaml"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("api", "variable"), [
    ("openai-chat", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY"),
    ("anthropic-messages", "ANTHROPIC_API_KEY")])
def test_each_api_reads_its_own_key_unless_told(api: str, variable: str,
                                                tmp_path: Path) -> None:
    """A notebook's config, like the CLI, sends an API the key of its own variable: with
    one default for all, a buyer's OPENAI_API_KEY went to Google and to Anthropic."""
    for given, expected in (("", variable), ("MINE", "MINE")):
        out = tmp_path / f"{api}-{given}"
        with pytest.raises(EndpointError):  # nothing listens on port 9
            run_probe(ProbeConfig("http://127.0.0.1:9/v1", "m", api=api, api_key_env=given,
                                  phases=("connect",)), out)
        assert json.loads((out / "run.json").read_text())["api_key_env"] == expected
