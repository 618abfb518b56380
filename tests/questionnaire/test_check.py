"""The questionnaire: samples, schema, line-numbered problems, hostile input, YAML 1.2
scalars, refused tags, counts and dates, mutated samples, CLI."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import jsonschema
import pytest

from evalkit.errors import QuestionnaireError
from evalkit.questionnaire.load import load_questionnaire, parse_questionnaire
from evalkit.questionnaire.model import disorders
from evalkit.questionnaire.reader import MAX_BYTES
from tests.questionnaire.helpers import HEAD, SAMPLES, answer, problems_of


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
            "acme.yaml:8: Q2.gpus: expected a whole number, got 1.5 (a count is written "
            "without a decimal point or exponent)",
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


class TestCountsAndDates:
    """Issue 15: floats in integer fields and non-ISO dates were accepted."""

    @pytest.mark.parametrize("written", ["4.5", "4.0", "4.", "2e2", "4e0"])
    def test_a_count_with_a_decimal_point_or_exponent_is_refused(self, written: str) -> None:
        """at_concurrency: 4.5 (or 4.0) is not a count of streams."""
        assert problems_of(f"{HEAD}Q1:\n  at_concurrency: {written}\n") == [
            f"q.yaml:3: Q1.at_concurrency: expected a whole number, got {written} (a count is "
            "written without a decimal point or exponent)"]

    @pytest.mark.parametrize("section, field", [
        ("Q1", "prompt_tokens"), ("Q2", "gpus"), ("Q2", "at_concurrency"),
        ("Q4", "max_concurrent_streams_per_node"), ("Q4", "nodes")])
    def test_every_count_field_refuses_floats(self, section: str, field: str) -> None:
        """The rule holds for every integer field of the schema."""
        assert problems_of(f"{HEAD}{section}:\n  {field}: 8.0\n")[0].startswith(
            f"q.yaml:3: {section}.{field}: expected a whole number, got 8.0")

    def test_counts_load_as_int_and_rates_keep_their_value(self) -> None:
        """A count is an int; a rate written 2e2 is the float 200.0."""
        q = answer("Q2:\n  gpus: 8\n  at_concurrency: 0064\n  output_tokens_per_s_per_gpu: 2e2\n")
        assert (q.q2.gpus, q.q2.at_concurrency) == (8, 64)
        assert type(q.q2.at_concurrency) is int and q.q2.output_tokens_per_s_per_gpu == 200.0

    @pytest.mark.parametrize("written", ["23/11/2026", "11/23/2026", "2026/11/23", "23.11.2026",
                                         "Nov 23, 2026", "2026-11-23T10:00:00Z", "2026-11",
                                         "20261123", "2026-W47-1", "'2026-11-23 '"])
    def test_non_iso_dates_are_refused(self, written: str) -> None:
        """date: 23/11/2026 is ambiguous between countries; only YYYY-MM-DD is accepted."""
        shown = written.strip("'") if written != "20261123" else 20261123
        assert problems_of(f"{HEAD}vendor: V\ndate: {written}\n") == [
            f"q.yaml:3: date: expected a date as YYYY-MM-DD (ISO 8601), got {shown!r}"]

    def test_published_is_a_date_too(self) -> None:
        """The headline's publication date follows the same rule."""
        assert problems_of(HEAD + "headline:\n  value: 70\n  published: 2/10/2026\n") == [
            "q.yaml:4: headline.published: expected a date as YYYY-MM-DD (ISO 8601), "
            "got '2/10/2026'"]

    @pytest.mark.parametrize("written", ["2026-02-30", "2026-13-01", "2026-00-10"])
    def test_a_date_that_does_not_exist_is_refused(self, written: str) -> None:
        """The right shape is not enough: the day must exist."""
        assert problems_of(f"{HEAD}date: {written}\n") == [
            f"q.yaml:2: date: '{written}' is not a calendar date"]

    def test_iso_dates_load_as_text(self) -> None:
        """A valid date, quoted or not, is kept as the text the vendor wrote."""
        q = answer("date: 2026-02-28\nheadline:\n  published: '2024-02-29'\n")
        assert (q.date, q.headline.published) == ("2026-02-28", "2024-02-29")


