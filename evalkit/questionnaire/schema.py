"""The questionnaire's schema (`evalkit.questionnaire/1`): its questions and the JSON Schema
every file must meet.

`SCHEMA` is the contract vendors get: it ships as `questionnaires/questionnaire.schema.json`
(a test keeps the two equal) for their editors, and `evalkit.questionnaire.check` checks
every file against it. "integer" here means a number written without a decimal point or
exponent (the checker's type rule, not JSON Schema's, which would take 4.0).
"""

from __future__ import annotations

from typing import Any

SCHEMA_ID = "evalkit.questionnaire/1"

QUESTION_IDS = ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6")

QUESTION_TITLES = {
    "Q1": "TTFT at P50 and P90 under load",
    "Q2": "Sustained output tokens/s per GPU at the concurrency sold",
    "Q3": "Prefill and decode costs in pricing and capacity model",
    "Q4": "Maximum concurrent streams per node, and what degrades first",
    "Q5": "Per-stream observability",
    "Q6": "Production panel reconciled with the headline figure",
}

#: not one of the six questions: an optional section, reconciled on its own row
RATE_LIMITS_TITLE = "Rate limits: requests and tokens per minute, concurrent streams per key"
RATE_LIMIT_SCOPES = ("per_key", "per_organisation")
#: a voice claim's turn detection (the probe's --turn-detection, server-vad | client)
VOICE_TURN_DETECTION = ("server_vad", "client")
#: what a voice claim says degrades first: the voice run's own signals
#: (`evalkit.analysis.summary_voice.VOICE_METRICS`, which a test keeps equal)
VOICE_FIRST_DEGRADES = ("ttfa", "underruns", "admission", "failures")


def _nullable(type_: str, **extra: Any) -> dict[str, Any]:
    return {"type": [type_, "null"], **extra}


#: a measured latency or rate is never zero; a price may be
_NUM = _nullable("number", exclusiveMinimum=0, maximum=1e12)
_PRICE = _nullable("number", minimum=0, maximum=1e12)
_COUNT = _nullable("integer", minimum=1, maximum=1e9,
                   description="a whole number, written without a decimal point or exponent")
_TEXT = _nullable("string", maxLength=4000)
_SHORT = _nullable("string", maxLength=400)
#: an ISO 8601 calendar date and nothing after it; the loader also checks that the day
#: exists. `(?!\n)`: Python's `$` (jsonschema's) also matches before a final newline, so
#: `"2026-02-30\n"` or a block literal would pass; ECMA-262's `$` (editors') does not
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$(?!\n)"
_DATE = _nullable("string", pattern=DATE_PATTERN, format="date",
                  description="a calendar date, YYYY-MM-DD")
_SOURCE = {
    "enum": ["production", "lab", "estimate", None],
    "description": "production = measured on live traffic; lab = a benchmark or load test; "
    "estimate = not measured",
}
_EVIDENCE = {
    "type": ["array", "null"],
    "maxItems": 50,
    "items": {"type": "string", "maxLength": 2000},
    "description": "links or document names that back the numbers",
}


def _distribution(unit: str) -> dict[str, Any]:
    return {
        "type": ["object", "null"],
        "additionalProperties": False,
        "description": f"percentiles of {unit} over a window",
        "properties": {"p50": _NUM, "p90": _NUM, "p99": _NUM, "window": _SHORT},
    }


