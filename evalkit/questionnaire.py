"""The vendor questionnaire (`evalkit.questionnaire/1`): read, validate, and template.

Vendor text is untrusted. The file is read as bounded bytes, decoded as UTF-8, composed
with a bounded PyYAML composer (never `yaml.load`), and turned into plain data by our own
walker, which bounds alias expansion and nesting and remembers the line of every node.
Scalars follow the YAML 1.2 core schema, not PyYAML's YAML 1.1 rules: `0200` is 200 (not
octal 128), `2:50` and `1_000` are text (not 170 and 1000), `yes`/`on` are text, `2e2` is
the number 200.0, and dates are text checked as YYYY-MM-DD. Explicit tags (`!!int`,
`!!python/...`, `!x`) are refused, never constructed. The plain data is validated with the
JSON Schema `SCHEMA` (shipped for vendors as `questionnaires/questionnaire.schema.json`;
"integer" here means a number written without a decimal point or exponent), and every
problem is reported at once as `file:line: field.path: message`, raised as one
`QuestionnaireError`.

Whether the numbers agree with each other (a p50 above its p90, percentiles out of order)
is not a file error but a finding about the vendor: `disorders` lists them, and the
reconciler shows them to the reviewer (docs/questionnaire.md).

    q = load_questionnaire("questionnaires/forthright.yaml")
    q.vendor, q.headline.value, q.q1.ttft_p90_ms
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from evalkit.errors import QuestionnaireError

SCHEMA_ID = "evalkit.questionnaire/1"

#: A filled-in questionnaire is a few kilobytes; the bound keeps hostile files cheap to refuse
#: (PyYAML's pure-Python composer takes about 2 s on 256 KiB of tiny keys).
MAX_BYTES = 256 * 1024
#: Values in the document, and again after alias expansion; bounds "billion laughs"
#: documents. A filled-in questionnaire has a few hundred.
MAX_NODES = 5_000
#: Nesting depth; the schema needs 3, and recursive aliases would never end.
MAX_DEPTH = 20

QUESTION_IDS = ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6")

QUESTION_TITLES = {
    "Q1": "TTFT at P50 and P90 under load",
    "Q2": "Sustained output tokens/s per GPU at the concurrency sold",
    "Q3": "Prefill and decode costs in pricing and capacity model",
    "Q4": "Maximum concurrent streams per node, and what degrades first",
    "Q5": "Per-stream observability",
    "Q6": "Production panel reconciled with the headline figure",
}

# ---------------------------------------------------------------------------- schema


def _nullable(type_: str, **extra: Any) -> dict[str, Any]:
    return {"type": [type_, "null"], **extra}


#: a measured latency or rate is never zero; a price may be
_NUM = _nullable("number", exclusiveMinimum=0, maximum=1e12)
_PRICE = _nullable("number", minimum=0, maximum=1e12)
_COUNT = _nullable("integer", minimum=1, maximum=1e9,
                   description="a whole number, written without a decimal point or exponent")
_TEXT = _nullable("string", maxLength=4000)
_SHORT = _nullable("string", maxLength=400)
#: an ISO 8601 calendar date; the loader also checks that the day exists
DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
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
    },
}

# ----------------------------------------------------------------------- the object


@dataclass(frozen=True)
class Distribution:
    """Percentiles of one quantity over a window, as the vendor reported them."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    window: str | None = None


@dataclass(frozen=True)
class Contact:
    """Who answers for the questionnaire."""

    name: str | None = None
    email: str | None = None
    role: str | None = None


@dataclass(frozen=True)
class Headline:
    """The marketed figure (value, unit) and where it was published."""

    value: float | None = None
    unit: str | None = None
    source: str | None = None
    published: str | None = None
    notes: str | None = None


