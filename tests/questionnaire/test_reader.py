"""The bounded YAML 1.2 reader (`evalkit.questionnaire.reader`): hostile input, YAML 1.2
scalars and tags, encodings."""

from __future__ import annotations

import codecs
import math
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.errors import QuestionnaireError
from evalkit.questionnaire.load import load_questionnaire, parse_questionnaire
from evalkit.questionnaire.reader import MAX_BYTES, core_tag, core_value
from tests.questionnaire.helpers import HEAD, answer, assert_well_typed, problems_of


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail the block, rather than wait on it, once it has run `seconds`: a bound that does not
    hold (a billion laughs expanded) shows as a failure, not as a run that never ends."""
    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.just(10**40),
                  st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                  st.dates())


FIELD = st.sampled_from(["ttft_p50_ms", "ttft_p90_ms", "at_concurrency", "source", "gpus",
                          "distribution", "evidence", "p50", "window", "first_degrades",
                          "observability", "reconciliation", "bogus"])


TREE = st.recursive(LEAF, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(FIELD, kids, max_size=4)), max_leaves=12)


class TestHostileInput:
    def test_alias_bomb_is_refused_quickly(self) -> None:
        """A billion-laughs document is stopped by the expansion bound."""
        lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
        with within(10), pytest.raises(QuestionnaireError, match="holds more than 5,000 values"):
            parse_questionnaire("\n".join(lines).encode(), "bomb.yaml")

    def test_recursive_alias_is_refused(self) -> None:
        """A list that contains itself would never end."""
        with within(10), pytest.raises(QuestionnaireError, match="levels of nesting"):
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
            "q.yaml:2: vendor: YAML tags are not accepted (found "
            "'!!python/object/apply:os.system'); write the value plainly",
        ]

    @pytest.mark.parametrize("text, expected", [
        ("", "q.yaml:1: the file is empty; start from `evalkit questionnaire init q.yaml`"),
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
            q = parse_questionnaire(text.encode(), "h.yaml")
        except QuestionnaireError as exc:
            assert all(re.match(r"h\.yaml:[0-9]+: ", p) for p in exc.problems or [str(exc)])
        else:  # only a document that names the schema loads, and it keeps its types
            assert "evalkit.questionnaire/1" in text and q.path == "h.yaml"
            assert_well_typed(q)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(max_size=300))
    def test_any_bytes_are_a_questionnaire_or_a_clear_error(self, raw: bytes) -> None:
        """Arbitrary bytes never escape as another exception."""
        try:
            parse_questionnaire(raw, "b.yaml")
        except QuestionnaireError as exc:
            assert all(re.match(r"b\.yaml:[0-9]+: ", p) for p in exc.problems or [str(exc)])

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
        else:  # what loads keeps its types, and every number is the one written
            assert_well_typed(q)
            for qid, section in doc.items():
                if not (qid.startswith("Q") and isinstance(section, dict)):
                    continue
                for key, value in section.items():
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        assert getattr(q.questions[qid], key) == value, (qid, key)


class TestYaml12Scalars:
    """Issue 15: the questionnaire is read with YAML 1.2 core-schema rules, not PyYAML's 1.1."""

    @pytest.mark.parametrize("written, value", [
        ("0200", 200),        # YAML 1.1: octal 128
        ("200", 200),
        ("+200", 200),
        ("2e2", 200.0),       # YAML 1.1 (PyYAML): the text '2e2', refused as no number
        ("1.2e3", 1200.0),
        ("1.5E+2", 150.0),
        ("250.", 250.0),
        (".5", 0.5),
        ("0x10", 16),
        ("0o17", 15),
    ])
    def test_numbers_are_yaml_1_2(self, written: str, value: float) -> None:
        """Numbers read as YAML 1.2 says: no implicit octal, exponents without a dot."""
        got = answer(f"Q1:\n  ttft_p50_ms: {written}\n").q1.ttft_p50_ms
        assert got == value and type(got) is type(value)

    @pytest.mark.parametrize("written", ["2:50", "1_000", "1,000", "0b101", "1:02:03.5"])
    def test_yaml_1_1_number_forms_are_text_and_refused_in_a_number_field(
            self, written: str) -> None:
        """`2:50` is not 170 and `1_000` not 1000: text, refused with its line and a hint."""
        assert problems_of(f"{HEAD}vendor: V\nQ2:\n  gpus: 1\n  at_concurrency: {written}\n") \
            == [f"q.yaml:5: Q2.at_concurrency: expected a whole number, got '{written}'"
                + (" (write the number as plain digits, without ',', '_' or ':')"
                   if set(written) & set("_:,") else "")]

    @pytest.mark.parametrize("written", ["yes", "no", "on", "off", "y", "n"])
    def test_yaml_1_1_booleans_are_text(self, written: str) -> None:
        """`yes`/`on` are words in YAML 1.2: text where text is asked, refused elsewhere."""
        assert answer(f"vendor: {written}\n").vendor == written
        assert problems_of(f"{HEAD}Q5:\n  observability: {written}\n") == [
            f"q.yaml:3: Q5.observability: expected one of per_stream, request_level, none; "
            f"got '{written}'"]

    @pytest.mark.parametrize("written", ["~", "null", "Null", "NULL", ""])
    def test_core_nulls_are_empty(self, written: str) -> None:
        """The core schema's null spellings leave a field empty."""
        assert answer(f"Q1:\n  ttft_p50_ms: {written}\n").q1.ttft_p50_ms is None

    def test_quoted_number_is_text(self) -> None:
        """Quotes make text in every YAML version; a number field says so."""
        assert problems_of(HEAD + 'Q1:\n  ttft_p50_ms: "200"\n') == [
            "q.yaml:3: Q1.ttft_p50_ms: expected a number, got '200'"]

    def test_number_too_long_to_convert_names_its_line(self) -> None:
        """Python refuses to convert a 5,000-digit integer; that is a problem with a line."""
        [problem] = problems_of(HEAD + "Q1:\n  ttft_p50_ms: " + "9" * 5000 + "\n")
        assert problem.startswith("q.yaml:3: Q1.ttft_p50_ms: unreadable number '999")
        assert len(problem) < 120

    @pytest.mark.parametrize("written", ["1e400", "-.inf", ".Inf", ".NaN"])
    def test_non_finite_numbers_are_refused(self, written: str) -> None:
        """A float that overflows, and the YAML infinities and NaN, are no measurements."""
        assert problems_of(f"{HEAD}Q1:\n  ttft_p50_ms: {written}\n") == [
            f"q.yaml:3: Q1.ttft_p50_ms: expected a finite number, got '{written}'"]

    @pytest.mark.parametrize("written", ['"Acme\\ud800"', '"x\\udc80y"'])
    def test_a_lone_surrogate_is_refused_with_its_line(self, written: str) -> None:
        """A YAML escape of half a UTF-16 pair is no character: it passed validation and
        crashed the report's PDF (UnicodeEncodeError). Refused, naming field and line."""
        [problem] = problems_of(f"{HEAD}Q1:\n  notes: {written}\n")
        assert problem.startswith("q.yaml:3: Q1.notes: \\ud") or \
            problem.startswith("q.yaml:3: Q1.notes: \\udc80"), problem
        assert "surrogate" in problem


