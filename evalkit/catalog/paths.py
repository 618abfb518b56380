"""Where the catalog lives: `--catalog PATH`, else `EVALKIT_CATALOG`, else the user's
data directory by the platform's convention (XDG on Linux and the BSDs, Application
Support on macOS, LOCALAPPDATA on Windows). A few lines, so no dependency."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

#: the environment variable that names the catalog file
CATALOG_ENV = "EVALKIT_CATALOG"
CATALOG_FILE = "catalog.sqlite"


def data_dir(env: Mapping[str, str] | None = None, platform: str | None = None,
             home: Path | None = None) -> Path:
    """evalkit's folder in the user's data directory (nothing is created)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    home = Path.home() if home is None else home
    if platform.startswith("win"):
        local = env.get("LOCALAPPDATA") or env.get("APPDATA")
        return (Path(local) if local else home / "AppData" / "Local") / "evalkit"
    if platform == "darwin":
        return home / "Library" / "Application Support" / "evalkit"
    xdg = env.get("XDG_DATA_HOME")
    # the XDG spec: a relative XDG_DATA_HOME is invalid and is ignored
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share"
    return base / "evalkit"


def catalog_path(given: str | Path | None = None,
                 env: Mapping[str, str] | None = None) -> Path:
    """The catalog file to use: the one given, else $EVALKIT_CATALOG, else the default."""
    env = os.environ if env is None else env
    if given:
        return Path(given).expanduser()
    if env.get(CATALOG_ENV):
        return Path(env[CATALOG_ENV]).expanduser()
    return data_dir(env) / CATALOG_FILE


def panel_dir(catalog: Path) -> Path:
    """Where `panel sample` writes its runs by default: a folder beside the catalog."""
    return catalog.parent / "panel"
