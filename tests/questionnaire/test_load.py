"""Reading a questionnaire file into a checked object (`evalkit.questionnaire.load`): the
samples, files on disk, what is read back."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from evalkit.errors import QuestionnaireError
from evalkit.questionnaire.load import load_questionnaire, parse_questionnaire
from evalkit.questionnaire.reader import MAX_BYTES
from evalkit.questionnaire.schema import SCHEMA
from evalkit.questionnaire.template import TEMPLATE, write_template
from tests.questionnaire.helpers import HEAD, SAMPLES, problems_of


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
        assert q.rate_limits.to_dict() == {}
        # every field the schema has for rate limits is offered, blank
        data = yaml.safe_load(TEMPLATE)
        assert set(data["rate_limits"]) == set(SCHEMA["properties"]["rate_limits"]["properties"])


class TestFiles:
    def test_a_file_of_exactly_the_size_bound_is_read(self, tmp_path: Path) -> None:
        """MAX_BYTES is read whole; one byte more is refused before parsing."""
        body = (HEAD + "vendor: Acme\n").encode()
        path = tmp_path / "q.yaml"
        path.write_bytes(body + b"#" * (MAX_BYTES - len(body)))
        assert load_questionnaire(path).vendor == "Acme"
        path.write_bytes(body + b"#" * (MAX_BYTES + 1 - len(body)))
        with pytest.raises(QuestionnaireError, match="too large"):
            load_questionnaire(path)

    def test_a_template_that_cannot_be_written_says_why(self, tmp_path: Path) -> None:
        with pytest.raises(QuestionnaireError) as info:
            write_template(tmp_path / "no" / "such" / "dir.yaml")
        assert str(info.value) == f"{tmp_path / 'no' / 'such' / 'dir.yaml'}: cannot write: " \
                                  "No such file or directory"


class TestReadingBack:
    def test_contact_evidence_and_empty_distributions(self) -> None:
        q = parse_questionnaire((HEAD + "contact: {name: Ann, email: a@x.example}\n"
                                 "Q1: {evidence: [doc.pdf], ttft_p90_ms: 3}\n"
                                 "Q2: {evidence: ~, distribution: ~}\n").encode())
        assert (q.contact.name, q.contact.email) == ("Ann", "a@x.example")
        assert q.q1.evidence == ("doc.pdf",) and q.q2.evidence == ()
        assert q.q2.distribution is None

    def test_problems_in_line_order_counted(self) -> None:
        text = HEAD + "vendor: V\nQ9: 1\nQ1: {source: x}\nQ0: 2\n"
        with pytest.raises(QuestionnaireError) as info:
            parse_questionnaire(text.encode(), "q.yaml")
        assert [p.split(":")[1] for p in info.value.problems] == ["3", "4", "5"]
        assert str(info.value) == "q.yaml: 3 problems in the questionnaire"
        with pytest.raises(QuestionnaireError) as one:
            parse_questionnaire((HEAD + "Q9: 1\n").encode(), "q.yaml")
        assert str(one.value) == "q.yaml: 1 problem in the questionnaire"

    def test_a_questionnaire_without_a_file_name(self) -> None:
        with pytest.raises(QuestionnaireError) as info:
            parse_questionnaire(b"- a\n")
        assert str(info.value).startswith("<questionnaire>")

    def test_a_control_character_is_named(self) -> None:
        assert problems_of(HEAD + "vendor: a\x07b\n") == [
            "q.yaml:2: not valid YAML: control character U+0007 is not allowed"]