@dataclass(frozen=True)
class Answer:
    """Fields every answer may carry: provenance and free text."""

    source: str | None = None
    evidence: tuple[str, ...] = ()
    notes: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields the vendor filled in (empty ones left out), for scorecard.json."""
        return dict(_prune(asdict(self)))


@dataclass(frozen=True)
class TtftAnswer(Answer):
    """Q1: TTFT p50/p90 under load."""

    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    at_concurrency: int | None = None
    prompt_tokens: int | None = None
    window: str | None = None


@dataclass(frozen=True)
class ThroughputAnswer(Answer):
    """Q2: sustained output tokens/s per GPU at the concurrency sold."""

    output_tokens_per_s_per_gpu: float | None = None
    at_concurrency: int | None = None
    gpus: int | None = None
    distribution: Distribution | None = None
    window: str | None = None


@dataclass(frozen=True)
class PricingAnswer(Answer):
    """Q3: prefill and decode in pricing and in the capacity model."""

    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    blended_price_per_mtok: float | None = None
    currency: str | None = None
    capacity_model: str | None = None
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s_per_stream: float | None = None


@dataclass(frozen=True)
class ConcurrencyAnswer(Answer):
    """Q4: maximum concurrent streams per node, and what degrades first."""

    max_concurrent_streams_per_node: int | None = None
    nodes: int | None = None
    first_degrades: str | None = None
    window: str | None = None


@dataclass(frozen=True)
class ObservabilityAnswer(Answer):
    """Q5: per-stream inter-arrival times, or only request-level histograms."""

    observability: str | None = None
    export: str | None = None
    metrics_url: str | None = None


@dataclass(frozen=True)
class PanelAnswer(Answer):
    """Q6: last week's production panel and its written reconciliation with the headline."""

    output_tokens_per_s: Distribution | None = None
    latency_s: Distribution | None = None
    window: str | None = None
    panel_url: str | None = None
    reconciliation: str | None = None


@dataclass(frozen=True)
class Questionnaire:
    """One vendor's validated questionnaire; every field may be empty (`None`)."""

    vendor: str | None = None
    model: str | None = None
    endpoint: str | None = None
    date: str | None = None
    contact: Contact = field(default_factory=Contact)
    headline: Headline = field(default_factory=Headline)
    q1: TtftAnswer = field(default_factory=TtftAnswer)
    q2: ThroughputAnswer = field(default_factory=ThroughputAnswer)
    q3: PricingAnswer = field(default_factory=PricingAnswer)
    q4: ConcurrencyAnswer = field(default_factory=ConcurrencyAnswer)
    q5: ObservabilityAnswer = field(default_factory=ObservabilityAnswer)
    q6: PanelAnswer = field(default_factory=PanelAnswer)
    #: where it was read from (the report embeds that file), None when built in memory
    path: str | None = None

    @property
    def questions(self) -> dict[str, Answer]:
        """Q1..Q6 by id, in order."""
        return {"Q1": self.q1, "Q2": self.q2, "Q3": self.q3,
                "Q4": self.q4, "Q5": self.q5, "Q6": self.q6}


def _prune(value: Any) -> Any:
    """Drop empty fields recursively so 'claimed' shows only what the vendor said."""
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, (), [], {})}
    if isinstance(value, list | tuple):
        return [_prune(v) for v in value]
    return value


_ANSWER_TYPES: dict[str, type[Answer]] = {
    "Q1": TtftAnswer, "Q2": ThroughputAnswer, "Q3": PricingAnswer,
    "Q4": ConcurrencyAnswer, "Q5": ObservabilityAnswer, "Q6": PanelAnswer,
}
_DISTRIBUTION_FIELDS = {"distribution", "output_tokens_per_s", "latency_s"}


def _answer(cls: type[Answer], data: dict[str, Any] | None) -> Answer:
    kwargs: dict[str, Any] = {}
    for key, value in (data or {}).items():
        if key in _DISTRIBUTION_FIELDS:
            value = Distribution(**value) if value is not None else None
        elif key == "evidence":
            value = tuple(value or ())
        kwargs[key] = value
    return cls(**kwargs)


