"""A workload file read into the model (`evalkit.workload.load`): every valid form to its
values, every problem at once with its line, every bound on both sides of its edge."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalkit.errors import WorkloadError
from evalkit.questionnaire.reader import read_document
from evalkit.workload.load import MAX_BYTES, load_workload, workload_from_document
from evalkit.workload.model import Agent, Conversations, Dist, Session, Single, fixed
from tests.workload.helpers import (
    EXAMPLE,
    HEAD,
    problems_of,
    relative,
    shape_problems,
    workload,
    write,
)


class TestValidForms:
    def test_the_example_reads_every_field(self, tmp_path: Path) -> None:
        w = workload(tmp_path, EXAMPLE)
        assert (w.name, w.concurrency, w.duration_s, w.units) == ("chat-product", (1, 4, 8),
                                                                  30.0, 40)
        chat, lookup, coder, ours = w.shapes
        assert isinstance(chat, Session) and chat.weight == 3.0
        assert chat.turns == Dist("uniform", low=4, high=8)
        assert chat.system_prompt_tokens == 400
        assert chat.user_tokens == Dist("lognormal", median=60, p90=200, low=1, high=131_072)
        assert chat.output_tokens == fixed(150)
        assert chat.think_time_s == Dist("uniform", low=1.0, high=3.0, integer=False)
        assert isinstance(lookup, Single) and lookup.weight == 1.0
        assert lookup.prompt_tokens == fixed(500)
        assert lookup.output_tokens == Dist("empirical", values=(50, 80, 300))
        assert isinstance(coder, Agent)
        assert (coder.steps, coder.prompt_tokens, coder.output_tokens) == (
            fixed(5), fixed(800), fixed(100))
        assert coder.tool_result_tokens == Dist("uniform", low=100, high=400)
        assert coder.tool_latency_s == fixed(0.5, integer=False)
        assert isinstance(ours, Conversations) and ours.name == "ours"
        assert ours.output_tokens == fixed(200)
        assert ours.think_time_s == fixed(0.0, integer=False)
        assert [c.id for c in ours.conversations] == ["line1", "c2"]
        assert ours.conversations[0].user_turns() == 2
        raw = (tmp_path / "w.yaml").read_bytes()
        assert w.source == {"name": "w.yaml", "sha256": hashlib.sha256(raw).hexdigest()}

    def test_json_with_tabs_reads_as_the_yaml_does(self, tmp_path: Path) -> None:
        """JSON is accepted, tab-indented too (PyYAML alone refuses tabs)."""
        yaml_form = workload(tmp_path, EXAMPLE)
        data = {"name": "chat-product", "concurrency": [1, 4, 8], "duration_s": 30,
                "units": 40, "shapes": [
                    {"name": "chat", "kind": "session", "weight": 3,
                     "turns": {"uniform": [4, 8]}, "system_prompt_tokens": 400,
                     "user_tokens": {"lognormal": {"median": 60, "p90": 200}},
                     "output_tokens": 150, "think_time_s": {"uniform": [1.0, 3.0]}},
                    {"name": "lookup", "kind": "single", "prompt_tokens": 500,
                     "output_tokens": {"empirical": [50, 80, 300]}},
                    {"name": "coder", "kind": "agent", "steps": 5, "prompt_tokens": 800,
                     "tool_result_tokens": {"uniform": [100, 400]}, "tool_latency_s": 0.5,
                     "output_tokens": 100},
                    {"name": "ours", "kind": "conversations", "file": "convos.jsonl",
                     "output_tokens": 200, "think_time_s": 0}]}
        json_form = workload(tmp_path, json.dumps(data, indent="\t"), "w.json")
        assert json_form.shapes == yaml_form.shapes
        assert json_form.concurrency == yaml_form.concurrency

    def test_defaults_and_the_single_level_form(self, tmp_path: Path) -> None:
        w = workload(tmp_path, "name: w\nduration_s: 12.5\nshapes:\n"
                     "  - {name: s, kind: session, turns: 2, system_prompt_tokens: 0,\n"
                     "     user_tokens: 10, output_tokens: 5}\n")
        assert (w.concurrency, w.duration_s, w.units) == ((1,), 12.5, None)
        s = w.shapes[0]
        assert isinstance(s, Session) and s.system_prompt_tokens == 0
        assert s.think_time_s == fixed(0.0, integer=False) and s.weight == 1.0
        w = workload(tmp_path, "name: w\nconcurrency: 16\nunits: 7\nshapes:\n"
                     "  - {name: s, kind: single, prompt_tokens: 1, output_tokens: 131072}\n")
        assert (w.concurrency, w.duration_s, w.units) == ((16,), None, 7)

    def test_every_distribution_form(self, tmp_path: Path) -> None:
        w = workload(tmp_path, HEAD + """\
  - name: s
    kind: agent
    steps: {fixed: 3}
    prompt_tokens: {lognormal: {median: 100.5, p90: 400, max: 1000}}
    tool_result_tokens: {empirical: [1, 131072]}
    output_tokens: {uniform: [1, 1]}
    tool_latency_s: {empirical: [0, 0.25, 600]}
