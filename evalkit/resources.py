"""Where evalkit's own files are: templates, sample questionnaires, the questionnaire schema.

In a checkout they sit at the top of the repository (`templates/`, `questionnaires/`),
where people look for them; a wheel ships them inside the package (pyproject.toml maps
them in as `evalkit/templates` and `evalkit/questionnaires`). Code asks here, never
relative to the source tree, so an installed evalkit renders a PDF and runs its demo.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from evalkit.errors import UsageError


def data_dir(name: str) -> Path:
    """The folder `name` as installed (inside the package) or in a checkout (beside it)."""
    installed = Path(str(resources.files("evalkit"))) / name
    checkout = Path(__file__).resolve().parent.parent / name
    for folder in (installed, checkout):
        if folder.is_dir() and any(folder.iterdir()):
            return folder.resolve()
    raise UsageError(f"evalkit's {name}/ folder is missing (looked in {installed} and "
                     f"{checkout}): reinstall evalkit")
