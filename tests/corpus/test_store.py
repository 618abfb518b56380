"""The corpus on disk (`evalkit.corpus.store`): its digest and a document edited by hand
(the `evalkit corpus` command's tests are in tests/cli/test_corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.corpus.store import add, load_text, read_corpus
from evalkit.errors import InputError
from tests.conftest import CORPUS_FILES


def test_the_digest_is_of_the_texts_not_their_order(tmp_path: Path) -> None:
    files = sorted(CORPUS_FILES.iterdir())
    one, two = tmp_path / "one", tmp_path / "two"
    add(one, files)
    for f in reversed(files):
        add(two, [f])
    assert read_corpus(one).digest == read_corpus(two).digest


def test_a_document_edited_by_hand_is_refused_at_load(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    add(folder, [CORPUS_FILES / "seed-library.md"])
    doc = next((folder / "documents").iterdir())
    doc.write_text(doc.read_text() + " and one more line")
    with pytest.raises(InputError, match=r"seed-library\.md: its text changed since it was added"):
        load_text(folder)