def questionnaire_from_dict(data: dict[str, Any], path: str | None = None) -> Questionnaire:
    """Build the object from data that already passed the schema."""
    answers: dict[str, Any] = {qid.lower(): _answer(cls, data.get(qid))
                               for qid, cls in _ANSWER_TYPES.items()}
    return Questionnaire(
        vendor=data.get("vendor"), model=data.get("model"),
        endpoint=data.get("endpoint"), date=data.get("date"),
        contact=Contact(**(data.get("contact") or {})),
        headline=Headline(**(data.get("headline") or {})),
        path=path,
        **answers,
    )


def _figure(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e6 else f"{x:.3g}"


def disorders(answer: Answer) -> list[str]:
    """Where one answer's own percentiles contradict each other (a p50 above its p90, a
    distribution not in increasing order), one sentence each; [] when they agree.

    Not a file error: a well-formed file may say inconsistent things, and that is a
    finding about the vendor, which the reconciler reports whatever else it judges.
    """
    found: list[str] = []
    if isinstance(answer, TtftAnswer):
        p50, p90 = answer.ttft_p50_ms, answer.ttft_p90_ms
        if p50 is not None and p90 is not None and p50 > p90:
            found.append(f"TTFT p50 {_figure(p50)} ms is above p90 {_figure(p90)} ms")
    for name in sorted(_DISTRIBUTION_FIELDS):
        d = getattr(answer, name, None)
        if not isinstance(d, Distribution):
            continue
        values = [v for v in (d.p50, d.p90, d.p99) if v is not None]
        if values != sorted(values):
            said = " / ".join(f"{k} {_figure(v)}" for k in ("p50", "p90", "p99")
                              if (v := getattr(d, k)) is not None)
            found.append(f"{name} {said} is not in increasing order")
    return found

# ------------------------------------------------------------------- reading safely


class _TooBig(Exception):
    """Alias expansion or nesting went past the bounds (at `line`)."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_SEQ, _MAP = _TAG + "seq", _TAG + "map"

# The YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1023-core-schema), for plain
# (unquoted) scalars; anything else is text. ASCII digits only: `[0-9]`, not `\d`.
_CORE_NULL = {"", "~", "null", "Null", "NULL"}
_CORE_BOOL = {"true": True, "True": True, "TRUE": True,
              "false": False, "False": False, "FALSE": False}
_CORE_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_CORE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                         r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")


def core_tag(plain: str) -> str:
    """The YAML 1.2 core-schema tag of a plain scalar."""
    if plain in _CORE_NULL:
        return _NULL
    if plain in _CORE_BOOL:
        return _BOOL
    if _CORE_INT.fullmatch(plain):
        return _INT
    if _CORE_FLOAT.fullmatch(plain):
        return _FLOAT
    return _STR


def core_value(tag: str, text: str) -> Any:
    """A scalar's value under the core schema (raises ValueError for a number Python will
    not convert, e.g. an integer of more than 4,300 digits)."""
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return _CORE_BOOL[text]
    if tag == _INT:
        if text.startswith(("0o", "0x")):
            return int(text[2:], 8 if text[1] == "o" else 16)
        return int(text)  # base 10: "0200" is 200, YAML 1.2 has no implicit octal
    if tag == _FLOAT:
        special = text.lstrip("+-").lower()
        if special in (".inf", ".nan"):
            return math.nan if special == ".nan" else -math.inf if text[0] == "-" else math.inf
        return float(text)
    return text


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's scanner, parser and composer, with YAML 1.2 core-schema resolution, bounds
    on node count and nesting (MAX_NODES, MAX_DEPTH), and every explicit tag noted by node
    so the walker can refuse it (PyYAML's own constructors crash on `!!bool maybe`)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._nodes = 0
        self._depth = 0
        #: id(node) -> the tag written on it (a tag, any tag, is refused)
        self.explicit: dict[int, str] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            return core_tag(value) if implicit[0] else _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._nodes += 1
        self._depth += 1
        try:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            if self._nodes > MAX_NODES or self._depth > MAX_DEPTH:
                raise _TooBig(event.start_mark.line + 1)
            tag = getattr(event, "tag", None)
            node = super().compose_node(parent, index)
            if tag is not None:
                self.explicit[id(node)] = tag
            return node
        finally:
            self._depth -= 1


class _Walker:
    """Node graph -> plain data, with a line for every path and bounds on size."""

    def __init__(self, explicit: dict[int, str]) -> None:
        self.explicit = explicit
        self.lines: dict[tuple[str | int, ...], int] = {}
        #: the scalar as written, by path, to quote numbers as the vendor wrote them
        self.texts: dict[tuple[str | int, ...], str] = {}
        self.problems: list[tuple[int, str]] = []
        self.count = 0

    def problem(self, node: yaml.Node, path: tuple[str | int, ...], message: str) -> None:
        self.problems.append((node.start_mark.line + 1, f"{_dotted(path)}: {message}"))

    def refused_tag(self, node: yaml.Node, path: tuple[str | int, ...]) -> bool:
        """A tag written on the node is a problem. Every other node's tag is one
        `_BoundedLoader.resolve` gave (the core schema's, or seq and map), so only the
        written ones need checking."""
        tag = self.explicit.get(id(node))
        if tag is None:
            return False
        shown = "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag
        self.problem(node, path, f"YAML tags are not accepted (found {_clip(shown, 80)}); "
                     "write the value plainly")
        return True

    def walk(self, node: yaml.Node, path: tuple[str | int, ...] = (), depth: int = 0) -> Any:
        self.count += 1
        if self.count > MAX_NODES or depth >= MAX_DEPTH:  # the root is depth 0: level 1
            raise _TooBig(node.start_mark.line + 1)
        self.lines.setdefault(path, node.start_mark.line + 1)
        if self.refused_tag(node, path):
            return None
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        value = self._scalar(node, path)
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.texts[path] = node.value
        return value

    def _mapping(self, node: yaml.MappingNode, path: tuple[str | int, ...], depth: int) -> Any:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            self.count += 1
            if self.refused_tag(key_node, path):
                continue
            key = self._scalar(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                self.problem(key_node, path, f"field names must be text, got {_clip(key)}")
                continue
            if key in out:
                self.problem(key_node, (*path, key), "appears twice")
                continue
            self.lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = self.walk(value_node, (*path, key), depth + 1)
        return out

    def _scalar(self, node: yaml.Node, path: tuple[str | int, ...]) -> Any:
        try:
            value = core_value(node.tag, node.value)
        except ValueError:
            self.problem(node, path, f"unreadable number {_clip(node.value)}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.problem(node, path, f"expected a finite number, got {_clip(node.value)}")
            return None
        return value


def _key(part: str) -> str:
    """A field name as it can be printed: vendor text may hold escapes for the terminal."""
    if part.isprintable() and len(part) <= 60 and part.strip() == part and part:
        return part
    return _clip(part)


def _dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{_key(part)}" if out else _key(part))
    return out or "(top level)"


def _clip(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _decode(raw: bytes, file: str) -> str:
    # UTF-16 without a BOM: ASCII text shows as one printable byte beside one NUL
    lead = raw[:2]
    ascii_in_utf16 = (len(lead) == 2 and lead.count(0) == 1
                      and (32 <= max(lead) < 127 or max(lead) in (9, 10, 13)))
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or ascii_in_utf16:
        raise QuestionnaireError(
            f"{file}:1: looks like UTF-16 text; save the questionnaire as UTF-8")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise QuestionnaireError(
            f"{file}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start}); save the questionnaire as UTF-8") from None


def _too_big(file: str, line: int) -> QuestionnaireError:
    return QuestionnaireError(
        f"{file}:{line}: holds more than {MAX_NODES:,} values (YAML aliases expanded) or more "
        f"than {MAX_DEPTH} levels of nesting; a questionnaire is far smaller")


def _compose(text: str, file: str) -> tuple[yaml.Node | None, dict[int, str]]:
    """The document's node graph and its explicitly tagged nodes, or a QuestionnaireError
    naming the line."""
    loader: _BoundedLoader | None = None
    try:  # the reader checks every character as the loader is made
        loader = _BoundedLoader(text)
        return loader.get_single_node(), loader.explicit
    except _TooBig as exc:
        raise _too_big(file, exc.line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        what = ", ".join(t for t in (exc.context, exc.problem) if t) or "malformed YAML"
        raise QuestionnaireError(f"{file}:{line}: not valid YAML: {what}") from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1])
        raise QuestionnaireError(f"{file}:{line}: not valid YAML: control character "
                                 f"U+{code:04X} is not allowed") from None
    except yaml.YAMLError as exc:
        raise QuestionnaireError(f"{file}:1: not valid YAML: {str(exc)[:200]}") from None
    except RecursionError:
        raise QuestionnaireError(f"{file}:1: nested too deeply to be a questionnaire") from None
    finally:
        if loader is not None:
            loader.dispose()


# ---------------------------------------------------------------- schema messages

_TYPE_WORDS = {"number": "a number", "integer": "a whole number", "string": "text",
               "array": "a list", "object": "a mapping", "boolean": "true or false"}

#: text a vendor meant as a number: YAML 1.1 read `2:50` as 170 and `1_000` as 1000
_NUMBERISH = re.compile(r"[-+]?[0-9][0-9_:,.]*")


def _is_integer(_checker: Any, value: Any) -> bool:
    """An integer is a number written without a decimal point or exponent: `4.0` and `2e2`
    are floats, refused where a count is asked (JSON Schema alone would take 4.0)."""
    return isinstance(value, int) and not isinstance(value, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


def _got(value: Any, text: str | None = None) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if text is not None:  # the walker keeps the text of numbers only
        return _clip(text)[1:-1]  # the number as written (2e2, 0x10), not as Python prints it
    return _clip(value)


def _message(error: jsonschema.ValidationError, text: str | None = None) -> str:
    v, inst = error.validator, error.instance
    got = _got(inst, text)
    if v in ("type", "pattern") and error.schema.get("pattern") == DATE_PATTERN:
        return f"expected a date as YYYY-MM-DD (ISO 8601), got {got}"
    if v == "type":
        wanted = [t for t in ([error.validator_value] if isinstance(error.validator_value, str)
                              else error.validator_value) if t != "null"]
        hint = ""
        if "integer" in wanted and isinstance(inst, float):
            hint = " (a count is written without a decimal point or exponent)"
        elif (set(wanted) & {"number", "integer"} and isinstance(inst, str)
              and _NUMBERISH.fullmatch(inst) and set(inst) & set("_:,")):
            hint = " (write the number as plain digits, without ',', '_' or ':')"
        return f"expected {' or '.join(_TYPE_WORDS.get(t, t) for t in wanted)}, got {got}{hint}"
    if v == "enum":
        options = ", ".join(str(o) for o in error.validator_value if o is not None)
        return f"expected one of {options}; got {got}"
    if v == "const":
        return f"expected {error.validator_value!r}, got {got}"
    if v == "minimum":
        return f"must be at least {error.validator_value}, got {got}"
    if v == "maximum":
        return f"must be at most {error.validator_value:g}, got {got}"
    if v == "exclusiveMinimum":
        return f"must be greater than {error.validator_value}, got {got}"
    if v == "maxLength":
        return f"text longer than {error.validator_value} characters"
    if v == "maxItems":
        return f"more than {error.validator_value} items"
    return str(error.message)[:200]


def _schema_problems(data: Any, lines: dict[tuple[str | int, ...], int],
                     texts: dict[tuple[str | int, ...], str]) -> Iterator[tuple[int, str]]:
    # every path in `data` was walked, so each has a line (the root's is its first)
    validator = _Validator(SCHEMA)
    for error in validator.iter_errors(data):
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema["properties"]
            for key in error.instance:
                if key not in known:
                    where = (*path, key)
                    yield lines[where], f"{_dotted(where)}: unknown field"
            continue
        if error.validator == "required":
            for key in error.validator_value:
                if key not in error.instance:
                    yield lines[path], f"{_dotted((*path, key))}: required field missing"
            continue
        yield lines[path], f"{_dotted(path)}: {_message(error, texts.get(path))}"


#: fields that hold a date (DATE_PATTERN in the schema; here, that the day exists)
_DATE_FIELDS = (("date",), ("headline", "published"))


def _date_problems(data: dict[str, Any], lines: dict[tuple[str | int, ...], int]) -> Iterator[
        tuple[int, str]]:
    for path in _DATE_FIELDS:
        value: Any = data
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, str) and re.fullmatch(DATE_PATTERN, value):
            try:
                dt.date.fromisoformat(value)
            except ValueError:
                yield lines[path], f"{_dotted(path)}: {value!r} is not a calendar date"


def parse_questionnaire(raw: bytes, file: str = "<questionnaire>") -> Questionnaire:
    """Bytes -> Questionnaire, or one QuestionnaireError listing every problem found.

    Every problem names `file:line:` (only a file over MAX_BYTES is refused as a whole).
    """
    if len(raw) > MAX_BYTES:
        raise QuestionnaireError(
            f"{file}: {len(raw):,} bytes is too large for a questionnaire "
            f"(limit {MAX_BYTES:,} bytes)")
    text = _decode(raw, file)
    node, explicit = _compose(text, file)
    if node is None:
        raise QuestionnaireError(f"{file}:1: the file is empty; start from "
                                 f"`evalkit questionnaire init {file}`")
    walker = _Walker(explicit)
    try:
        data = walker.walk(node)
    except _TooBig as exc:
        raise _too_big(file, exc.line) from None
    problems = list(walker.problems)
    if not isinstance(data, dict):
        problems.append((1, f"(top level): expected a mapping of fields, got {_got(data)}"))
    else:
        problems.extend(_schema_problems(data, walker.lines, walker.texts))
        problems.extend(_date_problems(data, walker.lines))
    if problems:
        problems.sort(key=lambda p: p[0])
        lines = [f"{file}:{line}: {msg}" for line, msg in problems]
        count = len(lines)
        raise QuestionnaireError(
            f"{file}: {count} problem{'s' if count != 1 else ''} in the questionnaire", lines)
    return questionnaire_from_dict(data, path=file)


def load_questionnaire(path: str | Path) -> Questionnaire:
    """Read a questionnaire file; any problem is a QuestionnaireError naming file and line."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
            size = p.stat().st_size
    except OSError as exc:
        raise QuestionnaireError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if size > MAX_BYTES:
        raise QuestionnaireError(
            f"{p}: {size:,} bytes is too large for a questionnaire (limit {MAX_BYTES:,} bytes)")
    return parse_questionnaire(raw, str(p))


# ------------------------------------------------------------------------ template

TEMPLATE = """\
# evalkit vendor capacity questionnaire (schema evalkit.questionnaire/1)
#
# Six questions about how your endpoint behaves when it STREAMS to many users at once.
# A measured answer has: numbers (the unit is in each field name), the concurrency they
# hold at, where they were measured (source: production | lab | estimate), the time
# window, and evidence (links or document names). Only numbers measured on live
# production traffic count where a question asks for production.
#
# Leave a field empty rather than write words in a number field: "industry-leading",
# "varies" or "contact sales" is recorded as not answered with numbers. Put caveats
# in `notes`. Check the file with:  evalkit questionnaire validate THIS_FILE
# A JSON Schema for editors ships as questionnaires/questionnaire.schema.json.
#
# The file is read as YAML 1.2: numbers are plain digits (0200 is 200, 2e2 is 200.0;
# 2:50 and 1_000 are not numbers), counts have no decimal point (4, not 4.0), dates are
# YYYY-MM-DD, and YAML tags (!!int, !!str, ...) are refused. (evalkit: docs/questionnaire.md)

schema: evalkit.questionnaire/1
vendor:            # company name
model:             # the model this quote is for, as named on the endpoint
endpoint:          # base URL of the OpenAI-compatible endpoint we will measure
date:              # date of these answers, YYYY-MM-DD
contact:
  name:
  email:
  role:

# The figure you market (e.g. "1,107 output tokens/s") and where it was published.
headline:
  value:           # number
  unit:            # output_tokens_per_s (per stream) | output_tokens_per_s_per_gpu
                   # | output_tokens_per_s_per_node
  source:          # URL or document where the figure is published
  published:       # date published, YYYY-MM-DD
  notes:

# Q1. Time to first token at P50 and P90 UNDER LOAD, not in isolation.
# Measured answer: both percentiles in ms, at a stated concurrency above 1, from production.
# We check it against our TTFT p50/p90 at the nearest concurrency we measured.
Q1:
  ttft_p50_ms:     # milliseconds
  ttft_p90_ms:     # milliseconds
  at_concurrency:  # concurrent streams the figures hold at
  prompt_tokens:   # typical prompt length behind the figures
  source:          # production | lab | estimate
  window:          # e.g. "2026-11-16 to 2026-11-22"
  evidence: []     # links or document names
  notes:

# Q2. Sustained output-token throughput per GPU at the concurrency you sell, and the
# measured production distribution behind it.
# We check the implied per-stream rate and the endpoint's aggregate rate at that
# concurrency (per GPU x GPUs) against ours.
Q2:
  output_tokens_per_s_per_gpu:   # sustained, not peak
  at_concurrency:  # concurrent streams on those GPUs
  gpus:            # GPUs behind the endpoint we measure
  distribution:    # output tokens/s per GPU over the window
    p50:
    p90:
    p99:
    window:
  source:          # production | lab | estimate
  window:
  evidence: []
  notes:

# Q3. How prefill (input) and decode (output) costs appear separately in pricing and in
# your capacity model. A single blended price does not answer it.
Q3:
  input_price_per_mtok:     # price per million input tokens
  output_price_per_mtok:    # price per million output tokens
  blended_price_per_mtok:   # only if you also quote one
  currency:                 # e.g. USD
  capacity_model:           # how prefill and decode each consume capacity, in words
  prefill_tokens_per_s:     # input tokens/s one request is prefilled at
  decode_tokens_per_s_per_stream:   # output tokens/s one stream decodes at
  source:          # production | lab | estimate
  evidence: []
  notes:

# Q4. Maximum concurrent streaming sessions per node, and what degrades first near the
# limit: inter-token latency (itl), time to first token (ttft), or admission (requests
# refused or queued). A load test (source: lab) counts here; an estimate does not.
# We check it against our concurrency ramp: where it held, where it broke, and on what.
Q4:
  max_concurrent_streams_per_node:
  nodes:           # nodes behind the endpoint we measure
  first_degrades:  # itl | ttft | admission
  source:          # production | lab | estimate
  window:
  evidence: []
  notes:

# Q5. Does your observability expose per-stream token inter-arrival times, or only
# request-level latency histograms? And how is it exported (Prometheus, OTLP, ...)?
Q5:
  observability:   # per_stream | request_level | none
  export:          # how we can read it, e.g. "Prometheus /metrics, histogram itl_seconds"
  metrics_url:
  evidence: []
  notes:

# Q6. What your own live production panel showed last week, reconciled with the
# headline figure. If the headline is much higher than the panel's median, write the
# reconciliation: what differs (concurrency, prompt length, caching, hardware...).
Q6:
  output_tokens_per_s:   # per-request output tokens/s on the panel
    p50:
    p90:
    p99:
  latency_s:             # end-to-end request latency on the panel, seconds
    p50:
    p90:
    p99:
  window:          # e.g. "last 7 days to 2026-11-22"
  panel_url:
  source:          # production | lab | estimate
  reconciliation:  # in words: why the headline and the panel differ
  evidence: []
  notes:
"""


def write_template(path: str | Path) -> Path:
    """Write the commented blank questionnaire; refuses to overwrite an existing file."""
    p = Path(path)
    try:
        with p.open("x", encoding="utf-8") as fh:
            fh.write(TEMPLATE)
    except FileExistsError:
        raise QuestionnaireError(f"{p}: already exists; not overwriting it") from None
    except OSError as exc:
        raise QuestionnaireError(f"{p}: cannot write: {exc.strerror or exc}") from None
    return p
