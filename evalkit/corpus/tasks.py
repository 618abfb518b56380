"""What a customer asks of a text: the task that opens each of the probe's own prompts.

A vendor reading this file learns every part below. What it must not get is a fixed
sentence to match: ten words in a row that only the probe sends (`RUN`). So a task is
composed from short parts (a greeting, a reference to a ticket or a case, a request, what
it is about, a constraint), each a few words long, and never more than `MAX_PUBLIC_RUN` of
this file's words stand in a row: a longer task quotes a phrase of the text below it
("what does 'refund window' mean in the part below"), which with the buyer's corpus is
the buyer's own words, and the text itself follows at once. The parts are ones customers
write themselves ("summarise this for Dana", "ticket #48213"), so a vendor that matched
on them alone would route its customers' traffic too.

With task templates of the buyer's own (`evalkit corpus add --tasks FILE`), those are used
instead, each opened by a reference detail so that no two prompts share an opening.

Each task carries a seeded detail within its first few words (a ticket, an order, a name
and a reference), so no two prompts share a prefix-cache block (16 tokens).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import lru_cache

#: this many words in a row, shared with text that ships with evalkit, mark a request
RUN = 10
#: the most words of this file a task puts in a row: any window of `RUN` words then holds
#: three or more of the text's own
MAX_PUBLIC_RUN = 7

_NUMBERED = re.compile(r"[^\W_]*\d[^\W_]*")
_WORD = re.compile(r"[^\W_]+|#")


def words(text: str) -> list[str]:
    """A text as a vendor compares it: lower-case words, punctuation dropped, each word
    holding a digit one mark `#` (numbers are what a generator varies)."""
    return _WORD.findall(_NUMBERED.sub("#", text.lower().replace("#", " ")))


_NAMES = ("Dana", "Ravi", "Mei", "Tomasz", "Aisha", "Jonas", "Lucía", "Kenji", "Omar",
          "Priya", "Ines", "Felix", "Noor", "Mateo", "Sanne", "Yusuf", "Grace", "Bruno")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_GREETINGS = ("Hi,", "Hello,", "Hey,", "Hi there,", "Quick one:", "Morning!", "Question:",
              "Hi all,")
#: a detail that opens the message ({n}: a number, {h}: a short hex reference, {o}: an
#: order number, {name}), then one placed after the request
_LEADS = ("Re ticket {n}:", "Ticket #{n}:", "Case {n}:", "Re case {n} -", "Order {o}:",
          "For {name}, ref {h}:", "{name} (ref {h}) asks:", "Thread {n}:", "Re: #{n}",
          "From {name}, case {n}:", "#{n}:", "Ref {h}:")
_TAILS = (" (ticket #{n})", " for {name}, ref {h}", " for case {n}", " (order {o})",
          " (thread {n}, from {name})", " (case {n}, due {month} {day})",
          " for project {project}", " re #{n}", " ({name}, {h})")
#: the most words a request may put before a detail that follows it: the detail must fall
#: inside the first prefix-cache block
_BEFORE_TAIL = 6
#: requests without a quoted phrase ({obj}: what they are about) and with one ({about})
_REQUESTS = (
    "summarise {obj}", "summarize {obj}", "sum up {obj}", "give me the gist of {obj}",
    "can you summarise {obj}", "write a short summary of {obj}",
    "explain {obj}", "can you explain {obj}", "walk me through {obj}",
    "help me understand {obj}", "list the key points of {obj}",
    "pull the names and dates out of {obj}", "extract the action items from {obj}",
    "make a checklist from {obj}", "list every rule in {obj}",
    "draft a reply based on {obj}", "write a short email about {obj}",
    "turn {obj} into an announcement", "write an FAQ entry from {obj}",
    "rewrite {obj} for a customer", "make {obj} clearer", "shorten {obj}",
    "simplify {obj}", "fix the tone of {obj}",
)
_QUESTIONS = (
    "what does {obj} say about {p}", "what is meant by {p} in {obj}",
    "is {p} covered in {obj}", "how does {obj} define {p}", "why does {obj} mention {p}",
    "what does {p} mean here", "explain {p} from {obj}", "summarise what {obj} says on {p}",
)
_OBJECTS = ("this", "the text below", "the following", "these notes", "the passage below",
            "this doc", "the excerpt below", "what follows", "the section below", "it")
_ABOUT = ("the part about {p}", "the section on {p}", "the bit on {p}", "the lines on {p}")
_CONSTRAINTS = (", in three bullets", " in plain English", " for a new hire",
                " in under {k} words", ", keep it short", " step by step",
                " as a numbered list", " with one example", ", briefly", " for my manager")
_QUOTES = (("“", "”"), ('"', '"'), ("'", "'"))

#: how far into a buyer's template its {detail} may come and still open the prompt
_TEMPLATE_DETAIL_CHARS = 24
#: a segment of a task: its text, and whether its words are this file's (public)
Segment = tuple[str, bool]


def _fill(rng: random.Random, part: str) -> str:
    """A part with its details drawn (only those it names): the numbers make the prompt
    unique."""
    if "{" not in part:
        return part
    n = rng.randrange(10_000, 10_000_000)
    values: dict[str, object] = {"n": n, "obj": "{obj}", "p": "{p}", "about": "{about}"}
    if "{h}" in part:
        values["h"] = f"{rng.randrange(0x10000, 0x1000000):x}"
    if "{o}" in part:
        values["o"] = f"{n % 100_000}-{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{n % 97}"
    if "{name}" in part:
        values["name"] = rng.choice(_NAMES)
    if "{month}" in part:
        values["month"], values["day"] = rng.choice(_MONTHS), rng.randrange(1, 29)
    if "{project}" in part:
        values["project"] = f"{rng.choice(_NAMES).lower()}-{n % 10_000}"
    if "{k}" in part:
        values["k"] = rng.choice((50, 80, 100, 150))
    return part.format(**values)


def longest_public_run(segments: Sequence[Segment]) -> int:
    """The most public words in a row (a number in the private text is no less public)."""
    best = run = 0
    for text, public in segments:
        for w in words(text):
            if public or w == "#":
                run += 1
                best = max(best, run)
            else:
                run = 0
    return best


@lru_cache(maxsize=1024)
def _n(part: str) -> int:
    """Words in a part once filled: each detail is one or two words whatever is drawn (a
    number, a name, a reference; an order number or a project two), so a part's count is
    known without filling it (tasks are made per request: regular expressions over each
    draft were most of a prompt's cost)."""
    return len(words(_fill(random.Random(0), part)))


def _draft(rng: random.Random, phrase: str | None) -> list[Segment] | None:
    """One task, as segments: [greeting] [detail] request [detail] [constraint]; None
    when the draws put more than MAX_PUBLIC_RUN of this file's words in a row."""
    greeting = rng.choice(_GREETINGS) + " " if rng.random() < 0.3 else ""
    if phrase is not None and rng.random() < 0.76:  # a question, or a request, about it
        request = (rng.choice(_QUESTIONS).replace("{obj}", rng.choice(_OBJECTS))
                   if rng.random() < 0.53 else
                   rng.choice(_REQUESTS).replace("{obj}", rng.choice(_ABOUT)))
        lead = rng.choice(_LEADS)
        words_before = _n(request.partition("{p}")[0])
        # the detail opens the task where it fits before the phrase, else follows the
        # request (never far in: it must fall in the first prefix-cache block)
        lead_first = words_before > _BEFORE_TAIL or (
            rng.random() < 0.5 and words_before + _n(lead) <= MAX_PUBLIC_RUN)
        detail = lead if lead_first else rng.choice(_TAILS)
    else:  # a plain request, chosen among those that fit beside the detail
        lead_first = rng.random() < 0.5
        detail = rng.choice(_LEADS if lead_first else _TAILS)
        room = MAX_PUBLIC_RUN - _n(detail)
        fits = _plain(room if lead_first else min(room, _BEFORE_TAIL))
        if not fits:
            return None
        request = rng.choice(fits)
    before, quoted, after = request.partition("{p}")
    constraint = rng.choice(_CONSTRAINTS) if rng.random() < 0.35 else ""
    runs = [_n(greeting) + _n(detail) * lead_first + _n(before),
            _n(after) + _n(detail) * (not lead_first) + _n(constraint)]
    if not quoted:  # no phrase: the whole task is one run
        runs = [sum(runs), 0]
    last = 1 if quoted else 0  # the run the constraint ends
    if runs[last] > MAX_PUBLIC_RUN and constraint:
        runs[last] -= _n(constraint)
        constraint = ""
    if runs[0] > MAX_PUBLIC_RUN and greeting:
        runs[0] -= _n(greeting)
        greeting = ""
    if max(runs) > MAX_PUBLIC_RUN:
        return None
    mark = rng.choice(_QUOTES)
    filled = _fill(rng, detail)
    out: list[Segment] = [(greeting, True)] if greeting else []
    if lead_first:
        out.append((filled + " ", True))
    out.append((before, True))
    if quoted and phrase:
        out += [(mark[0], True), (phrase, False), (mark[1], True)]
    out.append((after, True))
    if not lead_first:
        out.append((filled, True))
    if constraint:
        out.append((_fill(rng, constraint), True))
    asks = request.split(" ", 1)[0] in ("what", "why", "how", "is")
    out.append(("?" if asks else rng.choice((".", ":", "", ".")), True))
    return _capitalised([seg for seg in out if seg[0]])


@lru_cache(maxsize=16)
def _plain(most: int) -> tuple[str, ...]:
    """Every request without a phrase, with its object, of at most `most` words."""
    return tuple(t for t in (r.replace("{obj}", o) for r in _REQUESTS for o in _OBJECTS)
                 if _n(t) <= most)


def _capitalised(segments: list[Segment]) -> list[Segment]:
    text, public = segments[0]
    return [(text[:1].upper() + text[1:], public), *segments[1:]]


def _lead(rng: random.Random) -> str:
    """A detail that opens a message: the unique part of a buyer's template's prompt."""
    return _fill(rng, rng.choice(_LEADS))


def _template(rng: random.Random, templates: Sequence[str], phrase: str | None) -> str:
    """One of the buyer's templates, its {detail} and {phrase} filled; one whose {detail}
    comes late, or that has none, is opened by one, so two prompts never share an
    opening."""
    chosen = rng.choice(templates)
    detail = _fill(rng, rng.choice(_TAILS))
    filled = chosen.replace("{phrase}", phrase or "this").replace("{detail}", detail)
    early = "{detail}" in chosen and chosen.index("{detail}") <= _TEMPLATE_DETAIL_CHARS
    return filled if early else f"{_lead(rng)} {filled}"


def compose_task(rng: random.Random, phrase: str | None,
                 templates: Sequence[str] = ()) -> str:
    """The task that opens a prompt: one of the buyer's `templates` when there are any,
    else composed from this file's parts, `phrase` (a few words of the text that follows)
    quoted where it keeps the parts' own words short of `MAX_PUBLIC_RUN` in a row."""
    if templates:
        return _template(rng, templates, phrase)
    for _ in range(24):
        segments = _draft(rng, phrase)
        if segments is not None:
            return "".join(text for text, _ in segments)
    # a lead and a bare request: a few words however the draws fell
    return f"{_lead(rng)} {rng.choice(('Summarise:', 'Explain:', 'Thoughts?', 'TL;DR?'))}"