""")
        a = w.shapes[0]
        assert isinstance(a, Agent)
        assert a.steps == fixed(3)
        assert a.prompt_tokens == Dist("lognormal", median=100.5, p90=400, low=1, high=1000)
        assert a.tool_result_tokens == Dist("empirical", values=(1, 131_072))
        assert a.output_tokens == Dist("uniform", low=1, high=1)
        assert a.tool_latency_s == Dist("empirical", values=(0, 0.25, 600), integer=False)

    def test_a_conversations_shape_keeps_its_weight_and_defaults(self, tmp_path: Path) -> None:
        w = workload(tmp_path, HEAD + "  - {name: mine, kind: conversations, file: convos.jsonl,"
                     " weight: 0.5}\n")
        c = w.shapes[0]
        assert isinstance(c, Conversations) and c.weight == 0.5
        assert c.output_tokens == fixed(256)
        assert c.source is not None and c.source["name"] == "convos.jsonl"

    def test_a_conversations_file_is_relative_to_the_workload(self, tmp_path: Path) -> None:
        sub = tmp_path / "sub"
        sub.mkdir()
        write(sub, '[{"role": "user", "content": "x"}]\n', "c.jsonl")
        w = load_workload(write(sub, HEAD + "  - {name: c, kind: conversations, file: c.jsonl}\n"))
        c = w.shapes[0]
        assert isinstance(c, Conversations) and c.conversations[0].messages[0]["content"] == "x"


class TestProblems:
    def test_a_hostile_file_gets_every_problem_with_its_line(self, tmp_path: Path) -> None:
        found = problems_of(tmp_path, """\
name: x
concurrency: [1, 1, 5000, true]
unitz: 3
shapes:
  - name: a
    kind: session
    turns: {uniform: [8, 4]}
    system_prompt_tokens: -1
    user_tokens: {lognormal: {median: 60, p90: 50}}
    output_tokens: {normal: 3}
    think_time: 2
  - name: a
    kind: single
    prompt_tokens: true
  - name: c
    kind: conversations
    file: nope.jsonl
    steps: 3
  - name: d
    kind: chat
  - name: e
    kind: single
    prompt_tokens: 4.5
    output_tokens: "1_000"
