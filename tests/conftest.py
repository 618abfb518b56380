"""Shared fixtures.

`reference` starts the built-in reference endpoint (real HTTP on a free loopback port)
and stops it after the test:

    def test_something(reference):
        srv = reference("gpu", decode_base_ms=5)             # subprocess: accurate timing
        fast = reference("faulty", mode="thread", seed=3)    # in-process: quicker start
        srv.base_url, srv.model, srv.truth()                 # truth log is always on
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from evalkit.reference.server import ReferenceServer

# hypothesis' per-example deadline (200 ms) is a timed unit test: on a shared 2-core
# machine, or beside the timing tests (tools/suite.py), a slow example is the machine's,
# not the code's (speed is measured in bench/). A test may still set its own.
settings.register_profile("evalkit", deadline=None)
settings.load_profile("evalkit")


@pytest.fixture(autouse=True)
def _catalog_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's catalog is a temporary file and its corpus folder an empty one:
    nothing the suite runs (a CLI probe, a report, a subprocess that inherits the
    environment) reads or writes the user's data directory."""
    path = tmp_path_factory.mktemp("catalog") / "catalog.sqlite"
    monkeypatch.setenv("EVALKIT_CATALOG", str(path))
    # and an empty corpus: a developer's own corpus must not change what the suite sends
    monkeypatch.setenv("EVALKIT_CORPUS", str(tmp_path_factory.mktemp("corpus")))
    # and no collector: a developer's OTEL_EXPORTER_OTLP_ENDPOINT would have every CLI
    # probe export its run (the OTLP tests set their own)
    import os

    for name in [n for n in os.environ if n.startswith(("OTEL_EXPORTER_OTLP", "OTEL_SDK"))]:
        monkeypatch.delenv(name)
    return path


#: a small private corpus the tests wrote by hand (Markdown, HTML, JSONL chat): text no
#: vendor has seen, and none of it ships with evalkit
CORPUS_FILES = Path(__file__).resolve().parent / "data" / "corpus"
#: one of its sentences, unique to it: no byte of it may reach a run or a report
SECRET_SENTENCE = "Marisol keeps the spare heron-shaped keys in the blue tin behind the kiln."


@pytest.fixture
def private_corpus(tmp_path: Path) -> Path:
    """A corpus folder holding the hand-written documents."""
    from evalkit.corpus.store import add

    folder = tmp_path / "private-corpus"
    add(folder, [CORPUS_FILES])
    return folder


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[Callable[..., ReferenceServer]]:
    """Factory: reference(profile="gpu", *, mode="subprocess", seed=0, **overrides)."""
    started: list[ReferenceServer] = []

    def start(profile: str = "gpu", *, mode: str = "subprocess", seed: int = 0,
              **overrides: Any) -> ReferenceServer:
        truth = tmp_path / f"reference-truth-{len(started)}.jsonl"
        srv = ReferenceServer(profile, overrides, truth_log=truth, mode=mode,  # type: ignore[arg-type]
                              seed=seed)
        srv.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
