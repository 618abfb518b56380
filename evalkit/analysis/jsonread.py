"""JSON read as typed data: the one place a JSON value becomes a number, a count, a text,
a mapping or a frozen dataclass.

Every document evalkit reads back (summary.json, run.json, scorecard.json, a peer tool's
export) may be old, hand-edited or written by someone who wants it misread, so reading
never trusts a type: anything missing or malformed is None (or the field's default),
never a crash. `read_as(cls, value)` reads a frozen dataclass field by field from its
type hints, each field under its own name as the JSON key (or `key` in its metadata):

    float | None        a finite number (`as_number`: not a bool, not NaN)
    int | None          a whole number (`as_count`; metadata `least` puts a floor under it)
    bool                true only when the JSON says true; `bool | None`: true, false or None
    str | None          a string as written (metadata `strip`: stripped, empty is None)
    Interval | None     [low, high], either end null (`read_interval`)
    a dataclass         its `from_json`, else `read_as`, from a JSON object (else None or
                        its default)
    tuple[X, ...]       a JSON list, each item read as X, items that are not X left out
    Mapping[str, X]     a JSON object, each value read as X, values that are not X left out
    Mapping[int, X]     the same, keyed by whole numbers (a level's "4" is 4)
    Literal[...]        one of its values, else None
    Json                the JSON value as written (free-form parts: the reader decides)

So a new figure in a document is one field in its dataclass. These readers (and the
`as_*` coercers they rest on) live here and nowhere else: the stages above read fields.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Hashable, Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

T = TypeVar("T")

#: a 95 % interval as summary.json writes it: [low, high], an end None where n cannot
#: bound it
Interval = tuple[float | None, float | None]
#: a JSON value kept as written (a free-form part: a vendor's answer, a profile's settings)
Json = object


def as_number(value: object) -> float | None:
    """A finite float, or None: bool is not a number here (although Python says it is),
    nor is a string of digits, NaN, an infinity or an int beyond float range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range is no measurement
        return None
    return number if math.isfinite(number) else None


def as_count(value: object, least: int | None = None) -> int | None:
    """A whole number (3 or 3.0; not True, "3" or 3.5), None below `least` when given:
    an imported file's negative token count is no count."""
    number = as_number(value)
    if number is None or number != int(number) or (least is not None and number < least):
        return None
    return int(number)