""")
        assert found == [
            "w.yaml:1: (top level): set duration_s (seconds per level), units (units started "
            "per level) or both",
            "w.yaml:2: concurrency[1]: level 1 appears twice",
            "w.yaml:2: concurrency[2]: must be at most 4,096 users, got 5000",
            "w.yaml:2: concurrency[3]: expected a whole number, got true (true and false are "
            "not numbers)",
            "w.yaml:3: unitz: unknown field (did you mean units?)",
            "w.yaml:7: shapes[0].turns.uniform: low 8 is above high 4",
            "w.yaml:8: shapes[0].system_prompt_tokens: must be at least 0, got -1",
            "w.yaml:9: shapes[0].user_tokens.lognormal.p90: must be greater than the median "
            "(60), got 50",
            "w.yaml:10: shapes[0].output_tokens.normal: unknown distribution 'normal'; "
            "expected fixed, uniform, lognormal, empirical",
            "w.yaml:11: shapes[0].think_time: unknown field (did you mean think_time_s?)",
            "w.yaml:12: shapes[1].name: 'a' is already the name of shapes[0]; shape names "
            "are unique",
            "w.yaml:12: shapes[1].output_tokens: required field missing",
            "w.yaml:14: shapes[1].prompt_tokens: expected a whole number, got true (true and "
            "false are not numbers)",
            f"w.yaml:17: shapes[2].file: no conversations file 'nope.jsonl' (looked for "
            f"{str(tmp_path / 'nope.jsonl')!r})",
            "w.yaml:18: shapes[2].steps: unknown field (a field of agent shapes, not "
            "conversations)",
            "w.yaml:20: shapes[3].kind: expected one of single, session, agent, conversations; "
            "got 'chat'",
            "w.yaml:23: shapes[4].prompt_tokens: expected a whole number, got 4.5 (a count is "
            "written without a decimal point or exponent)",
            "w.yaml:24: shapes[4].output_tokens: expected a distribution (a number, {fixed: x}, "
            "{uniform: [lo, hi]}, {lognormal: {median: m, p90: p}} or {empirical: [...]}), "
            "got '1_000'",
        ]

    def test_the_error_counts_its_problems(self, tmp_path: Path) -> None:
        with pytest.raises(WorkloadError) as info:
            load_workload(write(tmp_path, "name: w\nunits: 1\nshapes: []\n"))
        assert str(info.value).endswith("w.yaml: 1 problem in the workload")
        assert relative(tmp_path, info.value.problems) == [
            "w.yaml:3: shapes: expected a list of 1 to 64 shapes, got an empty list"]

    def test_missing_top_level_fields(self, tmp_path: Path) -> None:
        assert problems_of(tmp_path, "units: 3\n") == [
            "w.yaml:1: name: required field missing", "w.yaml:1: shapes: required field missing"]
        assert problems_of(tmp_path, "- 1\n") == [
            "w.yaml:1: (top level): expected a mapping of fields, got a list"]

    @pytest.mark.parametrize(("kind", "required"), [
        ("single", ["prompt_tokens", "output_tokens"]),
        ("session", ["turns", "system_prompt_tokens", "user_tokens", "output_tokens"]),
        ("agent", ["steps", "prompt_tokens", "tool_result_tokens", "output_tokens"]),
        ("conversations", ["file"]),
    ])
    def test_each_kind_names_every_field_it_lacks(self, tmp_path: Path, kind: str,
                                                  required: list[str]) -> None:
        found = shape_problems(tmp_path, f"name: s\nkind: {kind}")
        assert found == [f"w.yaml:4: shapes[0].{f}: required field missing" for f in required]

    def test_a_shape_needs_a_name_and_a_kind(self, tmp_path: Path) -> None:
        assert shape_problems(tmp_path, "weight: 2") == [
            "w.yaml:4: shapes[0].name: required field missing",
            "w.yaml:4: shapes[0].kind: required field missing"]

    def test_a_field_of_no_kind_is_unknown_when_the_kind_is_wrong(self, tmp_path: Path) -> None:
        assert shape_problems(tmp_path, "name: s\nkind: 3\nturnz: 2") == [
            "w.yaml:5: shapes[0].kind: expected one of single, session, agent, conversations; "
            "got 3",
            "w.yaml:6: shapes[0].turnz: unknown field (did you mean turns?)"]

    def test_a_shape_field_at_the_top_says_where_it_belongs(self, tmp_path: Path) -> None:
        found = problems_of(tmp_path, HEAD + "  - {name: s, kind: single, prompt_tokens: 1, "
                            "output_tokens: 1}\nthink_time_s: 2\n")
        assert found == ["w.yaml:5: think_time_s: unknown field (a field of a shape, under "
                         "shapes:)"]

    @pytest.mark.parametrize(("field", "value", "message"), [
        ("weight", "true", "expected a number, got true (true and false are not numbers)"),
        ("weight", "0", "must be greater than 0, got 0"),
        ("weight", "-1", "must be greater than 0, got -1"),
        ("weight", "heavy", "expected a number, got 'heavy'"),
        ("name", "''", "must not be empty"),
        ("name", "[a]", "expected text, got a list"),
        ("name", '"a\\tb"', "must be printable text on one line, without leading or trailing "
                            "spaces; got 'a\\tb'"),
        ("name", "x" * 65, "text longer than 64 characters"),
    ])
    def test_common_fields(self, tmp_path: Path, field: str, value: str, message: str) -> None:
        body = {"name": "s", "kind": "single", "prompt_tokens": "1", "output_tokens": "1"}
        body[field] = value
        found = shape_problems(tmp_path, "\n".join(f"{k}: {v}" for k, v in body.items()))
        line = 4 + list(body).index(field)
        assert found == [f"w.yaml:{line}: shapes[0].{field}: {message}"]


#: (field, a value just inside its bound, one just outside, the message)
EDGES = [
    ("prompt_tokens", "1", "0", "must be at least 1, got 0"),
    ("prompt_tokens", "131072", "131073", "must be at most 131,072 tokens, got 131073"),
    ("output_tokens", "{uniform: [1, 131072]}", "{uniform: [1, 131073]}",
     "must be at most 131,072 tokens, got 131073"),
    ("tool_result_tokens", "{empirical: [1, 2]}", "{empirical: [1, 0]}",
     "must be at least 1, got 0"),
    ("steps", "64", "65", "must be at most 64 steps, got 65"),
    ("steps", "1", "0", "must be at least 1, got 0"),
    ("tool_latency_s", "600", "600.5", "must be at most 600 seconds, got 600.5"),
    ("tool_latency_s", "0", "-0.1", "must be at least 0, got -0.1"),
    ("tool_latency_s", "{lognormal: {median: 1, p90: 600}}",
     "{lognormal: {median: 1, p90: 601}}", "must be at most 600 seconds, got 601"),
    ("prompt_tokens", "{lognormal: {median: 1, p90: 2}}",
     "{lognormal: {median: 0.5, p90: 2}}", "must be at least 1, got 0.5"),
]


class TestBounds:
    @pytest.mark.parametrize(("field", "inside", "outside", "message"), EDGES)
    def test_each_bound_holds_at_its_edge(self, tmp_path: Path, field: str, inside: str,
                                          outside: str, message: str) -> None:
        fields = {"name": "a", "kind": "agent", "steps": "2", "prompt_tokens": "8",
                  "tool_result_tokens": "8", "output_tokens": "8", "tool_latency_s": "0"}
        fields[field] = inside
        w = workload(tmp_path, HEAD + "  - " + "\n    ".join(f"{k}: {v}" for k, v in
                                                          fields.items()) + "\n")
        assert w.shapes[0].name == "a"
        fields[field] = outside
        found = shape_problems(tmp_path, "\n".join(f"{k}: {v}" for k, v in fields.items()))
        assert len(found) == 1 and found[0].startswith(
            f"w.yaml:{4 + list(fields).index(field)}: shapes[0].{field}")
        assert found[0].endswith(message)

    def test_session_bounds(self, tmp_path: Path) -> None:
        found = shape_problems(tmp_path, "name: s\nkind: session\nturns: 65\n"
                               "system_prompt_tokens: 131073\nuser_tokens: 0\n"
                               "output_tokens: 1\nthink_time_s: 601")
        assert found == [
            "w.yaml:6: shapes[0].turns: must be at most 64 steps, got 65",
            "w.yaml:7: shapes[0].system_prompt_tokens: must be at most 131,072 tokens, got "
            "131073",
            "w.yaml:8: shapes[0].user_tokens: must be at least 1, got 0",
            "w.yaml:10: shapes[0].think_time_s: must be at most 600 seconds, got 601"]

    def test_the_system_prompt_is_one_length_not_a_distribution(self, tmp_path: Path) -> None:
        found = shape_problems(tmp_path, "name: s\nkind: session\nturns: 2\n"
                               "system_prompt_tokens: {uniform: [1, 2]}\nuser_tokens: 1\n"
                               "output_tokens: 1")
        assert found == ["w.yaml:7: shapes[0].system_prompt_tokens: expected a whole number, "
                         "got a mapping"]

    @pytest.mark.parametrize(("text", "message"), [
        ("duration_s: 0", "duration_s: must be greater than 0, got 0"),
        ("duration_s: 86401", "duration_s: must be at most 86,400 seconds, got 86401"),
        ("duration_s: false", "duration_s: expected a number, got false (true and false are "
                              "not numbers)"),
        ("units: 0", "units: must be at least 1, got 0"),
        ("units: 1000001", "units: must be at most 1,000,000 units, got 1000001"),
        ("units: 2e2", "units: expected a whole number, got 2e2 (a count is written without "
                       "a decimal point or exponent)"),
        ("concurrency: 0", "concurrency: must be at least 1, got 0"),
        ("concurrency: 4097", "concurrency: must be at most 4,096 users, got 4097"),
        ("concurrency: []", "concurrency: expected 1 to 64 levels, got 0"),
        ("concurrency: [" + ", ".join(str(i) for i in range(1, 66)) + "]",
         "concurrency: expected 1 to 64 levels, got 65"),
    ])
    def test_top_level_bounds(self, tmp_path: Path, text: str, message: str) -> None:
        shape = "shapes:\n  - {name: s, kind: single, prompt_tokens: 1, output_tokens: 1}\n"
        head = "name: w\n" + ("" if text.startswith("units") else "units: 5\n")
        found = problems_of(tmp_path, head + text + "\n" + shape)
        assert found == [f"w.yaml:{head.count(chr(10)) + 1}: {message}"]

    def test_at_most_64_shapes(self, tmp_path: Path) -> None:
        shapes = "".join(f"  - {{name: s{i}, kind: single, prompt_tokens: 1, output_tokens: 1}}\n"
                         for i in range(65))
        assert problems_of(tmp_path, HEAD + shapes) == ["w.yaml:3: shapes: 65 shapes; at most 64"]
        assert len(workload(tmp_path, HEAD + shapes.rsplit("  - ", 1)[0]).shapes) == 64


class TestDistributions:
    @pytest.mark.parametrize(("value", "message"), [
        ("{}", "output_tokens: a distribution has one form, got 0 (none)"),
        ("{fixed: 1, uniform: [1, 2]}", "output_tokens: a distribution has one form, got 2 "
                                        "(fixed, uniform)"),
        ("{uniform: [1, 2, 3]}", "output_tokens.uniform: expected a list of two numbers "
                                 "[low, high], got a list of 3"),
        ("{uniform: 5}", "output_tokens.uniform: expected a list of two numbers [low, high], "
                         "got 5"),
        ("{uniform: [1, 2.5]}", "output_tokens.uniform[1]: expected a whole number, got 2.5"),
        ("{lognormal: {median: 0, p90: 5}}", "output_tokens.lognormal.median: must be greater "
                                             "than 0, got 0"),
        ("{lognormal: {median: 5, p90: 5}}", "output_tokens.lognormal.p90: must be greater "
                                             "than the median (5), got 5"),
        ("{lognormal: {median: 5, p90: 9, max: 5}}", "output_tokens.lognormal.max: must be "
                                                     "greater than the median (5), got 5"),
        ("{lognormal: {median: 5, p90: 9, p99: 20}}", "output_tokens.lognormal.p99: unknown "
                                                      "field"),
        ("{lognormal: {median: 5}}", "output_tokens.lognormal.p90: required field missing"),
        ("{lognormal: [5, 9]}", "output_tokens.lognormal: expected a mapping {median: m, "
                                "p90: p}, got a list"),
        ("{empirical: []}", "output_tokens.empirical: expected a list of 1 to 10,000 values, "
                            "got an empty list"),
        ("{empirical: [1, true]}", "output_tokens.empirical[1]: expected a whole number, got "
                                   "true"),
        ("{fixed: true}", "output_tokens.fixed: expected a whole number, got true"),
        ("{Uniform: [1, 2]}", "output_tokens.Uniform: unknown distribution 'Uniform'"),
    ])
    def test_a_bad_distribution_says_what_is_wrong(self, tmp_path: Path, value: str,
                                                   message: str) -> None:
        found = shape_problems(tmp_path, f"name: s\nkind: single\nprompt_tokens: 1\n"
                               f"output_tokens: {value}")
        assert len(found) == 1, found
        assert found[0].startswith(f"w.yaml:7: shapes[0].{message}")

    def test_an_empirical_list_is_bounded_and_its_bad_values_counted(self, tmp_path: Path) -> None:
        ok = "[" + ", ".join(["7"] * 10_000) + "]"
        w = workload(tmp_path, HEAD + f"  - {{name: s, kind: single, prompt_tokens: 1, "
                     f"output_tokens: {{empirical: {ok}}}}}\n")
        out = w.shapes[0].output_tokens
        assert len(out.values) == 10_000
        found = shape_problems(tmp_path, "name: s\nkind: single\nprompt_tokens: 1\n"
                               "output_tokens: {empirical: [" + ", ".join(["7"] * 10_001) + "]}")
        assert found == ["w.yaml:7: shapes[0].output_tokens.empirical: 10,001 values; at most "
                         "10,000"]
        found = shape_problems(tmp_path, "name: s\nkind: single\nprompt_tokens: 1\n"
                               "output_tokens: {empirical: [0, 0, 0, 0, 0, 9]}")
        assert found == [
            *[f"w.yaml:7: shapes[0].output_tokens.empirical[{i}]: must be at least 1, got 0"
              for i in range(3)],
            "w.yaml:7: shapes[0].output_tokens.empirical: ... and 2 more values like these"]


class TestFile:
    def test_a_file_over_the_bound_is_refused_whole(self, tmp_path: Path) -> None:
        p = write(tmp_path, "name: w\n" + "#" * MAX_BYTES + "\n")
        with pytest.raises(WorkloadError, match="too large for a workload"):
            load_workload(p)

    def test_reader_problems_are_workload_problems(self, tmp_path: Path) -> None:
        assert problems_of(tmp_path, "") == ["w.yaml:1: the file is empty"]
        found = problems_of(tmp_path, "name: w\nname: v\nunits: !!int 3\nshapes:\n"
                            "  - {name: s, kind: single, prompt_tokens: 1, output_tokens: 1}\n")
        assert found == ["w.yaml:2: name: appears twice",
                         "w.yaml:3: units: YAML tags are not accepted (found '!!int'); write the "
                         "value plainly",
                         "w.yaml:3: units: expected a whole number, got nothing"]
        assert problems_of(tmp_path, b"name: \xff\n") == [
            "w.yaml:1: not UTF-8 text (byte 0xff at offset 6); save the workload as UTF-8"]
        assert problems_of(tmp_path, "a: [1\n")[0].startswith("w.yaml:")

    def test_a_missing_file_is_a_workload_error(self, tmp_path: Path) -> None:
        with pytest.raises(WorkloadError, match="cannot read"):
            load_workload(tmp_path / "absent.yaml")

    def test_a_bad_conversations_file_lends_its_problems_with_its_lines(
            self, tmp_path: Path) -> None:
        write(tmp_path, '[{"role": "user", "content": "x"}]\n{oops\n', "c.jsonl")
        found = problems_of(tmp_path, HEAD + "  - {name: c, kind: conversations, file: c.jsonl,"
                            " weight: 0}\n")
        assert found == [
            "w.yaml:4: shapes[0].weight: must be greater than 0, got 0",
            "c.jsonl:2: not JSON: Expecting property name enclosed in double "
            "quotes (column 2)"]


class TestInline:
    DOC = """\
