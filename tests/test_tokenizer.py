"""evalkit.tokenizer answers as bpe_openai's own o200k_base does, without its slow import."""

from __future__ import annotations

import subprocess
import sys

import bpe_openai
import pytest

from evalkit.corpus.public import public_text
from evalkit.tokenizer import O200k, encoding

TEXTS = ["", "a", " the", "hello world", "héllo wörld 日本語 🤖 done", "\n\n  x\r\n",
         "tab\tand\u00a0nbsp", "lone \ud800 surrogate", "x" * 5000, "🤖" * 300,
         "def f(x):\n    return x ** 2  # ok\n"]


@pytest.fixture(scope="module")
def package() -> object:
    return bpe_openai.get_encoding("o200k_base")


def test_it_runs_on_the_extension_alone() -> None:
    assert isinstance(encoding(), O200k)


@pytest.mark.parametrize("text", TEXTS)
def test_tokens_are_the_packages(package: object, text: str) -> None:
    assert encoding().encode_ordinary(text) == package.encode_ordinary(text)  # type: ignore[attr-defined]


def test_decoding_is_the_packages_even_part_of_a_character(package: object) -> None:
    tokens = package.encode_ordinary("héllo wörld 日本語 🤖 done 🤖🤖")  # type: ignore[attr-defined]
    enc = encoding()
    partial = 0
    for i in range(len(tokens) + 1):
        assert enc.decode(tokens[:i]) == package.decode(tokens[:i])  # type: ignore[attr-defined]
    for t in tokens:
        want = package.decode_single_token_bytes(t)  # type: ignore[attr-defined]
        assert enc.decode_single_token_bytes(t) == want
        partial += want.decode("utf-8", errors="ignore").encode() != want
    assert partial, "the text has no token that is part of a character: it tests nothing"


def test_the_prompts_passages_are_the_packages(package: object) -> None:
    """The public passages are the package's tokens of their text, and read as a loop
    (the text twice is the tokens twice), so a cut round its end is exact too."""
    tokens = list(public_text().passages.tokens)
    assert len(tokens) > 10_000
    text = encoding().decode(tokens)
    assert text == package.decode(tokens)  # type: ignore[attr-defined]
    assert package.encode_ordinary(text) == tokens  # type: ignore[attr-defined]
    assert package.encode_ordinary(text + text) == tokens + tokens  # type: ignore[attr-defined]


def test_past_the_packages_limit_it_raises_as_the_package_does(package: object) -> None:
    text = "a " * 500_001
    with pytest.raises(ValueError) as ours:
        encoding().encode_ordinary(text)
    with pytest.raises(ValueError) as theirs:
        package.encode_ordinary(text)  # type: ignore[attr-defined]
    assert type(ours.value) is type(theirs.value)


def test_counting_a_prompt_leaves_the_package_unimported() -> None:
    code = ("import sys\nfrom evalkit.probe.plan.prompts import count_tokens, synthetic\n"
            "p = synthetic(200, 8, 'x')\nassert count_tokens(str(p.content)) == 200\n"
            "print('bpe_openai' in sys.modules, 'bpe_openai._bindings' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]