def as_mapping(value: object) -> Mapping[str, Json]:
    """value if it is a mapping, else an empty one: input JSON may hold anything anywhere."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Json]:
    """value if it is a JSON list, else an empty one: a list where an object or a number
    stands is not iterated (a number would raise, a string would give its letters)."""
    return value if isinstance(value, list) else []


def number_entries(value: Json) -> dict[str, float]:
    """The entries of a JSON object whose values are numbers, as floats, in order ({} for
    anything else): a free-form part read for its figures (a vendor's headers)."""
    return {str(k): n for k, v in as_mapping(value).items() if (n := as_number(v)) is not None}


def as_text(value: object) -> str | None:
    """A string stripped, None when empty or not a string."""
    return value.strip() or None if isinstance(value, str) else None


def read_interval(value: object) -> Interval | None:
    """[low, high] as summary.json writes it (ends may be null); None when absent."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    return as_number(value[0]), as_number(value[1])


def read_as(cls: type[T], value: object) -> T:
    """`cls` (a dataclass whose every field has a default) read from a JSON object: each
    field from its key by its type (the table above); a key missing, or a value that is
    not of the field's type, leaves the field's default."""
    doc = as_mapping(value)
    kwargs: dict[str, Any] = {}
    for name, key, hint, meta in _plan(cast(Hashable, cls)):
        if key not in doc:
            continue
        got = _read(hint, doc[key], meta)
        if got is not _INVALID:
            kwargs[name] = got
    return cls(**kwargs)


def read_as_written(cls: type[T], value: object) -> T:
    """`read_as`, with each whole number the document wrote kept an int where the field is
    a float (2 stays 2, 2.0 stays 2.0): a part that is written back (a vendor's answer, a
    price as quoted) gives the same bytes again."""
    return _as_written(read_as(cls, value), as_mapping(value))


def _as_written(typed: T, doc: Mapping[str, Any]) -> T:
    if not is_dataclass(typed) or isinstance(typed, type):
        return typed
    changed: dict[str, Any] = {}
    for f in fields(typed):
        got, given = getattr(typed, f.name), doc.get(str(f.metadata.get("key", f.name)))
        if isinstance(got, float) and isinstance(given, int) and not isinstance(given, bool) \
                and got == given:
            changed[f.name] = given
        elif is_dataclass(got) and isinstance(given, Mapping):
            changed[f.name] = _as_written(got, given)
    return dataclasses.replace(typed, **changed) if changed else typed


#: what `_read` gives for a value that is not of the type asked for
_INVALID: Any = object()


@functools.cache
def _plan(cls: Hashable) -> tuple[tuple[str, str, Any, Mapping[str, Any]], ...]:
    """(field name, JSON key, type, metadata) of each field `read_as` fills."""
    if not is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = get_type_hints(cls, include_extras=False)
    out = []
    for f in fields(cls):
        if not f.init:
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} has no default: read_as cannot "
                            "leave it out")
        out.append((f.name, str(f.metadata.get("key", f.name)), hints[f.name], f.metadata))
    return tuple(out)


def _optional(hint: Any) -> tuple[Any, bool]:
    """(the type without None, whether None was allowed)."""
    if get_origin(hint) in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        allowed = len(args) != len(get_args(hint))
        if len(args) == 1:
            return args[0], allowed
        return Union[tuple(args)], allowed  # noqa: UP007 (built from a tuple at run time)
    return hint, False


def _read(hint: Any, value: Any, meta: Mapping[str, Any]) -> Any:
    """`value` read as `hint`; `_INVALID` when it is not one (the field keeps its
    default), None for a null where None is allowed."""
    base, nullable = _optional(hint)
    if value is None:
        return None if nullable else _INVALID
    got = _read_base(base, value, meta)
    if got is _INVALID and nullable:
        return None
    return got


def _read_base(base: Any, value: Any, meta: Mapping[str, Any]) -> Any:
    origin = get_origin(base)
    if base is Json or base is Any:
        return value
    if base is bool:
        return value if isinstance(value, bool) else _INVALID
    if base is float:
        number = as_number(value)
        return _INVALID if number is None else number
    if base is int:
        count = as_count(value, meta.get("least"))
        return _INVALID if count is None else count
    if base is str:
        if not isinstance(value, str):
            return _INVALID
        if meta.get("strip"):
            return value.strip() or _INVALID
        return value
    if base == Interval:
        interval = read_interval(value)
        return _INVALID if interval is None else interval
    if origin is Literal:
        return value if any(value == a and type(value) is type(a) for a in get_args(base)) \
            else _INVALID
    if origin is tuple:
        args = get_args(base)
        if not isinstance(value, list | tuple) or len(args) != 2 or args[1] is not Ellipsis:
            return _INVALID
        items = (_read(args[0], v, {}) for v in value)
        return tuple(v for v in items if v is not _INVALID and v is not None)
    if origin in (Mapping, dict, typing.Mapping):
        if not isinstance(value, Mapping):
            return _INVALID
        key_type, value_type = get_args(base)
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key: Any = str(k)
            if key_type is int:
                if not key.isdigit():
                    continue
                key = int(key)
            item = _read(value_type, v, {})
            if item is not _INVALID:
                out[key] = item
        return out
    if isinstance(base, type) and is_dataclass(base):
        if not isinstance(value, Mapping):
            return _INVALID
        # a type with its own reading (a distribution's intervals sit beside its keys)
        reader = getattr(base, "from_json", None)
        return reader(value) if reader is not None else read_as(base, value)
    if get_origin(base) in (Union, types.UnionType):  # e.g. int | str: the first that fits
        for arg in get_args(base):
            got = _read_base(arg, value, meta)
            if got is not _INVALID:
                return got
        return _INVALID
    raise TypeError(f"read_as cannot read {base!r}")
