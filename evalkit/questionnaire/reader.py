"""The questionnaire's bounded YAML 1.2 reader: untrusted bytes -> plain data, with the line
of every field, or a QuestionnaireError naming file and line.

Vendor text is untrusted. The file is read as bounded bytes (`MAX_BYTES`), decoded as
UTF-8, composed with a bounded PyYAML composer (never `yaml.load`), and turned into plain
data by our own walker, which bounds alias expansion and nesting (`MAX_NODES`,
`MAX_DEPTH`) and remembers the line of every node, so that whoever checks the data
afterwards (`evalkit.questionnaire.check`) can name the line of every problem. Scalars
follow the YAML 1.2 core schema, not PyYAML's YAML 1.1 rules: `0200` is 200 (not octal
128), `2:50` and `1_000` are text (not 170 and 1000), `yes`/`on` are text, `2e2` is the
number 200.0. A questionnaire may be written as JSON, which is YAML too (but not indented
with tabs: PyYAML's scanner refuses them). Explicit tags (`!!int`, `!!python/...`, `!x`)
are refused, never constructed.

What the data means is not this module's business: it knows no field of the
questionnaire, only how to read one safely.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evalkit.errors import QuestionnaireError

#: A filled-in questionnaire is a few kilobytes; the bound keeps hostile files cheap to refuse
#: (PyYAML's pure-Python composer takes about 2 s on 256 KiB of tiny keys).
MAX_BYTES = 256 * 1024
#: Values in the document, and again after alias expansion; bounds "billion laughs"
#: documents. A filled-in questionnaire has a few hundred.
MAX_NODES = 5_000
#: Nesting depth; the schema needs 3, and recursive aliases would never end.
MAX_DEPTH = 20

#: where a value sits in the document: keys and list indexes from the top
FieldPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """A document read as plain data, with where each part of it was written."""

    #: the JSON-like value as read (a mapping, a list, text, a number, ...)
    data: object
    #: the line (1-based) of every path walked; the root's is its first line
    lines: dict[FieldPath, int]
    #: numbers as the vendor wrote them (`2e2`, `0x10`), to quote them back that way
    texts: dict[FieldPath, str]
    #: (line, "field.path: message") found while reading: written tags, duplicate or
    #: non-text keys, numbers Python cannot hold
    problems: list[tuple[int, str]]


def read_bounded(path: Path, what: str = "questionnaire", max_bytes: int = MAX_BYTES) -> bytes:
    """A file's bytes, at most `max_bytes` of them (a larger file is refused by its size,
    not read whole), or a QuestionnaireError naming it."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
            size = path.stat().st_size
    except OSError as exc:
        raise QuestionnaireError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if max(size, len(raw)) > max_bytes:
        raise QuestionnaireError(f"{path}: {max(size, len(raw)):,} bytes is too large for a "
                                 f"{what} (limit {max_bytes:,} bytes)")
    return raw