class TestSchemaMessages:
    """Each schema rule's message names the field, the limit and the value written."""

    @pytest.mark.parametrize(("text", "problem"), [
        ("schema: evalkit.questionnaire/2\n",
         "q.yaml:1: schema: expected 'evalkit.questionnaire/1', got 'evalkit.questionnaire/2'"),
        (HEAD + "Q1: {at_concurrency: 0}\n", "q.yaml:2: Q1.at_concurrency: must be at least 1, "
                                            "got 0"),
        (HEAD + "Q1: {ttft_p90_ms: 2000000000000}\n",
         "q.yaml:2: Q1.ttft_p90_ms: must be at most 1e+12, got 2000000000000"),
        (HEAD + "Q1: {notes: " + "n" * 4001 + "}\n",
         "q.yaml:2: Q1.notes: text longer than 4000 characters"),
        (HEAD + "Q1: {evidence: [" + ", ".join(["e"] * 51) + "]}\n",
         "q.yaml:2: Q1.evidence: more than 50 items"),
        (HEAD + "Q1: {ttft_p90_ms: '1,000'}\n",
         "q.yaml:2: Q1.ttft_p90_ms: expected a number, got '1,000' (write the number as plain "
         "digits, without ',', '_' or ':')"),
        (HEAD + "Q1: '1,000'\n", "q.yaml:2: Q1: expected a mapping, got '1,000'"),
    ])
    def test_each_rule(self, text: str, problem: str) -> None:
        assert problems_of(text) == [problem]


class TestShownValues:
    """Field names and values quoted in a problem are bounded at 60 characters."""

    def test_a_field_name_is_shown_whole_up_to_60_characters(self) -> None:
        assert problems_of(HEAD + "n" * 60 + ": 1\n") == [f"q.yaml:2: {'n' * 60}: unknown field"]
        assert problems_of(HEAD + "n" * 61 + ": 1\n") == [
            f"q.yaml:2: '{'n' * 55}...': unknown field"]

    def test_a_value_is_shown_whole_up_to_60_characters(self) -> None:
        assert problems_of(HEAD + f"Q1: {{source: {'s' * 58}}}\n") == [
            f"q.yaml:2: Q1.source: expected one of production, lab, estimate; got '{'s' * 58}'"]
        assert problems_of(HEAD + f"Q1: {{source: {'s' * 59}}}\n") == [
            f"q.yaml:2: Q1.source: expected one of production, lab, estimate; got "
            f"'{'s' * 55}...'"]

    def test_nothing_is_said_as_nothing(self) -> None:
        assert problems_of("schema:\n") == [
            "q.yaml:1: schema: expected 'evalkit.questionnaire/1', got nothing"]

    @pytest.mark.parametrize(("p50", "p90", "said"), [
        (12345, 1234, "TTFT p50 12345 ms is above p90 1234 ms"),
        (1234567, 1000, "TTFT p50 1.23e+06 ms is above p90 1000 ms")])
    def test_figures_in_a_disorder(self, p50: int, p90: int, said: str) -> None:
        q = parse_questionnaire(f"{HEAD}Q1: {{ttft_p50_ms: {p50}, ttft_p90_ms: {p90}}}\n".encode())
        assert disorders(q.q1) == [said]

    def test_too_big_names_its_line(self) -> None:
        with pytest.raises(QuestionnaireError) as info:
            parse_questionnaire(HEAD.encode() + b"x: " + b"[" * 30 + b"]" * 30 + b"\n",
                                "deep.yaml")
        assert re.match(r"deep\.yaml:2: ", str(info.value)), str(info.value)

    def test_the_last_byte_of_a_file_at_the_bound_is_read(self, tmp_path: Path) -> None:
        path = tmp_path / "q.yaml"
        tail = b"\nvendor: Acmez"
        path.write_bytes(HEAD.encode() + b"#" * (MAX_BYTES - len(HEAD) - len(tail)) + tail)
        assert path.stat().st_size == MAX_BYTES
        assert load_questionnaire(path).vendor == "Acmez"


def nested(levels: int, inner: str, flow: str = "{k: %s}") -> str:
    """`inner` wrapped in `levels` flow mappings (or lists, with flow="[%s]")."""
    for _ in range(levels):
        inner = flow % inner
    return inner


