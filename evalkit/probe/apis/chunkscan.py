"""The token chunk most OpenAI-compatible servers write, read with one regex match.

Why: a chat stream is mostly token chunks, and vLLM, SGLang and the reference endpoint
write each one the same way: compact JSON, these keys in this order, one choice, logprobs
null, no finish reason yet. json.loads and the adapter's defensive walk of the dict cost
~6 us of CPU a chunk on the project VM; one match of the whole string costs ~1. The
match is exact, not a guess: its strings hold no raw control character and no escape
(the text may hold escapes, which JSON then decodes), its numbers have JSON's syntax, and
the object has no other key, so whatever it matches json.loads reads as the same values.
Anything else (another shape, a usage or finish chunk, a bad escape) is not matched and
the adapter's full parse reads it (`evalkit.probe.apis.chat.OpenAIChat._parse_full`),
errors included.
"""

from __future__ import annotations

import json
import re

_STR = r'[^"\\\x00-\x1f]'
_CHAT_TOKEN = re.compile(
    rf'\{{"id":"{_STR}*","object":"chat\.completion\.chunk","created":(?:0|[1-9][0-9]*),'
    rf'"model":"({_STR}+)",(?:"system_fingerprint":(?:"({_STR}+)"|null),)?'
    rf'"choices":\[\{{"index":0,"delta":\{{"(content|reasoning_content)":'
    rf'"((?:{_STR}|\\["\\/bfnrtu])+)"\}},"logprobs":null,"finish_reason":null\}}\]\}}')


def chat_token(data: str) -> tuple[str, str | None, str, str] | None:
    """(model, system_fingerprint or None, "content" or "reasoning_content", text) of a
    token chunk in the common shape; None for any other event data."""
    m = _CHAT_TOKEN.fullmatch(data)
    if m is None:
        return None
    model, fingerprint, key, text = m.groups()
    if "\\" in text:
        try:
            text = json.loads(f'"{text}"')
        except ValueError:
            return None  # a bad escape: the full parse says how
    return model, fingerprint, key, text
