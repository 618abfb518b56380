"""o200k_base, the encoding evalkit counts tokens with, loaded in a tenth of a second.

Why not `bpe_openai.get_encoding` alone: importing the `bpe_openai` package reads the whole
vocabulary of every encoding it ships (cl100k, o200k, voyage3), in Python, to learn their
special tokens: about 1 s of CPU, the largest part of a probe's start-up, paid again by
every reference endpoint a test starts. Counting and encoding need none of it: the
package's Rust extension builds o200k from the tables compiled into it in ~0.1 s. So
`encoding()` loads the extension on its own, and the package (with its Python tables)
only for what the extension refuses: the bytes of a token that is not whole UTF-8 (the
extension decodes strictly), and texts past the package's limits (which it raises on).
Either way every answer is the package's own (`tests/test_tokenizer.py` holds them side
by side).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, cast

ENCODING = "o200k_base"
#: the package's own bounds (its `_encode_plain` and o200k's chunk limit): past them its
#: encode raises, so a text past them goes to it and raises the same
_MAX_CHARS = 1_000_000
_MAX_TOKENS = 200_000


class Encoding(Protocol):
    """What evalkit asks of an encoding: `O200k` on the Rust extension, or the package's
    own `bpe_openai.Encoding`, whichever `encoding()` could load."""

    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: Sequence[int]) -> str: ...

    def decode_single_token_bytes(self, token: int) -> bytes: ...


class O200k:
    """The few methods of a `bpe_openai.Encoding` that evalkit uses, on the Rust extension."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def encode_ordinary(self, text: str) -> list[int]:
        """Tokens of `text` (no special tokens), as `bpe_openai`'s encode_ordinary."""
        text = _sanitize(text)
        if not text:
            return []
        if len(text) >= _MAX_CHARS:
            return list(_package().encode_ordinary(text))
        tokens = list(self._backend.encode(text))
        if len(tokens) > _MAX_TOKENS:
            return list(_package().encode_ordinary(text))
        return tokens

    def decode(self, tokens: Sequence[int]) -> str:
        """Text of `tokens`; a sequence that is not whole UTF-8 decodes with replacement
        characters, as the package's decode does."""
        try:
            return str(self._backend.decode(list(tokens)))
        except ValueError:
            return str(_package().decode(list(tokens)))

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token."""
        try:
            return str(self._backend.decode([token])).encode("utf-8")
        except ValueError:  # part of a character: only the package's table has its bytes
            return bytes(_package().decode_single_token_bytes(token))


def _sanitize(text: str) -> str:
    """As the package does: a lone surrogate (not encodable) becomes U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@lru_cache(maxsize=1)
def _package() -> Encoding:
    import bpe_openai  # untyped: its Encoding has these methods (tests/test_tokenizer.py)

    return cast(Encoding, bpe_openai.get_encoding(ENCODING))


def _extension() -> Any:
    """`bpe_openai._bindings`, loaded without running the package's `__init__` (kept in
    sys.modules, so the package, if imported later, uses this same module)."""
    name = "bpe_openai._bindings"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("bpe_openai")  # finds the folder, imports nothing
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("bpe_openai is not installed")
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_bindings{suffix}"
            if path.is_file():
                ext = importlib.util.spec_from_file_location(name, path)
                assert ext is not None and ext.loader is not None
                module = importlib.util.module_from_spec(ext)
                ext.loader.exec_module(module)
                sys.modules[name] = module
                return module
    raise ImportError("bpe_openai has no compiled extension here")


@lru_cache(maxsize=1)
def encoding() -> Encoding:
    """o200k_base: on the Rust extension alone where it loads, else the package's own."""
    try:
        return O200k(_extension().tokenizer_for_encoding(ENCODING))
    except (ImportError, OSError, AttributeError):
        return _package()