class TestBoundsExactly:
    """MAX_NODES and MAX_DEPTH hold after alias expansion, to the value: the composer cannot
    see what an alias expands to, so these documents reach the walker's own bounds."""

    #: 21 values behind one anchor: the document below counts 7 + 21 + 22 * m values
    ITEMS = ", ".join(["1"] * 21)

    def expanded(self, m: int, extra: str = "") -> str:
        return f"{HEAD}x: &a [{self.ITEMS}]\ny: [{', '.join(['*a'] * m)}{extra}]\n"

    def test_exactly_max_nodes_values_after_expansion_are_read(self) -> None:
        """7 + 21 + 22 * 226 = 5,000 values: read (its only problems are the two fields)."""
        assert problems_of(self.expanded(226)) == ["q.yaml:2: x: unknown field",
                                                   "q.yaml:3: y: unknown field"]

    def test_one_value_more_is_refused_at_its_line(self) -> None:
        [problem] = problems_of(self.expanded(226, ", 1"))
        assert problem.startswith("q.yaml:3: holds more than 5,000 values")

    @pytest.mark.parametrize("flow", ["{k: %s}", "[%s]"])
    def test_twenty_levels_after_expansion_are_read_twenty_one_refused(self, flow: str) -> None:
        """An anchored structure 10 deep, placed 8 deep: its innermost value is on level 20
        (the top-level mapping is level 1); one level more is refused, at the anchor's line."""
        inner = nested(10, "1", flow)
        assert problems_of(f"{HEAD}x: &a {inner}\ny: {nested(8, '*a', flow)}\n") == [
            "q.yaml:2: x: unknown field", "q.yaml:3: y: unknown field"]
        [problem] = problems_of(f"{HEAD}x: &a {inner}\ny: {nested(9, '*a', flow)}\n")
        assert problem.startswith("q.yaml:2: holds more than 5,000 values (YAML aliases "
                                  "expanded) or more than 20 levels of nesting")

    def test_the_bounds_stop_reading_before_the_rest_of_the_file(self) -> None:
        """Without aliases the same bounds refuse a document while it is read: the 5,001st
        value, or the 21st level, is refused before the broken line after it is reached."""
        broken = "\n]\n"  # a stray bracket on line 3: not valid YAML, and no value
        values = f"{HEAD}x: [{'1, ' * 4995}]{broken}"  # 5 + 4,995 = 5,000 values
        assert problems_of(values) == [
            "q.yaml:3: not valid YAML: while parsing a block mapping, expected <block end>, "
            "but found ']'"]
        [problem] = problems_of(values.replace("[", "[1, ", 1))
        assert problem.startswith("q.yaml:2: holds more than 5,000 values")
        for levels, expected in ((18, "q.yaml:3: not valid YAML"),
                                 (19, "q.yaml:2: holds more than 5,000 values (YAML aliases "
                                      "expanded) or more than 20 levels of nesting")):
            [problem] = problems_of(f"{HEAD}y: {nested(levels, '1')}{broken}")
            assert problem.startswith(expected), (levels, problem)

    def test_thousands_of_levels_are_refused_by_the_bound_not_the_stack(self) -> None:
        """5,000 nested brackets: the nesting bound answers, at line 1, long before Python's
        recursion limit could."""
        [problem] = problems_of(b"[" * 5000 + b"]" * 5000)
        assert problem.startswith("q.yaml:1: holds more than 5,000 values (YAML aliases "
                                  "expanded) or more than 20 levels of nesting")


class TestFieldNames:
    def test_each_bad_key_is_reported_and_the_fields_after_it_still_read(self) -> None:
        """A number as a field name (one that is not even finite), a repeated field: each is
        a problem at its line, and reading goes on to the next field."""
        assert problems_of(HEAD + "Q1:\n  1e400: 5\n  5: x\n  ttft_p90_ms: 1\n"
                                  "  ttft_p90_ms: 2\n  colour: red\n  at_concurrency: 0\n") == [
            "q.yaml:3: Q1: expected a finite number, got '1e400'",
            "q.yaml:3: Q1: field names must be text, got None",
            "q.yaml:4: Q1: field names must be text, got 5",
            "q.yaml:6: Q1.ttft_p90_ms: appears twice",
            "q.yaml:7: Q1.colour: unknown field",
            "q.yaml:8: Q1.at_concurrency: must be at least 1, got 0",
        ]

    def test_a_tag_is_shown_whole_up_to_80_characters(self) -> None:
        """The refused tag is quoted up to 80 characters (with its quotes), clipped after."""
        def refused(name: str) -> str:
            [problem] = problems_of(f"{HEAD}vendor: !<{name}> V\n")
            return problem
        whole = "tag:x.example,2026:" + "t" * 59
        assert refused(whole) == (f"q.yaml:2: vendor: YAML tags are not accepted (found "
                                  f"'{whole}'); write the value plainly")
        assert refused(whole + "t") == (f"q.yaml:2: vendor: YAML tags are not accepted (found "
                                        f"'{whole[:75]}...'); write the value plainly")


