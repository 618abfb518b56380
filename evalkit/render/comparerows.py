"""The comparison's tables as the template prints them: a row's cells in words, for the
key figures and for the realtime voice calls (`evalkit.review.compare_voice`), and each
run's standing at the head of the voice table. Pure: no I/O.

A cell says what it holds and never less: a value in its unit (with the load it was read
at, and what it counts: "0 % (0 of 6 answers)"), or why there is none: left out (not
comparable), not judged (withheld: our client was the bottleneck, the run invalid), or
not measured, and by what ("a text run", "no level of 4 calls"); never a bare dash that
reads as nothing wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.fmt import fmt_unit
from evalkit.render.pdf import clip
from evalkit.review.compare import NO_STREAMS, Comparison, left_out_words
from evalkit.review.compare_model import Cell, Figure, Row
from evalkit.review.compare_voice import VoiceStanding, calls

DETECTION_WORDS = {"server_vad": "the vendor's server VAD", "client": "the client commits"}


@dataclass(frozen=True)
class CellText:
    """One cell as printed: its words, whether it holds the row's ★, and why it cannot."""

    text: str
    best: bool
    excluded: str | None
    unstarred: str | None


@dataclass(frozen=True)
class RowText:
    """One row as printed: the figure's title, which way is better, why no ★, its cells."""

    title: str
    better: str
    no_star: str | None
    cells: tuple[CellText, ...]


def cell_text(cell: Cell, fig: Figure) -> str:
    """A cell's words: "215 ms at 4 streams", "0 % (0 of 6 answers)", "not judged:
    client-bound at 3 calls: …", "not measured: no realtime calls"."""
    if cell.withheld is not None:
        return f"not judged: {cell.withheld}"
    if cell.value is None:
        return cell.detail or "not measured"
    text = fmt_unit(cell.value, fig.unit)
    what = "user" if fig.workload else fig.load_unit
    if cell.level is not None and not fig.voice:  # a voice row's title names its level
        text += f" at {cell.level} {what}{'s' if cell.level != 1 else ''}"
    return f"{text} ({cell.detail})" if cell.detail else text


def row_text(row: Row) -> RowText:
    return RowText(row.figure.title, row.figure.better, row.no_star, tuple(
        CellText(cell_text(c, row.figure), c.best,
                 left_out_words(c.excluded) if c.excluded else None, c.unstarred)
        for c in row.cells))


def standing_text(standing: VoiceStanding | None) -> str:
    """A run's realtime calls, as the head of its column says them."""
    if standing is None:
        return "no realtime calls: a text run"
    status = standing.validity or "of no stated validity"
    why = "; ".join(clip(r, 200) for r in standing.reasons)
    head = status if status == "valid" else status.upper()
    bound = standing.client_bound_levels
    said = [f"{head}{': ' + why if why else ''}"]
    if bound:
        said.append("client-bound (not judged) at " + ", ".join(calls(c) for c in bound))
    shape = (f"{DETECTION_WORDS.get(str(standing.detection), clip(str(standing.detection), 20))}"
             f", {standing.turns_per_call or '?'} turn(s) a call, "
             + ("the buyer's recordings" if standing.audio_source == "buyer"
                else "evalkit's shipped utterances (public)"
                if standing.audio_source == "shipped" else "audio of unknown source"))
    said.append(f"turn detection: {shape}")
    return ". ".join(said) + "."


@dataclass(frozen=True)
class VoiceTable:
    """The comparison's "Realtime voice calls" table: each run's standing, then rows."""

    standings: tuple[str, ...]
    rows: tuple[RowText, ...]


def voice_table(cmp: Comparison) -> VoiceTable | None:
    """The table when any run made realtime calls (None: none did)."""
    if not cmp.voice:
        return None
    return VoiceTable(tuple(standing_text(s) for s in cmp.voice),
                      tuple(row_text(r) for r in cmp.voice_rows))


def key_rows(rows: Sequence[Row]) -> tuple[RowText, ...]:
    """The key figures' rows: every row but the voice table's, less those no run
    measured because every run made realtime calls (the voice table says what they
    measured; a table of "not measured" would read as a run that measured nothing)."""
    return tuple(row_text(r) for r in rows if not r.figure.voice and not all(
        c.detail == NO_STREAMS for c in r.cells))