schema: evalkit.questionnaire/1
vendor: v
workload:
  name: inline
  units: 3
  shapes:
    - {name: s, kind: single, prompt_tokens: 0, output_tokens: 1}
    - {name: t, kind: single, prompt_tokens: 1, output_tokens: 1, extra: 1}
other: !!str x
"""

    def test_inside_a_questionnaire_its_lines_and_path_are_the_questionnaire_s(
            self, tmp_path: Path) -> None:
        doc = read_document(self.DOC.encode(), "q.yaml")
        with pytest.raises(WorkloadError) as info:
            workload_from_document(doc, "q.yaml", tmp_path, ("workload",))
        assert info.value.problems == [
            "q.yaml:7: workload.shapes[0].prompt_tokens: must be at least 1, got 0",
            "q.yaml:8: workload.shapes[1].extra: unknown field"]

    def test_a_valid_inline_workload_names_where_it_came_from(self, tmp_path: Path) -> None:
        text = self.DOC.replace("prompt_tokens: 0", "prompt_tokens: 2").replace(", extra: 1", "")
        doc = read_document(text.encode(), "dir/q.yaml")
        w = workload_from_document(doc, "dir/q.yaml", tmp_path, ("workload",))
        assert w.name == "inline" and [s.name for s in w.shapes] == ["s", "t"]
        assert w.source == {"name": "q.yaml", "field": "workload"}

    def test_a_workload_key_that_is_no_mapping(self, tmp_path: Path) -> None:
        doc = read_document(b"a: 1\nworkload: 5\n", "q.yaml")
        with pytest.raises(WorkloadError) as info:
            workload_from_document(doc, "q.yaml", tmp_path, ("workload",))
        assert info.value.problems == ["q.yaml:2: workload: expected a mapping of fields, got 5"]
