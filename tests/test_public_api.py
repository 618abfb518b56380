"""The curated public API (`evalkit/__init__.py`): what a notebook imports, kept on
purpose. A name added or dropped here is a decision, not an accident of a refactor."""

from __future__ import annotations

import subprocess
import sys

import evalkit

EXPECTED = {
    "SUITE_VERSION", "__version__",
    "ProbeConfig", "run_probe", "RunResult",
    "RunDir", "open_run", "load_run", "import_run",
    "summarize", "Summary", "Tolerances", "load_tolerances",
    "Questionnaire", "load_questionnaire",
    "reconcile", "review", "Review",
    "render_report", "CompareInput", "render_comparison",
    "ReferenceServer", "EvalkitError",
}


def test_the_exported_names_are_the_curated_list() -> None:
    assert set(evalkit.__all__) == EXPECTED


def test_every_exported_name_resolves_to_the_object_its_module_defines() -> None:
    for name in evalkit.__all__:
        value = getattr(evalkit, name)
        module = getattr(value, "__module__", None)
        if module is not None and not isinstance(value, str):
            assert module.startswith("evalkit."), name
            assert getattr(sys.modules[module], name) is value


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        evalkit.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("evalkit.no_such_thing resolved")


def test_importing_evalkit_loads_no_heavy_library() -> None:
    """`import evalkit` (and so `evalkit --version`) waits for no pandas or matplotlib."""
    code = ("import sys, evalkit; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'numpy', 'httpx') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
