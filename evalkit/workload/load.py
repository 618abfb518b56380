"""A workload file (YAML or JSON) read into a checked `Workload`, every problem at once.

The buyer's file is read with the questionnaire's bounded YAML 1.2 reader (the line of
every field; tags, aliases and nesting bounded), then checked field by field here
(`evalkit.workload.fields`), so each problem is `file:line: field.path: message`, raised
as one WorkloadError. Unknown keys are errors: a typo (`think_time: 2`) must not quietly
become a workload without think time. The schema is docs/workloads.md's.

`workload_from_document` checks a workload already read as part of another document (a
questionnaire's `workload:`), naming the lines of that document.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from evalkit.errors import QuestionnaireError, WorkloadError
from evalkit.questionnaire.reader import (
    Document,
    FieldPath,
    dotted,
    read_bounded,
    read_document,
)
from evalkit.workload.conversations import load_conversations
from evalkit.workload.fields import (
    SECONDS,
    STEPS,
    SYSTEM_TOKENS,
    TOKENS,
    Bounds,
    Checker,
    problems_error,
)
from evalkit.workload.model import Agent, Conversations, Session, Shape, Single, Workload

#: a workload is a page of YAML; an empirical list or two of 10,000 values still fits
MAX_BYTES = 256 * 1024
#: values in the file (aliases expanded): two full empirical lists and the rest
MAX_NODES = 25_000
MAX_SHAPES = 64
MAX_LEVELS = 64
MAX_CONCURRENCY = 4096
#: units started per level, and a level's length (a day)
UNITS = Bounds(1, 1_000_000, True, "units")
DURATION = Bounds(0, 86_400, False, "seconds")
WEIGHT = Bounds(0, 1_000_000, False, "")
LEVEL = Bounds(1, MAX_CONCURRENCY, True, "users")

TOP_FIELDS = ("name", "concurrency", "duration_s", "units", "shapes")
KINDS = ("single", "session", "agent", "conversations")
COMMON_FIELDS = ("name", "kind", "weight")

#: each kind's fields: name -> (bounds, required); the names are the model's fields.
#: `system_prompt_tokens` is one number (one text every session shares), `file` a path.
KIND_FIELDS: dict[str, dict[str, tuple[Bounds | None, bool]]] = {
    "single": {"prompt_tokens": (TOKENS, True), "output_tokens": (TOKENS, True)},
    "session": {"turns": (STEPS, True), "system_prompt_tokens": (SYSTEM_TOKENS, True),
                "user_tokens": (TOKENS, True), "output_tokens": (TOKENS, True),
                "think_time_s": (SECONDS, False)},
    "agent": {"steps": (STEPS, True), "prompt_tokens": (TOKENS, True),
              "tool_result_tokens": (TOKENS, True), "output_tokens": (TOKENS, True),
              "tool_latency_s": (SECONDS, False)},
    "conversations": {"file": (None, True), "output_tokens": (TOKENS, False),
                      "think_time_s": (SECONDS, False)},
}
_MODELS: dict[str, Any] = {"single": Single, "session": Session, "agent": Agent}


def load_workload(path: Path) -> Workload:
    """Read a workload file; any problem is one WorkloadError naming file, line and field.
    Its conversations files are read relative to it."""
    p = Path(path)
    try:
        raw = read_bounded(p, "workload", MAX_BYTES)
    except QuestionnaireError as exc:
        raise WorkloadError(str(exc), [str(exc)]) from None
    return parse_workload(raw, str(p), p.parent)


def parse_workload(raw: bytes, file: str, base_dir: Path) -> Workload:
    """Bytes -> Workload (the source: the file's name and SHA-256)."""
    if file.lower().endswith(".json"):
        # JSON is YAML 1.2, but PyYAML refuses tab indentation; a tab is never inside a
        # valid JSON string (it is written \t), so as a space it changes no value or line
        raw = raw.replace(b"\t", b" ")
    try:
        doc = read_document(raw, file, what="workload", max_bytes=MAX_BYTES,
                            max_nodes=MAX_NODES)
    except QuestionnaireError as exc:
        raise WorkloadError(str(exc), [str(exc)]) from None
    source = {"name": Path(file).name, "sha256": hashlib.sha256(raw).hexdigest()}
    return workload_from_document(doc, file, base_dir, source=source)


def workload_from_document(doc: Document, file: str, base_dir: Path, prefix: FieldPath = (),
                           *, source: dict[str, Any] | None = None,
                           confined: bool = False) -> Workload:
    """The workload at `prefix` in `doc` (the whole document when empty), or one
    WorkloadError with every problem, named by `doc`'s lines and the full field path
    (`workload.shapes[1].turns`). The reader's own problems (tags, duplicate keys) are
    included where they lie inside it. `confined`: a conversations file must lie inside
    `base_dir` (a vendor's questionnaire must not make the probe send the buyer's files)."""
    check = Checker.of(doc, prefix)
    here = dotted(prefix) if prefix else ""
    check.found.extend((line, msg) for line, msg in doc.problems
                       if not prefix or msg.startswith((here + ".", here + "[", here + ":")))
    data: Any = doc.data
    for part in prefix:
        data = data.get(part) if isinstance(data, dict) else None
    extra: list[str] = []
    workload = None
    if not isinstance(data, dict):
        check.problem((), f"expected a mapping of fields, got {check.shown(data, ())}")
    else:
        workload = _workload(check, data, (base_dir, confined), extra)
    if check.found or extra or workload is None:
        raise problems_error(file, check.found, "workload", extra)
    return dataclasses.replace(workload, source=source or {
        "name": Path(file).name, **({"field": here} if prefix else {})})


#: where a conversations file is looked for, and whether it must stay inside that folder
_Files = tuple[Path, bool]


def _workload(check: Checker, data: dict[str, Any], files: _Files,
              extra: list[str]) -> Workload | None:
    check.keys(data, (), TOP_FIELDS, {k: "a field of a shape, under shapes:"
                                      for f in KIND_FIELDS.values() for k in f})
    check.required(data, (), ("name", "shapes"))
    name = check.text(data["name"], ("name",)) if "name" in data else None
    levels = _levels(check, data.get("concurrency", 1))
    duration = units = None
    if "duration_s" in data:
        duration = check.number(data["duration_s"], ("duration_s",), DURATION, above=0)
    if "units" in data:
        u = check.number(data["units"], ("units",), UNITS)
        units = None if u is None else int(u)
    if "duration_s" not in data and "units" not in data:
        check.problem((), "set duration_s (seconds per level), units (units started per "
                      "level) or both")
    shapes = _shapes(check, data.get("shapes"), files, extra) if "shapes" in data else None
    if name is None or levels is None or shapes is None:
        return None
    return Workload(name=name, shapes=shapes, concurrency=levels, duration_s=duration,
                    units=units)


def _levels(check: Checker, value: Any) -> tuple[int, ...] | None:
    path: FieldPath = ("concurrency",)
    if not isinstance(value, list):
        x = check.number(value, path, LEVEL)
        return None if x is None else (int(x),)
    if not value or len(value) > MAX_LEVELS:
        check.problem(path, f"expected 1 to {MAX_LEVELS} levels, got {len(value)}")
        return None
    levels: list[int] = []
    ok = True
    for i, v in enumerate(value):
        x = check.number(v, (*path, i), LEVEL)
        if x is None:
            ok = False
        elif int(x) in levels:
            check.problem((*path, i), f"level {int(x)} appears twice")
            ok = False
        else:
            levels.append(int(x))
    return tuple(levels) if ok else None


def _shapes(check: Checker, value: Any, files: _Files,
            extra: list[str]) -> tuple[Shape, ...] | None:
    if not check.sized_list(value, ("shapes",), MAX_SHAPES, "shapes"):
        return None
    shapes: list[Shape | None] = []
    names: dict[str, int] = {}
    for i, item in enumerate(value):
        path: FieldPath = ("shapes", i)
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name in names:
            check.problem((*path, "name"), f"{name!r} is already the name of "
                          f"shapes[{names[name]}]; shape names are unique")
            shapes.append(None)
            _shape(check, item, path, files, extra)
            continue
        if isinstance(name, str):
            names[name] = i
        shapes.append(_shape(check, item, path, files, extra))
    if any(s is None for s in shapes):
        return None
    return tuple(s for s in shapes if s is not None)


def _shape(check: Checker, item: Any, path: FieldPath, files: _Files,
           extra: list[str]) -> Shape | None:
    if not isinstance(item, dict):
        check.problem(path, f"expected a mapping (name, kind, ...), got {check.shown(item, path)}")
        return None
    before = len(check.found)
    check.required(item, path, ("name", "kind"))
    name = check.text(item["name"], (*path, "name")) if "name" in item else None
    weight = (check.number(item["weight"], (*path, "weight"), WEIGHT, above=0)
              if "weight" in item else 1.0)
    kind = item.get("kind")
    if kind not in KIND_FIELDS:
        if "kind" in item:
            check.problem((*path, "kind"), f"expected one of {', '.join(KINDS)}; got "
                          f"{check.shown(kind, (*path, 'kind'))}")
        every = {k for fields in KIND_FIELDS.values() for k in fields}
        check.keys(item, path, (*COMMON_FIELDS, *sorted(every)))
        return None
    fields = KIND_FIELDS[kind]
    others = {k: f"a field of {', '.join(n for n, f in KIND_FIELDS.items() if k in f)} "
                 f"shapes, not {kind}" for f in KIND_FIELDS.values() for k in f}
    check.keys(item, path, (*COMMON_FIELDS, *fields), others)
    check.required(item, path, [k for k, (_, req) in fields.items() if req])
    values: dict[str, Any] = {}
    for key, (bounds, _) in fields.items():
        if key not in item:
            continue
        where = (*path, key)
        if key == "file":
            values[key] = check.text(item[key], where, limit=4096)
        elif key == "system_prompt_tokens" and bounds is not None:
            x = check.number(item[key], where, bounds)
            values[key] = None if x is None else int(x)
        elif bounds is not None:
            values[key] = check.dist(item[key], where, bounds)
    if len(check.found) > before or name is None or weight is None:
        if kind == "conversations" and isinstance(values.get("file"), str):
            _conversations(check, name or "conversations", values, path, files, extra)
        return None
    if kind == "conversations":
        shape = _conversations(check, name, values, path, files, extra)
        return None if shape is None else dataclasses.replace(shape, weight=weight)
    model = _MODELS[kind]
    made: Shape = model(name=name, weight=weight, **values)
    return made


def _conversations(check: Checker, name: str, values: dict[str, Any], path: FieldPath,
                   files: _Files, extra: list[str]) -> Conversations | None:
    """The shape's conversations file, read relative to the workload; its own problems
    (with its own lines) join the workload's."""
    base_dir, confined = files
    file = Path(values["file"])
    target = file if file.is_absolute() else base_dir / file
    if confined and not target.resolve().is_relative_to(base_dir.resolve()):
        check.problem((*path, "file"), f"{str(file)!r} lies outside this file's folder: "
                      "a questionnaire names a conversations file beside it, never "
                      "another path on this machine")
        return None
    if not target.is_file():
        check.problem((*path, "file"), f"no conversations file {str(file)!r} "
                      f"(looked for {str(target)!r})")
        return None
    opts = {k: values[k] for k in ("output_tokens", "think_time_s") if values.get(k)}
    try:
        return load_conversations(target, name, **opts)
    except WorkloadError as exc:
        extra.extend(exc.problems or [str(exc)])
        return None
