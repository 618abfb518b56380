"""The questionnaire: samples, schema, line-numbered problems, hostile input, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.cli import cli
from evalkit.errors import QuestionnaireError
from evalkit.questionnaire import (
    MAX_BYTES,
    SCHEMA,
    TEMPLATE,
    Questionnaire,
    load_questionnaire,
    parse_questionnaire,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "questionnaires"
HEAD = "schema: evalkit.questionnaire/1\n"


def problems_of(text: str | bytes, name: str = "q.yaml") -> list[str]:
    """The problem lines a document raises (fails the test if it is valid)."""
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(QuestionnaireError) as info:
        parse_questionnaire(raw, name)
    return info.value.problems or [str(info.value)]


LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.just(10**40),
                  st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                  st.dates())
FIELD = st.sampled_from(["ttft_p50_ms", "ttft_p90_ms", "at_concurrency", "source", "gpus",
                          "distribution", "evidence", "p50", "window", "first_degrades",
                          "observability", "reconciliation", "bogus"])
TREE = st.recursive(LEAF, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(FIELD, kids, max_size=4)), max_leaves=12)


class TestSamples:
    def test_forthright_reads_every_field_with_units(self) -> None:
        """The forthright sample becomes an object the report can read field by field."""
        q = load_questionnaire(SAMPLES / "forthright.yaml")
        assert q.vendor == "Steadystream Inference"
        assert q.date == "2026-11-23"
        assert q.headline.value == 70
        assert (q.q1.ttft_p50_ms, q.q1.ttft_p90_ms, q.q1.at_concurrency) == (200, 250, 4)
        assert q.q2.distribution is not None and q.q2.distribution.p99 == 140
        assert q.q4.first_degrades == "itl"
        assert q.q6.output_tokens_per_s is not None and q.q6.output_tokens_per_s.p50 == 40
        assert q.path == str(SAMPLES / "forthright.yaml")

    def test_headline_sample_carries_the_public_figures(self) -> None:
        """1,107 headline vs panel 170/520/767 tokens/s and latency 1.3/8.4 s, no reconciliation."""
        q = load_questionnaire(SAMPLES / "headline.yaml")
        assert q.headline.value == 1107
        panel, latency = q.q6.output_tokens_per_s, q.q6.latency_s
        assert panel is not None and (panel.p50, panel.p90, panel.p99) == (170, 520, 767)
        assert latency is not None and (latency.p50, latency.p90) == (1.3, 8.4)
        assert q.q6.reconciliation is None

    def test_evasive_sample_is_valid_but_says_little(self) -> None:
        """The evasive vendor's file validates; its answers are words, blended price, lab TTFT."""
        q = load_questionnaire(SAMPLES / "evasive.yaml")
        assert q.q1.source == "lab" and q.q1.at_concurrency == 1
        assert q.q2.output_tokens_per_s_per_gpu is None
        assert "Industry-leading" in (q.q2.notes or "")
        assert q.q3.blended_price_per_mtok == 0.9 and q.q3.input_price_per_mtok is None
        assert q.q4.to_dict() == {}

    def test_shipped_schema_file_is_the_schema_in_code(self) -> None:
        """Vendors validate in their editor against the same schema evalkit enforces."""
        shipped = json.loads((SAMPLES / "questionnaire.schema.json").read_text())
        assert shipped == SCHEMA

    @pytest.mark.parametrize("name", ["forthright", "evasive", "headline"])
    def test_samples_pass_the_shipped_schema_in_a_plain_validator(self, name: str) -> None:
        """A vendor's editor (plain yaml + jsonschema) accepts the samples too."""
        shipped = json.loads((SAMPLES / "questionnaire.schema.json").read_text())
        data = yaml.safe_load((SAMPLES / f"{name}.yaml").read_text())
        data["date"] = str(data["date"])
        for section in ("headline",):
            if isinstance(data.get(section), dict) and "published" in data[section]:
                data[section]["published"] = str(data[section]["published"])
        jsonschema.Draft202012Validator(shipped).validate(data)

    def test_template_is_valid_and_empty(self) -> None:
        """The init template validates and answers nothing."""
        q = parse_questionnaire(TEMPLATE.encode(), "t.yaml")
        assert (q.vendor, q.headline.value, q.path) == (None, None, "t.yaml")
        assert [qid for qid, a in q.questions.items() if a.to_dict()] == []


