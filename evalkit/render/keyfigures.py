"""Page one's key figures, in order: the run's lead (validity, status, profile; built by
`evalkit.render.page`), the summary's figures (`evalkit.render.pagetext.key_figures`; a
voice run's calls instead, `evalkit.render.voice.voice_key_figures`),
configuration findings, the answers under load, what a session costs, the workload, and
how many streams stay above reading speed. Pure: the typed `Scorecard` and `Summary` in.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.analysis.summary import Summary, as_number
from evalkit.analysis.thresholds import SloProfile
from evalkit.fmt import fmt_rate
from evalkit.render import words
from evalkit.render.costtext import call_cost_line, cost_line
from evalkit.render.findings import configuration_figures
from evalkit.render.pagetext import fmt_value
from evalkit.render.pagetext import key_figures as summary_figures
from evalkit.render.precision import answers_figure
from evalkit.render.voice import voice_key_figures
from evalkit.review.scorecard import ReadingSpeedCard, Scorecard

Row = tuple[str, str]


def slo_limits(card: Scorecard) -> dict[str, SloProfile]:
    """Each use case's SLO profile as the scorecard was judged with it."""
    out = card.slo_profiles
    for name, uc in card.use_cases.items():
        if uc.profile:
            out[name] = uc.profile
    return out


def reading_speed_row(reading: ReadingSpeedCard) -> Row:
    """How many streams receive at least reading speed, and the rule it was judged by."""
    pct, speed = reading.percentile, reading.reading_speed_tokens_per_s
    value = fmt_value(reading.value)
    if reading.fit.lower_bound and reading.value is not None:
        value = f"≥ {value} (the highest level tried)"
    elif reading.fit.fit is None:
        value = "not judged"
    share = f"{pct[1:]} % of" if pct[1:].isdigit() else "most"
    known = as_number(speed)  # plain() says an int and a float differently: as before
    rate = f"{words.plain(known)} tok/s" if known is not None else fmt_rate(speed)
    return ("Streams at reading speed",
            f"{value}; judged on whether {share} streams receive at least {rate}")


def key_figures(card: Scorecard, summary: Summary | None, lead: Sequence[Row],
                workload_line: Row | None) -> tuple[Row, ...]:
    """Page one's key figures; `lead` the run's own rows, `workload_line` the workload's
    row (None: no run, so no workload was measured)."""
    if summary is not None and summary.voice is not None:
        # a voice run: its calls' figures, and no text figure (all would read "—")
        figures = [*lead, *voice_key_figures(card, summary.voice)]
        if (line := cost_line(card.cost)) is not None:
            figures.append(line)
        return tuple(figures)
    figures = [*lead, *summary_figures(summary), *configuration_figures(summary)]
    precision = summary.sections.precision if summary is not None else None
    if (row := answers_figure(precision, card.answers, card.swap)) is not None:
        figures.append(row)
    if summary and (line := cost_line(card.cost)) is not None:
        figures.append(line)
    if summary and (line := call_cost_line(card.cost)) is not None:
        figures.append(line)
    if workload_line is not None:
        figures.append(workload_line)
    if summary and card.reading_speed:
        figures.append(reading_speed_row(card.reading_speed))
    return tuple(figures)
