"""What the commands share: EvalkitErrors as one-line messages with exit code 2, and the
parsers of option values that are more than a click type."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from evalkit.errors import EvalkitError, UsageError
from evalkit.probe.client.clients import header_name_error
from evalkit.probe.wire.framing import SENDABLE, TOKEN

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Turn an EvalkitError into a one-line message and exit code 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except EvalkitError as exc:
            click.echo(f"Error: {exc}", err=True)
            for problem in getattr(exc, "problems", []) or []:
                click.echo(f"  {problem}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def parse_header(text: str) -> tuple[str, str]:
    """'Name: value' from --header; the value may hold secrets, so it is never echoed."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise UsageError(f"--header must look like 'Name: value' (got a value for "
                         f"{name.strip()!r})" if sep else "--header must look like 'Name: value'")
    name, value = name.strip(), value.strip()
    if TOKEN.fullmatch(name.encode("utf-8", "replace")) is None:
        raise UsageError(f"--header: {header_name_error(name)}")
    if SENDABLE.fullmatch(value) is None:  # else the request fails as it is sent
        raise UsageError(f"--header {name}: its value must be printable ASCII (no control "
                         "character, no accented letter); it is not shown, as it may be a key")
    return name, value


def parse_int_list(text: str, option: str) -> tuple[int, ...]:
    """'1,2,4,8' → (1, 2, 4, 8); anything else is a usage error naming the option."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, e.g. 1,2,4,8") from None
    if not values:
        raise UsageError(f"{option} needs at least one value")
    return values


def parse_extra_body(text: str | None) -> dict[str, Any]:
    """--extra-body: a JSON object merged into every request body."""
    if not text:
        return {}
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--extra-body is not valid JSON: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise UsageError("--extra-body must be a JSON object, e.g. '{\"top_k\": 1}'")
    return obj


def catalog_option(func: F) -> F:
    """--catalog PATH, shared by every command that registers in or reads the catalog."""
    return click.option(
        "--catalog", "catalog", type=click.Path(dir_okay=False), metavar="PATH",
        help="The catalog of evaluations (SQLite). Default: $EVALKIT_CATALOG, else "
             "catalog.sqlite in the user's data directory (~/.local/share/evalkit on Linux)."
    )(func)
