"""The questionnaire as typed objects (`evalkit.questionnaire.model`): disordered answers kept
for the reviewer."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.errors import QuestionnaireError
from evalkit.questionnaire.load import load_questionnaire, parse_questionnaire
from evalkit.questionnaire.model import disorders
from evalkit.review.reconcile import reconcile
from tests.questionnaire.helpers import SAMPLES, answer, assert_well_typed


class TestDisorderedAnswersReachTheReviewer:
    """Issue 15: p90 below p50 and unordered distributions were accepted. They stay valid files
    (an inconsistent answer is a finding about the vendor, judged by the reconciler), but every
    distribution the questionnaire holds is checked whatever else the answer is judged on."""

    def test_disorders_names_each_contradiction(self) -> None:
        """Q1's p50/p90 pair and each distribution field are checked."""
        q = answer("Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400}\n"
                   "Q2: {distribution: {p50: 3, p90: 2}}\n"
                   "Q6: {output_tokens_per_s: {p50: 1, p90: 3, p99: 2},"
                   " latency_s: {p50: 2, p99: 1}}\n")
        assert disorders(q.q1) == ["TTFT p50 500 ms is above p90 400 ms"]
        assert disorders(q.q2) == ["distribution p50 3 / p90 2 is not in increasing order"]
        assert disorders(q.q6) == [
            "latency_s p50 2 / p99 1 is not in increasing order",
            "output_tokens_per_s p50 1 / p90 3 / p99 2 is not in increasing order"]

    @pytest.mark.parametrize("name", ["forthright", "evasive", "headline"])
    def test_samples_are_in_order(self, name: str) -> None:
        """No shipped sample contradicts itself."""
        q = load_questionnaire(SAMPLES / f"{name}.yaml")
        assert [d for a in q.questions.values() for d in disorders(a)] == []

    @pytest.mark.parametrize("qid, text, status", [
        # refused earlier for another reason: that status stands, the contradiction is added
        ("Q1", "Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400, at_concurrency: 16, source: lab}",
         "unanswerable"),
        ("Q1", "Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400, at_concurrency: 1, source: production}",
         "unanswerable"),
        ("Q2", "Q2: {distribution: {p50: 900, p90: 700}, source: production, at_concurrency: 4}",
         "unanswerable"),
        ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, distribution: {p50: 900, p90: 700},"
               " source: estimate, at_concurrency: 4}", "unanswerable"),
        ("Q6", "Q6: {output_tokens_per_s: {p50: 900, p90: 700}, source: lab, window: w}",
         "unanswerable"),
        ("Q6", "Q6: {latency_s: {p50: 9, p90: 7}, source: production}", "unanswerable"),
        # reached the order check: the judge says it itself
        ("Q1", "Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400, at_concurrency: 16, source: production}",
         "unreconciled"),
        ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, distribution: {p50: 900, p90: 700},"
               " source: production, at_concurrency: 4}", "unreconciled"),
        ("Q6", "Q6: {latency_s: {p50: 9, p90: 7}, output_tokens_per_s: {p50: 1, p90: 2},"
               " source: production, window: w}", "unreconciled"),
    ])
    def test_every_contradiction_is_in_the_judgement(self, qid: str, text: str,
                                                     status: str) -> None:
        """Whatever the answer is judged on, its reason shows the contradiction."""
        judgement = reconcile(answer(text + "\n"), None).judgements[qid]
        assert judgement.status == status
        assert "cannot both hold" in judgement.reason or "contradict" in judgement.reason


# ------------------------------------------------------------- mutated questionnaires

SAMPLE_TEXTS = {name: (SAMPLES / f"{name}.yaml").read_text()
                for name in ("forthright", "evasive", "headline")}


PROBLEM = re.compile(r"^m\.yaml:[0-9]+: ")


#: scalars a vendor (or a fuzzer) might write where a value goes
HOSTILE_SCALARS = [
    "0200", "0o17", "0x1F", "2:50", "1:02:03", "1_000", "1,000", "2e2", "1.2e3", "-1e3",
    "1e400", ".inf", "-.Inf", ".nan", "4.5", "4.0", "4.", ".5", "-0", "0", "+7", "-3",
    "9" * 30, "yes", "no", "on", "off", "y", "true", "False", "~", "null", "", "''", '""',
    "'200'", '"2026-11-23"', "2026-11-23", "2026-02-30", "23/11/2026", "2026-11-23T10:00:00Z",
    "Nov 23", "lab", "production", "per_stream", "itl", "output_tokens_per_s", "[]", "{}",
    "[1, 2]", "{p50: 2, p90: 1}", "&a 5", "*a", "=", "<<", "|\n  block", ">-\n  folded",
    "'\\x1b[2J'", "\"\\e]0;x\\a\"", "- a", "? x", "@x", "`x", "%x", "!x", "a: b: c",
]


