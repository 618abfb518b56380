"""The profiles a run starts from: the built-in ones (`evalkit/profiles/*.json`) and a
user's JSON file that `extends` one, read as plain JSON. `evalkit.probe.plan.settings`
checks what is read into typed settings; nothing else reads a profile's keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from evalkit.analysis.jsonread import Json
from evalkit.errors import UsageError
from evalkit.rundir.store import read_json_object

#: A profile is a few dozen settings; a file far larger is not one.
MAX_PROFILE_BYTES = 1 << 20


def profile_names() -> list[str]:
    """The built-in profiles."""
    folder = resources.files("evalkit") / "profiles"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_profile(name_or_path: str, *, _seen: tuple[Path, ...] = ()) -> dict[str, Json]:
    """A built-in profile by name, or a JSON file of the same shape (as plain data).

    A file's `extends` names a built-in profile or another file, found beside the one
    that names it (so a profile and its base move together); a chain that comes back to
    a file it has read is an error, not an endless recursion.
    """
    if name_or_path in profile_names():
        text = (resources.files("evalkit") / "profiles" / f"{name_or_path}.json").read_text()
        return dict(json.loads(text))
    path = Path(name_or_path)
    if not path.is_absolute() and _seen:
        path = _seen[-1].parent / path
    if not path.is_file():
        raise UsageError(f"unknown profile {name_or_path!r}: use one of "
                         f"{', '.join(profile_names())} or a JSON file")
    if path.resolve() in _seen:
        chain = " → ".join(str(p) for p in (*_seen, path.resolve()))
        raise UsageError(f"profile {path}: its `extends` chain comes back to itself ({chain})")
    data, _ = read_json_object(path, "a profile", UsageError, MAX_PROFILE_BYTES)
    base = load_profile(str(data.get("extends", "standard")), _seen=(*_seen, path.resolve()))
    return deep_merge(base, data)


def deep_merge(base: Mapping[str, Json], over: Mapping[str, Json]) -> dict[str, Json]:
    """`over` laid on `base`, objects merged key by key."""
    out = dict(base)
    for k, v in over.items():
        under = out.get(k)
        out[k] = deep_merge(under, v) if isinstance(v, Mapping) and isinstance(
            under, Mapping) else v
    return out