def read_document(raw: bytes, file: str, *, what: str = "questionnaire",
                  max_bytes: int = MAX_BYTES, max_nodes: int = MAX_NODES) -> Document:
    """Bytes -> a Document, or a QuestionnaireError naming `file` and the line (only a file
    over `max_bytes` is refused as a whole). Problems the walker can step over (a tag, a
    duplicate key) are collected in `Document.problems`, not raised, so that the caller
    reports them together with its own.

    `what` names the file in messages; another reader of the same YAML (a workload, whose
    empirical lists hold thousands of values) sets its own bounds."""
    if len(raw) > max_bytes:
        raise QuestionnaireError(
            f"{file}: {len(raw):,} bytes is too large for a {what} "
            f"(limit {max_bytes:,} bytes)")
    text = _decode(raw, file, what)
    node, explicit = _compose(text, file, what, max_nodes)
    if node is None:
        hint = (f"; start from `evalkit questionnaire init {file}`"
                if what == "questionnaire" else "")
        raise QuestionnaireError(f"{file}:1: the file is empty{hint}")
    walker = _Walker(explicit, max_nodes)
    try:
        data = walker.walk(node)
    except _TooBig as exc:
        raise _too_big(file, exc.line, what, max_nodes) from None
    return Document(data, walker.lines, walker.texts, walker.problems)


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

    def __init__(self, stream: str, max_nodes: int = MAX_NODES) -> None:
        super().__init__(stream)
        self._max_nodes = max_nodes
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
            if self._nodes > self._max_nodes or self._depth > MAX_DEPTH:
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

    def __init__(self, explicit: dict[int, str], max_nodes: int = MAX_NODES) -> None:
        self.explicit = explicit
        self.max_nodes = max_nodes
        self.lines: dict[FieldPath, int] = {}
        #: the scalar as written, by path, to quote numbers as the vendor wrote them
        self.texts: dict[FieldPath, str] = {}
        self.problems: list[tuple[int, str]] = []
        self.count = 0

    def problem(self, node: yaml.Node, path: FieldPath, message: str) -> None:
        self.problems.append((node.start_mark.line + 1, f"{dotted(path)}: {message}"))

    def refused_tag(self, node: yaml.Node, path: FieldPath) -> bool:
        """A tag written on the node is a problem. Every other node's tag is one
        `_BoundedLoader.resolve` gave (the core schema's, or seq and map), so only the
        written ones need checking."""
        tag = self.explicit.get(id(node))
        if tag is None:
            return False
        shown = "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag
        self.problem(node, path, f"YAML tags are not accepted (found {clip(shown, 80)}); "
                     "write the value plainly")
        return True

    def walk(self, node: yaml.Node, path: FieldPath = (), depth: int = 0) -> Any:
        self.count += 1
        if self.count > self.max_nodes or depth >= MAX_DEPTH:  # the root is depth 0: level 1
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

    def _mapping(self, node: yaml.MappingNode, path: FieldPath, depth: int) -> Any:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            self.count += 1
            if self.refused_tag(key_node, path):
                continue
            key = self._scalar(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                self.problem(key_node, path, f"field names must be text, got {clip(key)}")
                continue
            if key in out:
                self.problem(key_node, (*path, key), "appears twice")
                continue
            self.lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = self.walk(value_node, (*path, key), depth + 1)
        return out

    def _scalar(self, node: yaml.Node, path: FieldPath) -> Any:
        try:
            value = core_value(node.tag, node.value)
        except ValueError:
            self.problem(node, path, f"unreadable number {clip(node.value)}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.problem(node, path, f"expected a finite number, got {clip(node.value)}")
            return None
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:  # an escape such as "\ud800": no character
                self.problem(node, path, f"\\u{ord(value[exc.start]):04x} (a lone UTF-16 "
                             "surrogate, written as an escape) is no character; write the "
                             "character itself")
                return None
        return value


def _key(part: str) -> str:
    """A field name as it can be printed: vendor text may hold escapes for the terminal."""
    if part.isprintable() and len(part) <= 60 and part.strip() == part and part:
        return part
    return clip(part)


def dotted(path: FieldPath) -> str:
    """A path as the vendor reads it in a message (`Q2.distribution.p50`, `evidence[3]`),
    every key made printable."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{_key(part)}" if out else _key(part))
    return out or "(top level)"


def clip(value: object, limit: int = 60) -> str:
    """Vendor text quoted for a message: repr (escapes shown, never sent to the terminal)
    and cut to `limit` characters, so a hostile value cannot flood the error."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _decode(raw: bytes, file: str, what: str = "questionnaire") -> str:
    # UTF-16 without a BOM: ASCII text shows as one printable byte beside one NUL
    lead = raw[:2]
    ascii_in_utf16 = (len(lead) == 2 and lead.count(0) == 1
                      and (32 <= max(lead) < 127 or max(lead) in (9, 10, 13)))
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or ascii_in_utf16:
        raise QuestionnaireError(
            f"{file}:1: looks like UTF-16 text; save the {what} as UTF-8")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise QuestionnaireError(
            f"{file}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start}); save the {what} as UTF-8") from None


def _too_big(file: str, line: int, what: str = "questionnaire",
             max_nodes: int = MAX_NODES) -> QuestionnaireError:
    return QuestionnaireError(
        f"{file}:{line}: holds more than {max_nodes:,} values (YAML aliases expanded) or more "
        f"than {MAX_DEPTH} levels of nesting; a {what} is far smaller")


def _compose(text: str, file: str, what: str = "questionnaire",
             max_nodes: int = MAX_NODES) -> tuple[yaml.Node | None, dict[int, str]]:
    """The document's node graph and its explicitly tagged nodes, or a QuestionnaireError
    naming the line."""
    loader: _BoundedLoader | None = None
    try:  # the reader checks every character as the loader is made
        loader = _BoundedLoader(text, max_nodes)
        return loader.get_single_node(), loader.explicit
    except _TooBig as exc:
        raise _too_big(file, exc.line, what, max_nodes) from None
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
        raise QuestionnaireError(f"{file}:1: nested too deeply to be a {what}") from None
    finally:
        if loader is not None:
            loader.dispose()