TAGS = ["!!bool", "!!int", "!!float", "!!str", "!!null", "!!timestamp", "!!binary", "!!set",
        "!!omap", "!!pairs", "!!map", "!!seq", "!!merge", "!!value", "!!python/none",
        "!!python/object/apply:os.system", "!local", "!", "!<tag:x.example,2026:t>"]


KEY_VALUE = re.compile(r"^(\s*(?:- )?[A-Za-z0-9_]+:)(.*)$")


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A sample questionnaire with one to four mutations of scalars, tags or structure."""
    lines = SAMPLE_TEXTS[draw(st.sampled_from(sorted(SAMPLE_TEXTS)))].splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["scalar", "scalar", "number", "number", "text", "tag",
                                     "tag", "delete", "duplicate", "swap", "indent", "splice",
                                     "truncate"]))
        m = KEY_VALUE.match(lines[i])
        if kind == "scalar" and m:
            lines[i] = f"{m.group(1)} {draw(st.sampled_from(HOSTILE_SCALARS))}"
        elif kind == "number" and m:  # well-formed, but may put percentiles out of order
            number = draw(st.one_of(st.integers(1, 5000), st.floats(0.01, 5000)))
            lines[i] = f"{m.group(1)} {number}"
        elif kind == "text" and m:
            lines[i] = f"{m.group(1)} {draw(st.text(max_size=12))}"
        elif kind == "tag" and m:
            lines[i] = f"{m.group(1)} {draw(st.sampled_from(TAGS))}{m.group(2)}"
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "indent":
            lines[i] = " " * draw(st.integers(0, 6)) + lines[i].lstrip()
        elif kind == "splice":
            other = SAMPLE_TEXTS[draw(st.sampled_from(sorted(SAMPLE_TEXTS)))].splitlines()
            lines.insert(i, draw(st.sampled_from(other)))
        elif kind == "truncate":
            lines = lines[:i]
        if not lines:
            lines = [""]
    return "\n".join(lines) + "\n"


class TestMutatedQuestionnaires:
    """Issue 15 measured 149 tracebacks in 6,000 mutants of the samples. Every mutant is now
    a well-typed Questionnaire or a QuestionnaireError whose every problem names file:line,
    and the reconciler judges whatever loads."""

    @settings(max_examples=300, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(mutated())
    def test_a_mutant_is_a_questionnaire_or_problems_with_lines(self, text: str) -> None:
        """Never another exception; never a problem without its line."""
        try:
            q = parse_questionnaire(text.encode(), "m.yaml")
        except QuestionnaireError as exc:
            lines = exc.problems or [str(exc)]
            assert all(PROBLEM.match(p) for p in lines), lines
            return
        assert_well_typed(q)
        review = reconcile(q, None)
        for qid, a in q.questions.items():
            if disorders(a):
                judgement = review.judgements[qid]
                assert judgement.status in ("unanswerable", "unreconciled")
                assert "cannot both hold" in judgement.reason or "contradict" in judgement.reason

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.one_of(st.none(), st.integers(1, 999)), min_size=9, max_size=9),
           st.sampled_from(["production", "lab", "estimate", "~"]), st.booleans(),
           st.sampled_from(["4", "1", "~"]))
    def test_every_distribution_is_checked_whatever_else_the_answer_says(
            self, p: list[int | None], source: str, window: bool, concurrency: str) -> None:
        """Q1's pair, Q2's distribution and both Q6 distributions: any disorder reaches the
        judgement's reason, whichever path the judge takes."""
        v = ["~" if x is None else str(x) for x in p]
        text = (f"Q1: {{ttft_p50_ms: {v[0]}, ttft_p90_ms: {v[1]}, source: {source},"
                f" at_concurrency: {concurrency}}}\n"
                f"Q2: {{output_tokens_per_s_per_gpu: 500, gpus: 1, source: {source},"
                f" at_concurrency: {concurrency}, distribution: {{p50: {v[2]}, p90: {v[3]},"
                f" p99: {v[4]}}}}}\n"
                f"Q6: {{source: {source}, window: {'w' if window else '~'},"
                f" output_tokens_per_s: {{p50: {v[5]}, p90: {v[6]}}},"
                f" latency_s: {{p90: {v[7]}, p99: {v[8]}}}}}\n")
        q = answer(text)
        judgements = reconcile(q, None).judgements
        for qid in ("Q1", "Q2", "Q6"):
            if disorders(q.questions[qid]):
                assert judgements[qid].status in ("unanswerable", "unreconciled")
                reason = judgements[qid].reason
                assert "cannot both hold" in reason or "contradict" in reason, reason