class TestLinesAndValuesShown:
    def test_a_list_item_is_reported_at_its_own_line(self) -> None:
        assert problems_of(HEAD + "Q1:\n  evidence:\n    - a.pdf\n    - 7\n") == [
            "q.yaml:5: Q1.evidence[1]: expected text, got 7"]

    def test_a_missing_schema_is_reported_where_the_fields_begin(self) -> None:
        """After leading comments the top-level mapping, and the missing line, starts below."""
        assert problems_of("# answers\n\nvendor: A\n") == [
            "q.yaml:3: schema: required field missing"]

    def test_a_date_that_does_not_exist_is_reported_at_its_line(self) -> None:
        assert problems_of(HEAD + "vendor: V\nheadline:\n  value: 7\n"
                                  "  published: 2026-02-29\n") == [
            "q.yaml:5: headline.published: '2026-02-29' is not a calendar date"]

    @pytest.mark.parametrize(("field", "written", "got"), [
        ("export", "true", "expected text, got True"),
        ("export", "0x1F", "expected text, got 0x1F"),
        ("export", "[1]", "expected text, got a list"),
        ("observability", "1.50", "expected one of per_stream, request_level, none; got 1.50"),
        ("observability", "'1.50'", "expected one of per_stream, request_level, none; got "
                                    "'1.50'")])
    def test_a_value_is_quoted_as_it_reads(self, field: str, written: str, got: str) -> None:
        """Numbers as the vendor wrote them; true and text as values, not as written."""
        assert problems_of(f"{HEAD}Q5:\n  {field}: {written}\n") == [f"q.yaml:3: Q5.{field}: {got}"]

    def test_a_top_level_number_is_shown_as_a_number(self) -> None:
        assert problems_of("5\n") == ["q.yaml:1: (top level): expected a mapping of fields, "
                                      "got 5"]

    def test_equal_p50_and_p90_are_not_a_disorder(self) -> None:
        assert disorders(answer("Q1: {ttft_p50_ms: 300, ttft_p90_ms: 300}\n").q1) == []

    def test_evidence_reaches_the_scorecard_as_written(self) -> None:
        """`claimed` in scorecard.json carries the evidence list, item by item."""
        q = answer("Q1: {ttft_p90_ms: 3, evidence: [a.pdf, 'https://x.example/b']}\n")
        assert q.q1.to_dict() == {"ttft_p90_ms": 3, "evidence": ["a.pdf", "https://x.example/b"]}