class TestTags:
    """Issue 15: `!!bool maybe` and friends went through PyYAML's constructors (tracebacks)."""

    @pytest.mark.parametrize("value, shown", [
        ("!!bool maybe", "!!bool"),
        ("!!timestamp hello", "!!timestamp"),
        ("!!int ''", "!!int"),
        ("!!int 4", "!!int"),
        ("!!float 1", "!!float"),
        ("!!str 5", "!!str"),
        ("!!null x", "!!null"),
        ("!!binary aGVsbG8=", "!!binary"),
        ("!!set {a, b}", "!!set"),
        ("!!omap [a: 1]", "!!omap"),
        ("!!map {}", "!!map"),
        ("!!seq []", "!!seq"),
        ("!local 5", "!local"),
        ("! 5", "!"),
        ("!<tag:example.com,2026:x> 5", "tag:example.com,2026:x"),
    ])
    def test_every_explicit_tag_is_refused_with_its_line(self, value: str, shown: str) -> None:
        """A tag, any tag, is a problem at its line; nothing it names is constructed."""
        assert problems_of(f"{HEAD}vendor: V\nQ1:\n  at_concurrency: {value}\n") == [
            f"q.yaml:4: Q1.at_concurrency: YAML tags are not accepted (found {shown!r}); "
            "write the value plainly"]

    def test_tags_on_field_names_and_sections_are_refused(self) -> None:
        """Keys and whole sections carry tags too; each is reported where it stands."""
        assert problems_of(HEAD + "!!str vendor: V\nQ1: !!map\n  at_concurrency: 4\n") == [
            "q.yaml:2: (top level): YAML tags are not accepted (found '!!str'); write the "
            "value plainly",
            "q.yaml:3: Q1: YAML tags are not accepted (found '!!map'); write the value plainly",
        ]

    def test_tag_directive_is_refused(self) -> None:
        """A %TAG shorthand still ends in a tag on the node."""
        text = "%TAG !e! tag:example.com,2026:\n---\n" + HEAD + "vendor: !e!x V\n"
        assert problems_of(text) == [
            "q.yaml:4: vendor: YAML tags are not accepted (found 'tag:example.com,2026:x'); "
            "write the value plainly"]

    def test_merge_key_is_an_unknown_field(self) -> None:
        """`<<` merges only in YAML 1.1; here it is a field name like any other."""
        assert problems_of(HEAD + "base: &b {at_concurrency: 4}\nQ1:\n  <<: *b\n") == [
            "q.yaml:2: base: unknown field", "q.yaml:4: Q1.<<: unknown field"]


