"""Profiles of the reference endpoint: data in `profiles.json`, validated here.

The file holds the parameter schema (default, unit, meaning) and each profile's story
plus the parameters it changes, so `--help`, the engine and the docs read one source.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalkit.errors import UsageError

PROFILES_FILE = Path(__file__).with_name("profiles.json")
DEFAULT_PROFILE = "gpu"

Value = float | int | bool | str


@dataclass(frozen=True)
class ParamSpec:
    """One tunable of the engine model, as `--help` explains it."""

    name: str
    default: Value
    unit: str
    help: str
    #: bounds beyond the usual >= 0 (`min`, `max` in profiles.json): a block of 0 tokens or
    #: a cache dearer than no cache would be nonsense, refused at the door
    minimum: float = 0.0
    maximum: float | None = None

    def coerce(self, raw: Any) -> Value:
        """Turn a CLI string or JSON value into this parameter's type, or refuse it."""
        kind = type(self.default)
        if kind is str:  # a name (model_returned): any text; the wire JSON-encodes it
            if not isinstance(raw, str):
                raise UsageError(f"reference parameter {self.name}: {raw!r} is not a str")
            return raw
        try:
            if kind is bool:
                if isinstance(raw, str):
                    low = raw.strip().lower()
                    if low in ("1", "true", "yes", "on"):
                        return True
                    if low in ("0", "false", "no", "off"):
                        return False
                    raise ValueError(raw)
                return bool(raw)
            if kind is int:
                as_float = float(raw)
                if as_float != int(as_float):
                    raise ValueError(raw)
                value: float = int(as_float)
            else:
                value = float(raw)
        except (TypeError, ValueError):
            raise UsageError(
                f"reference parameter {self.name}: {raw!r} is not a {kind.__name__}"
            ) from None
        if value < self.minimum:
            raise UsageError(f"reference parameter {self.name}: must be >= {self.minimum:g}, "
                             f"got {raw!r}")
        if self.maximum is not None and value > self.maximum:
            raise UsageError(f"reference parameter {self.name}: must be <= {self.maximum:g}, "
                             f"got {raw!r}")
        if self.unit == "per request" and value > 1:
            raise UsageError(f"reference parameter {self.name}: a probability, got {raw!r}")
        return value


@dataclass(frozen=True)
class Profile:
    """A named engine behaviour: its one-line story and every parameter's value."""

    name: str
    story: str
    params: Mapping[str, Value] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Value:
        return self.params[key]

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> Profile:
        """This profile with some parameters changed; unknown names are a UsageError."""
        if not overrides:
            return self
        specs = param_specs()
        params = dict(self.params)
        for key, raw in overrides.items():
            if key not in specs:
                raise UsageError(
                    f"unknown reference parameter {key!r}; known: {', '.join(sorted(specs))}"
                )
            params[key] = specs[key].coerce(raw)
        return Profile(self.name, self.story, params)


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PROFILES_FILE.read_text(encoding="utf-8"))
    return data


def param_specs() -> dict[str, ParamSpec]:
    """Every parameter of the engine model, in file order."""
    return {
        name: ParamSpec(name, spec["default"], spec["unit"], spec["help"],
                        float(spec.get("min", 0)), spec.get("max"))
        for name, spec in _raw()["params"].items()
    }


def load_profiles() -> dict[str, Profile]:
    """Every profile by name, with all parameters filled in from the defaults."""
    specs = param_specs()
    defaults = {name: spec.default for name, spec in specs.items()}
    out: dict[str, Profile] = {}
    for name, entry in _raw()["profiles"].items():
        base = Profile(name, entry["story"], defaults)
        out[name] = base.with_overrides(entry.get("set", {}))
    return out


def get_profile(name: str, overrides: Mapping[str, Any] | None = None) -> Profile:
    """One profile with overrides applied; an unknown name is a UsageError."""
    profiles = load_profiles()
    if name not in profiles:
        raise UsageError(f"unknown reference profile {name!r}; known: {', '.join(profiles)}")
    return profiles[name].with_overrides(overrides)
