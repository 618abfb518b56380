"""`evalkit corpus`: add, list, remove, check (issue 40), and the probe saying where its
prompt text comes from (moved from tests/corpus/test_store.py: all but its two tests of the
store alone run the command; those stay there)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.corpus.store import add, load_text, read_corpus
from tests.conftest import CORPUS_FILES


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_add_list_and_remove(tmp_path: Path) -> None:
    """`corpus add` names each file with its kind and tokens; `corpus` lists files,
    tokens and digest; `corpus remove` forgets one; adding again finds it held."""
    folder = str(tmp_path / "c")
    code, out, _ = _run("corpus", "add", str(CORPUS_FILES), "--corpus", folder)
    assert code == 0, out
    assert "added seed-library.md (text, " in out and "added courier-faq.html (html, " in out
    held = read_corpus(Path(folder))
    assert len(held.documents) == 3 and held.digest is not None
    code, out, _ = _run("corpus", "--corpus", folder)
    assert f"3 documents, {held.tokens:,} tokens, 0 task templates; digest {held.digest[:12]}" \
        in out
    assert "tide-support.jsonl" in out and "jsonl" in out
    code, out, _ = _run("corpus", "add", str(CORPUS_FILES / "seed-library.md"), "--corpus",
                        folder)
    assert "already held: seed-library.md" in out
    code, out, _ = _run("corpus", "remove", "seed-library.md", "--corpus", folder)
    assert code == 0 and "removed seed-library.md" in out
    assert len(read_corpus(Path(folder)).documents) == 2
    assert len(list((Path(folder) / "documents").iterdir())) == 2
    code, _, err = _run("corpus", "remove", "nothing.md", "--corpus", folder)
    assert code == 2 and "'nothing.md' names no entries of the corpus" in err


def test_one_bad_file_adds_nothing_and_names_each(tmp_path: Path) -> None:
    """Every problem at once, by file; the corpus is as it was."""
    docs = tmp_path / "docs"
    shutil.copytree(CORPUS_FILES, docs)
    (docs / "broken.txt").write_bytes(b"\xff\xfe")
    (docs / "empty.md").write_text("\n")
    (docs / "picture.png").write_bytes(b"\x89PNG")
    folder = tmp_path / "c"
    add(folder, [CORPUS_FILES / "tide-support.jsonl"])
    before = (folder / "corpus.json").read_bytes()
    code, _, err = _run("corpus", "add", str(docs), "--corpus", str(folder))
    assert code == 2
    assert "Error: 2 of 5 file(s) could not be read; nothing was added" in err
    assert f"{docs / 'broken.txt'}: not UTF-8 text" in err
    assert f"{docs / 'empty.md'}: no text" in err
    assert (folder / "corpus.json").read_bytes() == before
    assert len(list((folder / "documents").iterdir())) == 1


def test_a_damaged_index_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps({"schema": "evalkit.corpus/1",
                                                    "documents": [{"name": 1}]}))
    code, _, err = _run("corpus", "--corpus", str(folder))
    assert code == 2 and "the corpus index is damaged" in err


def test_check_is_zero_for_a_private_corpus_and_every_prompt_for_the_public_text(
        private_corpus: Path) -> None:
    """`corpus check`: prompts as the probe makes them, none sharing ten words in a row
    with the text that ships (exit 0); without the corpus every one does (exit 1)."""
    code, out, _ = _run("corpus", "check", "--sample", "60", "--corpus", str(private_corpus))
    assert code == 0, out
    assert "0 of 60 share 10 words in a row with text that ships with evalkit" in out
    code, out, _ = _run("corpus", "check", "--sample", "20", "--no-corpus")
    assert code == 1
    assert "20 of 20 share 10 words in a row with text that ships with evalkit " \
           "(public-text: 20)" in out


def test_task_templates_open_the_prompts(private_corpus: Path, tmp_path: Path) -> None:
    """With the buyer's templates the probe's tasks are theirs, each opened by a unique
    detail; comments and blank lines are not templates."""
    from evalkit.corpus.text import compose

    f = tmp_path / "tasks.txt"
    f.write_text("# our support team's asks\nCondense this for the Tuesday triage{detail}:\n"
                 "\nWhich customer promise does '{phrase}' make?\n")
    code, out, _ = _run("corpus", "add", "--tasks", str(f), "--corpus", str(private_corpus))
    assert code == 0 and "added 2 task templates from tasks.txt" in out
    text = load_text(private_corpus)
    assert text is not None and len(text.tasks) == 2
    made = [compose(200, f"n{i}", 0, text)[0] for i in range(40)]
    assert all("Condense this for the Tuesday triage" in m or "Which customer promise does" in m
               for m in made)
    assert len({m[:60] for m in made}) == 40


def test_probe_says_once_before_it_starts_where_its_text_comes_from(
        private_corpus: Path) -> None:
    """Without a corpus, a warning on stderr, once, before anything is sent (a dry run
    sends nothing); with one, a line naming it by digest and no warning."""
    args = ["probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", "x",
            "--dry-run"]
    code, out, err = _run(*args)
    assert code == 0, err
    assert err.count("warning: prompt text: public text that ships with evalkit") == 1
    assert "in the connect, baseline, prefill, cache and ramp phases. A vendor that reads " \
           "evalkit's source can recognise these requests" in err
    code, out, err = _run(*args, "--corpus", str(private_corpus))
    digest = read_corpus(private_corpus).digest or ""
    assert code == 0 and "warning" not in err
    assert f"prompt text: your corpus {digest[:12]} (3 files, " in out
    code, out, err = _run(*args, "--corpus", str(private_corpus), "--no-corpus")
    assert "it holds 3: --no-corpus left them out" in err


def test_a_folder_of_too_many_documents_is_refused_before_reading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.corpus import store

    monkeypatch.setattr(store, "MAX_FILES_PER_ADD", 2)
    for i in range(5):
        (tmp_path / f"d{i}.txt").write_text(f"document {i}")
    code, _, err = _run("corpus", "add", str(tmp_path), "--corpus", str(tmp_path / "c"))
    assert code == 2 and "more than 2 documents in one add" in err
    assert not (tmp_path / "c" / "corpus.json").exists()
