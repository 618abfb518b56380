"""A vendor that games evaluations: spots requests that look like a benchmark and serves
them from an idle pool of their own (`spot_probes`), so a probe that carries such marks
measures the idle pool, not the service its customers get.

The marks are the ones a vendor reading evalkit's (or any load tool's) source would use;
each spotted request names its marks in the truth log, so a test can show which a probe
run carries:

- `user-agent`: a load tool names itself (evalkit, aiperf, guidellm, locust, k6, ...);
- `body-extension`: `ignore_eos` or `min_tokens`, which length-forcing tools send;
- `nonce`: a prompt that opens with a bracketed token (`[abc123-000001] ...`);
- `word-list`: a prompt that asks to continue a list of words;
- `template`: one opening (digits masked) on at least a quarter of the recent prompts;
- `request-id`: an `X-Request-ID` header;
- `public-text`, `task-text`: ten words in a row of the text that ships with evalkit (its
  passages) or of a task the package composes: whatever the package can produce, a vendor
  that read it can produce too, and recognise (`evalkit.corpus.public.PublicIndex`). Only
  the buyer's own text escapes it.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Mapping
from typing import Any

from evalkit.corpus.public import PublicIndex, public_index

_TOOLS = re.compile(r"evalkit|aiperf|genai-perf|guidellm|llmperf|locust|\bk6\b|vegeta|"
                    r"benchmark|loadgen|wrk", re.I)
_NONCE = re.compile(r"^\s*\[[^\]\n]{3,80}\]")
_WORD_LIST = re.compile(r"continue (this|the) list", re.I)
_DIGITS = re.compile(r"[0-9a-f]*[0-9][0-9a-f]*", re.I)
#: how many recent prompts the template share is taken over, and the share that marks one
WINDOW = 200
TEMPLATE_SHARE = 0.25
#: the opening compared, in characters (after digits are masked)
OPENING = 48


def prompt_text(body: Mapping[str, Any]) -> str:
    """The user-visible text of a request, whichever API shaped it."""
    parts: list[str] = []
    for key in ("system", "instructions", "prompt", "input"):
        value = body.get(key)
        if isinstance(value, str):
            parts.append(value)
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [c.get("text", "") for c in content
                      if isinstance(c, Mapping) and isinstance(c.get("text"), str)]
    return "\n".join(parts)


class Spotter:
    """Names the marks of one request; remembers recent openings for the template mark."""

    def __init__(self) -> None:
        self._recent: deque[str] = deque(maxlen=WINDOW)
        self._counts: Counter[str] = Counter()
        self._public: PublicIndex | None = None

    def learn(self) -> None:
        """Learn what evalkit's source gives away: its passages and its tasks."""
        self._public = public_index()

    def marks(self, user_agent: str | None, request_id: str | None,
              body: Mapping[str, Any]) -> list[str]:
        text = prompt_text(body)
        found = []
        if user_agent and _TOOLS.search(user_agent):
            found.append("user-agent")
        if "ignore_eos" in body or "min_tokens" in body:
            found.append("body-extension")
        if _NONCE.match(text):
            found.append("nonce")
        if _WORD_LIST.search(text[:400]):
            found.append("word-list")
        if self._template(text):
            found.append("template")
        if request_id:
            found.append("request-id")
        if self._public is None:
            self.learn()
        assert self._public is not None
        return found + self._public.marks(text)

    def _template(self, text: str) -> bool:
        opening = _DIGITS.sub("#", text.strip())[:OPENING]
        if len(self._recent) == self._recent.maxlen:
            old = self._recent[0]
            self._counts[old] -= 1
        self._recent.append(opening)
        self._counts[opening] += 1
        return len(self._recent) >= 20 and \
            self._counts[opening] >= TEMPLATE_SHARE * len(self._recent)