class TestProblems:
    def test_every_problem_at_once_with_file_line_and_field(self) -> None:
        """One error lists each problem in line order, each naming file, line and field."""
        text = (HEAD +
                "vendor: Acme\n"
                "Q1:\n"
                "  ttft_p90_ms: fast\n"
                "  at_concurency: 8\n"
                "  source: prod\n"
                "Q2:\n"
                "  gpus: 1.5\n"
                "  distribution: {p50: -3}\n"
                "  evidence: [https://x.example, 7]\n"
                "Q4:\n"
                "  first_degrades: memory\n"
                "Q7: {}\n")
        assert problems_of(text, "acme.yaml") == [
            "acme.yaml:4: Q1.ttft_p90_ms: expected a number, got 'fast'",
            "acme.yaml:5: Q1.at_concurency: unknown field",
            "acme.yaml:6: Q1.source: expected one of production, lab, estimate; got 'prod'",
            "acme.yaml:8: Q2.gpus: expected a whole number, got 1.5",
            "acme.yaml:9: Q2.distribution.p50: must be greater than 0, got -3",
            "acme.yaml:10: Q2.evidence[1]: expected text, got 7",
            "acme.yaml:12: Q4.first_degrades: expected one of itl, ttft, admission; got 'memory'",
            "acme.yaml:13: Q7: unknown field",
        ]

    def test_summary_message_counts_problems(self) -> None:
        """The one-line error says how many problems follow."""
        with pytest.raises(QuestionnaireError, match=r"^q.yaml: 2 problems in the questionnaire$"):
            parse_questionnaire(b"schema: nope\nQ1: 3\n", "q.yaml")

    def test_missing_schema_and_wrong_section_type(self) -> None:
        """A missing schema line and a section that is not a mapping are both reported."""
        assert problems_of("vendor: A\nQ3: [1, 2]\n") == [
            "q.yaml:1: schema: required field missing",
            "q.yaml:2: Q3: expected a mapping, got a list",
        ]

    def test_duplicate_field_is_a_problem_not_a_silent_override(self) -> None:
        """YAML would keep the last of two keys; a reviewer must see both were given."""
        assert problems_of(HEAD + "Q1:\n  ttft_p90_ms: 100\n  ttft_p90_ms: 900\n") == [
            "q.yaml:4: Q1.ttft_p90_ms: appears twice",
        ]

    def test_non_finite_number_is_rejected(self) -> None:
        """.nan is not a measured number."""
        assert problems_of(HEAD + "Q1:\n  ttft_p90_ms: .nan\n") == [
            "q.yaml:3: Q1.ttft_p90_ms: expected a finite number, got '.nan'",
        ]

    def test_yaml_syntax_error_names_the_line(self) -> None:
        """Broken YAML is one clear problem with its line."""
        with pytest.raises(QuestionnaireError, match=r"^q.yaml:3: not valid YAML: mapping "
                                                     r"values are not allowed here$"):
            parse_questionnaire((HEAD + "Q1:\n  ttft: 1: 2\n").encode(), "q.yaml")


