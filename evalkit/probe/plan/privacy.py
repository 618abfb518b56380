"""What a record keeps of a request drawn from the buyer's corpus: nothing of its text.

A corpus is the buyer's secret, and a run directory is not: it is attached to a scorecard
that a vendor may dispute. Two ways its text could reach a record, closed here:

- A vendor's error may echo the request (a validation error quoting the input, a 400
  naming the prompt): `scrub` replaces every run of `ECHO_WORDS` or more words that the
  request also holds before the error is kept or printed, escaped or not (a JSON body
  holds the text as `\n` and `\u201c`: read as blanks, they split no run).
- An answer may quote it (a summary copies sentences): a canary's answer is compared token
  by token (`evalkit.analysis.precision`), so its pieces are kept as keyed digests
  (`AnswerKey`), which compare as the pieces do within the run and say nothing of the
  text; the key lives in memory for the run, never written. Its text is not kept.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from typing import Any

#: this many words of the request in a row, in an error, are its text echoed
ECHO_WORDS = 4
#: what stands in their place
ECHOED = "[request text]"

_WORD = re.compile(r"[^\W_]+")
#: escapes a body may hold its text in (JSON's \n and \u201c, HTML's &quot; and &#8220;):
#: read as blanks of their own length, so the words around them are the request's words
#: and where they stand in the body is unchanged
_ESCAPES = re.compile(r"\\u[0-9a-fA-F]{4}|\\[nrtbf\"\\/]|&#?\w{1,8};")


def _text_of(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(m.get("content", "")) for m in content if isinstance(m, dict))


def scrub(text: str | None, content: str | Sequence[Any]) -> str | None:
    """`text` (an error, a response body) with each run of `ECHO_WORDS` or more words
    that `content` (the request's text or messages) also holds in that order replaced by
    `ECHOED`."""
    if not text:
        return text
    masked = _ESCAPES.sub(lambda m: " " * len(m.group()), text)
    found = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(masked)]
    if len(found) < ECHO_WORDS:
        return text
    ws = [w.lower() for w in _WORD.findall(_text_of(content))]
    grams = {tuple(ws[i:i + ECHO_WORDS]) for i in range(len(ws) - ECHO_WORDS + 1)}
    echoed = [False] * len(found)
    for i in range(len(found) - ECHO_WORDS + 1):
        if tuple(w for _, _, w in found[i:i + ECHO_WORDS]) in grams:
            echoed[i:i + ECHO_WORDS] = [True] * ECHO_WORDS
    if not any(echoed):
        return text
    out, at, i = [], 0, 0
    while i < len(found):
        if not echoed[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(found) and echoed[j + 1]:
            j += 1
        out += [text[at:found[i][0]], ECHOED]
        at = found[j][1]
        i = j + 1
    out.append(text[at:])
    return "".join(out)


class AnswerKey:
    """The run's key for an answer's pieces: equal pieces give equal digests within the
    run, and the digests cannot be turned back into text without it."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key if key is not None else secrets.token_bytes(16)

    def pieces(self, pieces: Sequence[str]) -> list[str]:
        """Each piece as 12 hex digits of its keyed SHA-256."""
        return [hmac.new(self.key, p.encode("utf-8", "surrogatepass"),
                         hashlib.sha256).hexdigest()[:12] for p in pieces]