class TestCoreSchemaValues:
    """`core_value`, the YAML 1.2 core schema's value of a plain scalar, for each special."""

    @pytest.mark.parametrize(("text", "value"), [
        (".inf", math.inf), ("+.Inf", math.inf), ("-.inf", -math.inf), ("-.INF", -math.inf)])
    def test_infinities(self, text: str, value: float) -> None:
        assert core_value(core_tag(text), text) == value

    @pytest.mark.parametrize("text", [".nan", ".NaN", ".NAN"])
    def test_not_a_number(self, text: str) -> None:
        assert math.isnan(core_value(core_tag(text), text))


class TestEncodingsAndOrder:
    @pytest.mark.parametrize("lead", [" ", "\t", "\n", "\r\n"])
    @pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
    def test_utf16_without_a_bom_is_named_whatever_the_first_character(
            self, lead: str, encoding: str) -> None:
        """A file saved as UTF-16 without a BOM may begin with a space, a tab or a line end."""
        assert problems_of((lead + HEAD).encode(encoding)) == [
            "q.yaml:1: looks like UTF-16 text; save the questionnaire as UTF-8"]

    def test_big_endian_utf16_with_a_bom_is_named(self) -> None:
        assert problems_of(codecs.BOM_UTF16_BE + HEAD.encode("utf-16-be")) == [
            "q.yaml:1: looks like UTF-16 text; save the questionnaire as UTF-8"]

    @pytest.mark.parametrize(("raw", "code"), [(b"\x7f\x00", "007F"), (b"\x00\x7f", "0000")])
    def test_a_control_character_beside_a_nul_is_not_taken_for_utf16(
            self, raw: bytes, code: str) -> None:
        """DEL is not printable text: the file is refused for the character it holds."""
        assert problems_of(raw + HEAD.encode()) == [
            f"q.yaml:1: not valid YAML: control character U+{code} is not allowed"]

    def test_bytes_over_the_bound_are_refused_by_the_parser_too(self) -> None:
        """parse_questionnaire takes bytes from anywhere (not only load_questionnaire)."""
        assert problems_of(b"#" * (MAX_BYTES + 1)) == [
            "q.yaml: 262,145 bytes is too large for a questionnaire (limit 262,144 bytes)"]

    def test_problems_on_one_line_keep_the_order_they_were_found(self) -> None:
        """Sorted by line only: on one line, what reading found comes before the schema's."""
        assert problems_of(HEAD + "Q1: {ttft_p90_ms: .nan, at_concurrency: 0}\n") == [
            "q.yaml:2: Q1.ttft_p90_ms: expected a finite number, got '.nan'",
            "q.yaml:2: Q1.at_concurrency: must be at least 1, got 0"]