class TestHostileInput:
    def test_alias_bomb_is_refused_quickly(self) -> None:
        """A billion-laughs document is stopped by the expansion bound."""
        lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
        with pytest.raises(QuestionnaireError, match="holds more than 5,000 values"):
            parse_questionnaire("\n".join(lines).encode(), "bomb.yaml")

    def test_recursive_alias_is_refused(self) -> None:
        """A list that contains itself would never end."""
        with pytest.raises(QuestionnaireError, match="levels of nesting"):
            parse_questionnaire(b"schema: &x [*x]\n", "loop.yaml")

    def test_deep_nesting_is_refused(self) -> None:
        """Thousands of nested brackets give a clear error, not a RecursionError."""
        with pytest.raises(QuestionnaireError, match="nest"):
            parse_questionnaire(b"[" * 5000 + b"]" * 5000, "deep.yaml")

    def test_fifty_megabytes_is_refused_without_reading_it_all(self, tmp_path: Path) -> None:
        """A 50 MB file is refused by size, naming the limit."""
        big = tmp_path / "big.yaml"
        with big.open("wb") as fh:
            fh.write(HEAD.encode())
            fh.write(b"#" * (50 * 1024 * 1024))
        with pytest.raises(QuestionnaireError) as info:
            load_questionnaire(big)
        assert str(info.value) == (f"{big}: 52,428,832 bytes is too large for a questionnaire "
                                   f"(limit {MAX_BYTES:,} bytes)")

    def test_binary_junk_is_a_clear_error(self) -> None:
        """Invalid UTF-8 names the line and the offending byte."""
        with pytest.raises(QuestionnaireError, match=r"^j.bin:2: not UTF-8 text \(byte 0xff"):
            parse_questionnaire(b"schema: x\n\xff\xfe\x00junk", "j.bin")

    def test_nul_bytes_are_not_yaml(self) -> None:
        """Control characters inside UTF-8 are rejected by the YAML reader, with a line."""
        with pytest.raises(QuestionnaireError, match=r"^n.yaml:2: not valid YAML: control "
                                                     r"character U\+0000 is not allowed$"):
            parse_questionnaire(b"schema: a\nvendor: a\x00b\n", "n.yaml")

    @pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
    def test_utf16_is_named(self, encoding: str) -> None:
        """A file saved as UTF-16 (with or without BOM) says how to fix it."""
        with pytest.raises(QuestionnaireError, match="looks like UTF-16 text; save the"):
            parse_questionnaire(HEAD.encode(encoding), "w.yaml")

    def test_terminal_escapes_in_field_names_are_not_printed_raw(self) -> None:
        """A field name carrying ANSI escapes is shown escaped, so it cannot drive a terminal."""
        assert problems_of(HEAD + '"\\e[31mred\\a": 1\n') == [
            "q.yaml:2: '\\x1b[31mred\\x07': unknown field",
        ]

    def test_many_small_values_are_refused(self) -> None:
        """Tens of thousands of keys fit under the byte limit but are refused, early."""
        text = HEAD + "".join(f"k{i}: 1\n" for i in range(20000))
        with pytest.raises(QuestionnaireError, match="holds more than 5,000 values"):
            parse_questionnaire(text.encode(), "flat.yaml")

    def test_utf8_bom_is_accepted(self) -> None:
        """Editors on Windows add a BOM; that is still UTF-8."""
        q = parse_questionnaire(b"\xef\xbb\xbf" + HEAD.encode() + "vendor: Zoë\n".encode())
        assert q.vendor == "Zoë"

    def test_python_tags_are_never_constructed(self) -> None:
        """Tags that would run code with an unsafe loader are reported, not run."""
        text = HEAD + "vendor: !!python/object/apply:os.system ['echo pwned']\n"
        assert problems_of(text) == [
            "q.yaml:2: vendor: unsupported YAML tag "
            "'tag:yaml.org,2002:python/object/apply:os.system'",
        ]

    @pytest.mark.parametrize("text, expected", [
        ("", "q.yaml: the file is empty; start from `evalkit questionnaire init q.yaml`"),
        ("- a\n- b\n", "q.yaml:1: (top level): expected a mapping of fields, got a list"),
        ("just words", "q.yaml:1: (top level): expected a mapping of fields, got 'just words'"),
        (HEAD + "? [a, b]\n: 1\n", "q.yaml:2: (top level): field names must be text, got None"),
        ("a: 1\n---\nb: 2\n", "q.yaml:2: not valid YAML: expected a single document in the "
                              "stream, but found another document"),
    ])
    def test_wrong_shapes(self, text: str, expected: str) -> None:
        """Each wrong document shape gives one clear line."""
        assert expected in problems_of(text)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.text(max_size=300))
    def test_any_text_is_a_questionnaire_or_a_clear_error(self, text: str) -> None:
        """Arbitrary text never escapes as another exception."""
        try:
            assert isinstance(parse_questionnaire(text.encode(), "h.yaml"), Questionnaire)
        except QuestionnaireError as exc:
            assert str(exc).startswith("h.yaml")
            assert all(p.startswith("h.yaml:") for p in exc.problems)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(max_size=300))
    def test_any_bytes_are_a_questionnaire_or_a_clear_error(self, raw: bytes) -> None:
        """Arbitrary bytes never escape as another exception."""
        try:
            parse_questionnaire(raw, "b.yaml")
        except QuestionnaireError as exc:
            assert str(exc).startswith("b.yaml")

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.dictionaries(st.sampled_from(["schema", "vendor", "date", "headline", "Q1", "Q2",
                                            "Q3", "Q4", "Q5", "Q6", "contact"]), TREE,
                           max_size=6))
    def test_near_miss_documents_are_a_questionnaire_or_a_clear_error(
            self, doc: dict[str, object]) -> None:
        """Documents shaped like questionnaires (right keys, any values) load or explain."""
        doc = {"schema": "evalkit.questionnaire/1", **doc}
        text = yaml.safe_dump(doc, allow_unicode=True)
        try:
            q = parse_questionnaire(text.encode(), "n.yaml")
        except QuestionnaireError as exc:
            assert exc.problems and all(p.startswith("n.yaml:") for p in exc.problems)
        else:
            assert isinstance(q, Questionnaire)


class TestCli:
    def test_init_then_validate_round_trips(self, tmp_path: Path) -> None:
        """The template init writes is valid as it stands."""
        runner = CliRunner()
        path = tmp_path / "acme.yaml"
        result = runner.invoke(cli, ["questionnaire", "init", str(path)])
        assert (result.exit_code, result.stdout) == (0, f"{path}\n")
        assert path.read_text() == TEMPLATE
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
