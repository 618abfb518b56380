"""The reference endpoint's prefix cache, and the digests of what each request carried.

Why: a chat session resends its whole history every turn, and real engines (vLLM's
automatic prefix caching, SGLang's radix cache) serve the part they saw recently from
their KV cache, so later turns start sooner. The reference endpoint models that so a
prober's session and trace measurements can be checked against truth: the truth log
says how many of a request's prompt tokens were served from cache, and what each
message it received hashed to.

The model is vLLM's: the prompt's tokens (each part's o200k_base tokens, in reading
order, the same tokens `prompt_tokens` counts) are cut into blocks of `block_tokens`;
a whole block is keyed by the hash of *everything up to and including it* (every token
before it, and each part's role where the part begins), so a block only matches when
all before it matches too. A request's cached tokens are its leading blocks found in
the cache, until the first miss; a trailing partial block is never cached. The cache
is an LRU bounded in blocks. A request's blocks are touched from its last to its first,
so under pressure a chain loses its tail first (as vLLM frees blocks in reverse order)
and its head, which the next turn shares, survives longest.

Pure: no clock and no I/O; a lock guards the LRU, which the server's threads may share.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from evalkit.reference.parse import Part

#: the truth log's `messages` holds at most this many digests (`message_count` says how
#: many the request had)
MAX_DIGESTS = 256
#: in the hashed stream, a part's start: an item no token id (< 2**31) can spell
_PART_MARK = b"\xff\xff\xff\xff"
_U32 = "I" if array("I").itemsize == 4 else "L"


def _utf8(text: str) -> bytes:
    # JSON may carry lone surrogates; they hash as themselves rather than fail
    return text.encode("utf-8", "surrogatepass")


def message_digests(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Per message received, in order: its role, the SHA-256 (hex) of its text's UTF-8,
    and its tokens; at most `MAX_DIGESTS` (the first). Never the text itself."""
    return [{"role": p.role, "sha256": hashlib.sha256(_utf8(p.text)).hexdigest(),
             "tokens": p.tokens} for p in parts[:MAX_DIGESTS]]


def block_hashes(parts: Sequence[Part], block_tokens: int,
                 encode: Callable[[str], list[int]]) -> list[bytes]:
    """The chain keys of the prompt's whole blocks: key k hashes every token of blocks
    0..k and the role of every part that begins in them."""
    size = max(1, block_tokens)
    running = hashlib.sha256()
    keys: list[bytes] = []
    filled = 0
    for part in parts:
        running.update(_PART_MARK + hashlib.sha256(_utf8(part.role)).digest()[:8])
        ids = encode(part.text) if part.text else []
        pos = 0
        while pos < len(ids):
            take = min(size - filled, len(ids) - pos)
            running.update(array(_U32, ids[pos:pos + take]).tobytes())
            pos += take
            filled += take
            if filled == size:
                keys.append(running.copy().digest())
                filled = 0
    return keys


class PrefixCache:
    """An LRU of block keys, at most `capacity` of them."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._blocks: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._blocks)

    def match(self, keys: Sequence[bytes]) -> int:
        """How many of `keys`, from the first, are cached (stopping at the first miss)."""
        with self._lock:
            found = 0
            for key in keys:
                if key not in self._blocks:
                    break
                found += 1
            return found

    def insert(self, keys: Sequence[bytes]) -> None:
        """A request's blocks were prefilled: hold them all, most recent first in chain
        order (touched last to first), evicting the least recently used beyond capacity."""
        with self._lock:
            blocks = self._blocks
            for key in reversed(keys):
                blocks[key] = None
                blocks.move_to_end(key)
            while len(blocks) > self.capacity:
                blocks.popitem(last=False)
