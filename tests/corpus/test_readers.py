"""The buyer's documents read as text, and hostile files refused by name (issue 40)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.corpus import readers
from evalkit.corpus.readers import read_document
from evalkit.errors import InputError
from tests.conftest import CORPUS_FILES


def test_html_is_the_text_a_reader_sees() -> None:
    """No script, style or head; entities decoded; one paragraph a block."""
    kind, text = read_document(CORPUS_FILES / "courier-faq.html")
    assert kind == "html"
    assert "never read this" not in text and "font-family" not in text
    assert "Quickspoke Couriers FAQ" not in text  # the head's title
    assert "curtain poles, surfboards, a cello" in text
    assert "How do riders get paid?\n\nRiders are members" in text


def test_jsonl_chat_keeps_each_message_once() -> None:
    """Each message a paragraph; a system prompt repeated on every line is kept once."""
    kind, text = read_document(CORPUS_FILES / "tide-support.jsonl")
    assert kind == "jsonl"
    assert text.count("You answer questions from users of the Saltmarsh Tides app.") == 1
    assert "double high water" in text
    assert '"role"' not in text


def test_markdown_and_text_are_read_as_written(tmp_path: Path) -> None:
    kind, text = read_document(CORPUS_FILES / "seed-library.md")
    assert kind == "text" and text.startswith("# The Hollow Oak Seed Library")
    f = tmp_path / "notes.txt"
    f.write_bytes(b"\xef\xbb\xbfline  one\r\nline two\r\n\r\n\r\nsecond\x1b[2J paragraph\n")
    assert read_document(f) == ("text", "line one\nline two\n\nsecond [2J paragraph")


def test_a_pdf_gives_its_text_layer(tmp_path: Path) -> None:
    """A PDF's text layer (here one WeasyPrint writes, as the scorecard does)."""
    import weasyprint

    f = tmp_path / "policy.pdf"
    weasyprint.HTML(string="<p>Refunds within forty-five days.</p><p>Second page?</p>"
                    ).write_pdf(f)
    kind, text = read_document(f)
    assert kind == "pdf" and "Refunds within forty-five days." in text


@pytest.mark.parametrize(("name", "data", "said"), [
    ("a.bin", b"x", "not a document evalkit reads"),
    ("a.txt", b"caf\xe9", "not UTF-8 text (byte 3 is not UTF-8)"),
    ("a.md", b"\x00\x01binary", "holds NUL bytes"),
    ("a.txt", b"  \n\n \t", "no text in it"),
    ("a.pdf", b"%PDF-1.7 not really", "a PDF that cannot be read"),
    ("a.jsonl", b'{"messages": [{"role": "user", "content": "ok"}]}\n{oops\n',
     "a.jsonl:2: not JSON"),
    ("a.jsonl", b'[1, 2]\n', "a.jsonl:1: expected {\"messages\""),
    ("a.jsonl", b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", "nested deeper than 64"),
])
def test_a_hostile_file_is_refused_by_name(tmp_path: Path, name: str, data: bytes,
                                           said: str) -> None:
    f = tmp_path / name
    f.write_bytes(data)
    with pytest.raises(InputError) as err:
        read_document(f)
    assert str(err.value).startswith(str(f) if ":" not in said[:9] else str(tmp_path))
    assert said in str(err.value)


def test_sizes_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file past the byte cap is refused before it is read whole; a document past the
    text cap after extraction."""
    monkeypatch.setattr(readers, "MAX_FILE_BYTES", 1000)
    big = tmp_path / "big.txt"
    big.write_text("word " * 300)
    with pytest.raises(InputError, match="larger than 0 MiB"):
        read_document(big)
    monkeypatch.setattr(readers, "MAX_FILE_BYTES", 1 << 20)
    monkeypatch.setattr(readers, "MAX_DOCUMENT_CHARS", 100)
    with pytest.raises(InputError, match="1,500 characters of text"):
        read_document(big)


def test_a_lone_surrogate_in_jsonl_is_replaced(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"role": "user", "content": "half \ud800 a pair"}) + "\n")
    assert read_document(f)[1] == "half \ufffd a pair"


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A named pipe called notes.txt would block `open` for ever."""
    import os

    f = tmp_path / "notes.txt"
    os.mkfifo(f)
    with pytest.raises(InputError, match="not a regular file"):
        read_document(f)