def _section(description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": ["object", "null"],
        "additionalProperties": False,
        "description": description,
        "properties": properties,
    }


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://evalkit.invalid/schemas/questionnaire-1.json",
    "title": "evalkit vendor capacity questionnaire (evalkit.questionnaire/1)",
    "description": "A vendor's answers to the six streaming-capacity questions. Numbers "
    "carry their unit in the field name; leave a field empty rather than write words in it. "
    "The file is read as YAML 1.2 (0200 is 200; 2:50 and 1_000 are text, not numbers) and "
    "YAML tags (!!int, !!str, ...) are refused; see docs/questionnaire.md.",
    "type": "object",
    "additionalProperties": False,
    "required": ["schema"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "vendor": _SHORT,
        "model": _SHORT,
        "endpoint": _SHORT,
        "date": _DATE,
        "contact": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {"name": _SHORT, "email": _SHORT, "role": _SHORT},
        },
        "headline": _section("the marketed speed figure and where it was published", {
            "value": _NUM,
            "unit": {"enum": ["output_tokens_per_s", "output_tokens_per_s_per_gpu",
                              "output_tokens_per_s_per_node", None]},
            "source": _TEXT,
            "published": _DATE,
            "notes": _TEXT,
        }),
        "Q1": _section(QUESTION_TITLES["Q1"], {
            "ttft_p50_ms": _NUM,
            "ttft_p90_ms": _NUM,
            "at_concurrency": _COUNT,
            "prompt_tokens": _COUNT,
            "source": _SOURCE,
            "window": _SHORT,
            # a voice product's claim (realtime speech sessions): what a caller waits
            "voice_ttfa_p50_ms": _NUM,
            "voice_ttfa_p90_ms": _NUM,
            "voice_at_calls": _COUNT,
            "voice_turn_detection": {
                "enum": [*VOICE_TURN_DETECTION, None],
                "description": "who ends the caller's turn in the claim: your server VAD "
                               "(server_vad) or the client committing the audio (client)"},
            "voice_silence_ms": _COUNT,
            "evidence": _EVIDENCE,
            "notes": _TEXT,
        }),
        "Q2": _section(QUESTION_TITLES["Q2"], {
            "output_tokens_per_s_per_gpu": _NUM,
            "at_concurrency": _COUNT,
            "gpus": _COUNT,
            "distribution": _distribution("output tokens/s per GPU"),
            "source": _SOURCE,
            "window": _SHORT,
            "evidence": _EVIDENCE,
            "notes": _TEXT,
        }),
        "Q3": _section(QUESTION_TITLES["Q3"], {
            "input_price_per_mtok": _PRICE,
            "output_price_per_mtok": _PRICE,
            "blended_price_per_mtok": _PRICE,
            "price_per_gpu_hour": _PRICE,
            # audio, for a realtime voice product: per minute of audio, or per million
            # audio tokens with the audio tokens one second of audio counts as
            "audio_input_price_per_minute": _PRICE,
            "audio_output_price_per_minute": _PRICE,
            "audio_input_price_per_mtok": _PRICE,
            "audio_output_price_per_mtok": _PRICE,
            "audio_input_tokens_per_s": _NUM,
            "audio_output_tokens_per_s": _NUM,
            "currency": _SHORT,
            "capacity_model": _TEXT,
            "prefill_tokens_per_s": _NUM,
            "decode_tokens_per_s_per_stream": _NUM,
            "source": _SOURCE,
            "evidence": _EVIDENCE,
            "notes": _TEXT,
        }),
        "Q4": _section(QUESTION_TITLES["Q4"], {
            "max_concurrent_streams_per_node": _COUNT,
            "nodes": _COUNT,
            "first_degrades": {"enum": ["itl", "ttft", "admission", None]},
            # a voice product's limit: concurrent realtime calls, and what a caller
            # suffers first near it
            "voice_max_calls_per_node": _COUNT,
            "voice_first_degrades": {"enum": [*VOICE_FIRST_DEGRADES, None]},
            "source": _SOURCE,
            "window": _SHORT,
            "evidence": _EVIDENCE,
            "notes": _TEXT,
        }),
        "Q5": _section(QUESTION_TITLES["Q5"], {
            "observability": {"enum": ["per_stream", "request_level", "none", None]},
            "export": _TEXT,
            "metrics_url": _SHORT,
            "evidence": _EVIDENCE,
            "notes": _TEXT,
        }),
        "Q6": _section(QUESTION_TITLES["Q6"], {
            "output_tokens_per_s": _distribution("per-request output tokens/s"),
            "latency_s": _distribution("end-to-end request latency in seconds"),
            "window": _SHORT,
            "panel_url": _SHORT,
            "source": _SOURCE,
            "reconciliation": _TEXT,
            "evidence": _EVIDENCE,
            "notes": _TEXT,
        }),
        # read by the workload stage (evalkit.workload.load), which checks every field
        # with this file's lines: the questionnaire only holds it
        "workload": {
            "type": ["object", "null"],
            "description": "The workload your claims hold for (prompt and output lengths, "
                           "sessions, agent loops), in the form of a workload file "
                           "(docs/workloads.md): `probe --questionnaire` runs it, and the "
                           "scorecard says which figures come from it.",
        },
        "rate_limits": _section(RATE_LIMITS_TITLE, {
            "requests_per_minute": _COUNT,
            "tokens_per_minute": _COUNT,
            "input_tokens_per_minute": _COUNT,
            "output_tokens_per_minute": _COUNT,
            "concurrent_streams_per_key": _COUNT,
            "scope": {"enum": [*RATE_LIMIT_SCOPES, None],
                      "description": "whom the limits apply to: one API key, or the whole "
                      "organisation's keys together"},
            "source": _SOURCE,
            "evidence": _EVIDENCE,
            "notes": _TEXT,
        }),
    },
}