class TestDatesThatCanBeTrue:
    """Issue 24: dates and windows that cannot be true changed nothing."""

    @pytest.mark.parametrize(("written", "shown"), [
        ('"2026-02-30\\n"', "'2026-02-30\\n'"), ('"2026-11-20\\n"', "'2026-11-20\\n'"),
        ("|\n  2026-02-30", "'2026-02-30\\n'")])
    def test_a_trailing_newline_is_no_date(self, written: str, shown: str) -> None:
        """The schema's `$` let a trailing newline through (a quoted "\\n" or a block
        literal), and the calendar check skipped what it could not fullmatch."""
        assert problems_of(f"{HEAD}date: {written}\n") == [
            f"q.yaml:2: date: expected a date as YYYY-MM-DD (ISO 8601), got {shown}"]

    def test_published_with_a_trailing_newline_is_no_date(self) -> None:
        assert problems_of(HEAD + 'headline:\n  published: "1999-99-99\\n"\n') == [
            "q.yaml:3: headline.published: expected a date as YYYY-MM-DD (ISO 8601), "
            "got '1999-99-99\\n'"]

    def test_the_shipped_schema_refuses_a_trailing_newline_too(self) -> None:
        """A vendor's editor, with a plain validator, sees the same rule."""
        shipped = json.loads((SAMPLES / "questionnaire.schema.json").read_text())
        check = jsonschema.Draft202012Validator(shipped)
        assert not check.is_valid({"schema": "evalkit.questionnaire/1", "date": "2026-11-20\n"})
        assert check.is_valid({"schema": "evalkit.questionnaire/1", "date": "2026-11-20"})

    def test_a_questionnaire_from_the_future_is_refused(self) -> None:
        today = dt.date.today().isoformat()
        assert problems_of(f"{HEAD}vendor: V\ndate: 2999-01-01\n") == [
            f"q.yaml:3: date: 2999-01-01 is after today ({today}): a questionnaire cannot "
            "be dated in the future"]

    def test_today_is_not_the_future(self) -> None:
        answer(f"date: {dt.date.today().isoformat()}\n")

    def test_a_headline_published_after_the_questionnaire_is_refused(self) -> None:
        assert problems_of(HEAD + "date: 2026-11-20\nheadline:\n  published: 2999-12-31\n") == [
            "q.yaml:4: headline.published: 2999-12-31 is after the questionnaire's date "
            "(2026-11-20)"]

    def test_without_a_date_of_its_own_nothing_is_after_today(self) -> None:
        today = dt.date.today().isoformat()
        assert problems_of(HEAD + "headline:\n  published: 2999-12-31\n") == [
            f"q.yaml:3: headline.published: 2999-12-31 is after today ({today})"]

    def test_a_reversed_window_is_refused(self) -> None:
        assert problems_of(HEAD + "date: 2026-11-23\nQ1:\n  window: 2026-11-22 to 2025-11-16\n"
                           ) == ["q.yaml:4: Q1.window: the window ends (2025-11-16) before it "
                                 "starts (2026-11-22)"]

    def test_a_window_that_ends_after_the_questionnaire_is_refused(self) -> None:
        assert problems_of(HEAD + "date: 2026-11-23\nQ6:\n  latency_s:\n    p50: 1\n"
                           "    window: hourly, 2026-11-16 to 2026-11-30\n") == [
            "q.yaml:6: Q6.latency_s.window: 2026-11-30 is after the questionnaire's date "
            "(2026-11-23)"]

    def test_a_window_names_real_days(self) -> None:
        assert problems_of(HEAD + "date: 2026-11-23\nQ4:\n  window: load test of 2026-11-31\n"
                           ) == ["q.yaml:4: Q4.window: '2026-11-31' is not a calendar date"]

    @pytest.mark.parametrize("window", ["2026-11-16 to 2026-11-22", "2026-11-22 to 2026-11-22",
                                        "load test of 2026-11-12", "load test, 2026-11",
                                        "last 7 days to 2026-11-23", "hourly averages"])
    def test_a_window_that_can_be_true_loads(self, window: str) -> None:
        """A one-day window (start = end) is a window; words and months are kept as text."""
        q = answer(f"date: 2026-11-23\nQ2:\n  window: {window}\n")
        assert q.q2.window == window

    def test_every_problem_of_the_dates_at_once(self) -> None:
        """Each wrong date is its own problem at its own line, with the others."""
        today = dt.date.today().isoformat()
        assert problems_of(HEAD + "date: 2999-01-01\nheadline:\n  published: 2999-12-31\n"
                           "Q1:\n  window: 2999-01-02 to 2998-01-01\n") == [
            f"q.yaml:2: date: 2999-01-01 is after today ({today}): a questionnaire cannot "
            "be dated in the future",
            "q.yaml:4: headline.published: 2999-12-31 is after the questionnaire's date "
            "(2999-01-01)",
            "q.yaml:6: Q1.window: the window ends (2998-01-01) before it starts (2999-01-02)",
            "q.yaml:6: Q1.window: 2999-01-02 is after the questionnaire's date (2999-01-01)"]


class TestRateLimits:
    """Issue 27: the optional rate_limits section, checked like every field."""

    def test_an_old_questionnaire_without_it_still_validates(self) -> None:
        q = answer("vendor: Acme\nQ1: {ttft_p50_ms: 200}\n")
        assert q.rate_limits.to_dict() == {}

    def test_read_into_the_model(self) -> None:
        q = answer("rate_limits:\n  requests_per_minute: 600\n  tokens_per_minute: 400000\n"
                   "  concurrent_streams_per_key: 4\n  scope: per_organisation\n")
        assert (q.rate_limits.requests_per_minute, q.rate_limits.tokens_per_minute,
                q.rate_limits.concurrent_streams_per_key, q.rate_limits.scope) == (
            600, 400000, 4, "per_organisation")

    def test_each_problem_names_file_line_and_field(self) -> None:
        text = (HEAD +
                "rate_limits:\n"
                "  requests_per_minute: 1.5\n"
                "  tokens_per_minute: 1_000\n"
                "  scope: per_user\n"
                "  concurrent_streams: 4\n"
                "  output_tokens_per_minute: 0\n")
        assert problems_of(text, "acme.yaml") == [
            "acme.yaml:3: rate_limits.requests_per_minute: expected a whole number, got 1.5 "
            "(a count is written without a decimal point or exponent)",
            "acme.yaml:4: rate_limits.tokens_per_minute: expected a whole number, got "
            "'1_000' (write the number as plain digits, without ',', '_' or ':')",
            "acme.yaml:5: rate_limits.scope: expected one of per_key, per_organisation; "
            "got 'per_user'",
            "acme.yaml:6: rate_limits.concurrent_streams: unknown field",
            "acme.yaml:7: rate_limits.output_tokens_per_minute: must be at least 1, got 0",
        ]
