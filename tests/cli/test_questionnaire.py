"""`evalkit questionnaire init` and `validate`: the blank questionnaire
(`evalkit.questionnaire.template`) written and checked, and a questionnaire's workload
problems named by its own lines (moved from tests/questionnaire/test_template.py, all of
whose tests run the command, and tests/workload/test_named.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.questionnaire.template import TEMPLATE
from tests.questionnaire.helpers import HEAD, SAMPLES
from tests.workload.test_named import CHAT
from tests.workload.test_named import HEAD as ACME_HEAD


class TestCli:
    def test_init_then_validate_round_trips(self, tmp_path: Path) -> None:
        """The template init writes is valid as it stands."""
        runner = CliRunner()
        path = tmp_path / "acme.yaml"
        result = runner.invoke(cli, ["questionnaire", "init", str(path)])
        assert (result.exit_code, result.stdout) == (0, f"{path}\n")
        assert path.read_bytes() == TEMPLATE.encode()
        result = runner.invoke(cli, ["questionnaire", "validate", str(path)])
        assert result.exit_code == 0
        assert result.stdout == (f"{path}: valid evalkit.questionnaire/1 "
                                 "(0 of 6 questions filled in).\n")

    def test_init_refuses_to_overwrite(self, tmp_path: Path) -> None:
        """A vendor's answers are never overwritten by a blank template."""
        path = tmp_path / "acme.yaml"
        path.write_text("mine")
        result = CliRunner().invoke(cli, ["questionnaire", "init", str(path)])
        assert result.exit_code == 2
        assert result.stderr == f"Error: {path}: already exists; not overwriting it\n"
        assert path.read_text() == "mine"

    def test_validate_sample_lists_filled_questions(self) -> None:
        """A valid file reports which questions were filled in."""
        path = SAMPLES / "evasive.yaml"
        result = CliRunner().invoke(cli, ["questionnaire", "validate", str(path)])
        assert result.exit_code == 0
        assert result.stdout == (f"{path}: valid evalkit.questionnaire/1 (5 of 6 questions "
                                 "filled in: Q1, Q2, Q3, Q5, Q6).\n")

    def test_broken_file_exit_2_with_every_problem(self, tmp_path: Path) -> None:
        """Every problem is printed with file:line: field, and the exit code is 2."""
        path = tmp_path / "bad.yaml"
        path.write_text(HEAD + "Q1:\n  ttft_p90_ms: fast\n  source: lab\nQ4:\n"
                               "  max_concurrent_streams_per_node: many\n  colour: red\n")
        result = CliRunner().invoke(cli, ["questionnaire", "validate", str(path)])
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            f"Error: {path}: 3 problems in the questionnaire\n"
            f"  {path}:3: Q1.ttft_p90_ms: expected a number, got 'fast'\n"
            f"  {path}:6: Q4.max_concurrent_streams_per_node: expected a whole number, "
            "got 'many'\n"
            f"  {path}:7: Q4.colour: unknown field\n")

    def test_missing_file_is_a_clear_error(self, tmp_path: Path) -> None:
        """A path that does not exist gives exit 2 and says so."""
        path = tmp_path / "nope.yaml"
        result = CliRunner().invoke(cli, ["questionnaire", "validate", str(path)])
        assert result.exit_code == 2
        assert result.stderr == f"Error: {path}: cannot read: No such file or directory\n"


def test_validate_names_the_questionnaires_lines(tmp_path: Path) -> None:
    q = tmp_path / "acme.yaml"
    bad = CHAT.replace("turns: {uniform: [4, 8]}", "turns: {uniform: [8, 4]}").replace(
        "think_time_s: 2", "think_time_s: 2\n      thinking: yes")
    q.write_text(ACME_HEAD + bad)
    res = CliRunner().invoke(cli, ["questionnaire", "validate", str(q)])
    assert res.exit_code == 2, res.output
    lines = ACME_HEAD.count("\n")
    turns_line = lines + bad.splitlines().index("      turns: {uniform: [8, 4]}") + 1
    extra_line = lines + bad.splitlines().index("      thinking: yes") + 1
    assert f"acme.yaml:{turns_line}: workload.shapes[0].turns" in res.output
    assert f"acme.yaml:{extra_line}: workload.shapes[0].thinking" in res.output
    q.write_text(ACME_HEAD + CHAT)
    ok = CliRunner().invoke(cli, ["questionnaire", "validate", str(q)])
    assert ok.exit_code == 0 and "names the workload 'support-chat' (1 shape)" in ok.output
