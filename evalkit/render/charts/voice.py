"""The voice chart: what a caller hears against concurrent calls. Judged TTFA p90 (time
to first audio, less the silence window we asked the vendor's VAD to wait) with its 95 %
interval, the voice SLO's line, the share of answers with a noticeable underrun on a
second axis, and the level that degraded first marked."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

from evalkit.analysis.summary_voice import VoiceLevel, VoiceSection
from evalkit.render.charts.kit import (
    _RC,
    _handles,
    figure_title,
    legend_below,
    levels_axis,
    new_figure,
    number_ticks,
    plain,
    series_style,
    to_svg,
)

VOICE_CAPTION = (
    "Time to first audio as a caller hears it, by concurrent calls: the judged TTFA p90 "
    "(from the last voiced frame we sent to the first answer audio byte, less the silence "
    "window we asked the vendor's VAD to wait) with its 95 % interval (an end too few "
    "turns can bound is drawn to the point), the voice SLO's limit as a dashed line, the "
    "share of answers whose playback ran dry noticeably on the right axis, and the level "
    "that degraded first marked.")


def _ends(lv: VoiceLevel) -> tuple[float, float, float]:
    """The p90 and its interval's ends (the point where an end is open)."""
    p90 = lv.ttfa_judged_s.p90 or 0.0
    lo, hi = lv.ttfa_judged_s.interval("p90") or (None, None)
    return p90, p90 if lo is None else lo, p90 if hi is None else hi


def voice_chart(voice: VoiceSection | None) -> str | None:
    """Judged TTFA p90 and noticeable underruns by calls; None without an answered level."""
    levels = [lv for lv in (voice.levels if voice else ())
              if lv.ttfa_judged_s.p90 is not None and lv.concurrency is not None]
    if voice is None or not levels:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.6)
        ax = fig.axes[0]
        xs = [float(lv.concurrency or 0) for lv in levels]
        ends = [_ends(lv) for lv in levels]
        ax.errorbar(xs, [p for p, _, _ in ends],
                    yerr=[[p - lo for p, lo, _ in ends], [hi - p for p, _, hi in ends]],
                    marker="o", color="black", capsize=3,
                    label="judged TTFA p90 (95 % interval)")
        if voice.slo.ttfa_p90_s is not None:
            ax.axhline(voice.slo.ttfa_p90_s, color="0.2", linestyle="--", linewidth=1.2,
                       label=f"voice SLO: TTFA p90 {voice.slo.ttfa_p90_s:g} s")
        if voice.first_degraded_level is not None:
            ax.axvline(voice.first_degraded_level, color="0.55", linestyle=":",
                       label=f"first degraded: {voice.first_degraded or '?'} at "
                             f"{voice.first_degraded_level} calls")
        top = max([hi for _, _, hi in ends] + [voice.slo.ttfa_p90_s or 0.0])
        ax.set_ylim(0, top * 1.3 or 1.0)
        ax.set_ylabel("seconds")
        levels_axis(ax, xs)
        ax.set_xlabel("concurrent calls")
        share = ax.twinx()
        shares = [(float(lv.concurrency or 0), (lv.noticeable_underrun.share or 0.0) * 100)
                  for lv in levels if lv.noticeable_underrun.share is not None]
        if shares:
            share.plot([x for x, _ in shares], [s for _, s in shares], marker="s",
                       color="0.45", markerfacecolor="white", linestyle="-.",
                       label="answers with a noticeable underrun (%)")
        share.set_ylim(0, max([s for _, s in shares] + [10.0]) * 1.15)
        share.set_ylabel("underruns (%)")
        legend_below(fig, *_handles(ax, share))
        ax.set_title("What a caller hears: judged TTFA p90 and underruns by concurrent "
                     "calls", loc="left")
        return to_svg(fig)


COMPARE_CAPTION = (
    "Realtime calls, one line per run: the judged time to first audio p90 (left; lower is "
    "better; the dashed line is the voice SLO's limit) and the share of answers whose "
    "playback ran dry noticeably (right) at each level of concurrent calls. A level where "
    "our client was the bottleneck, and a run judged invalid, are not drawn: their "
    "figures are not the vendor's.")


def _judged(voice: VoiceSection) -> list[VoiceLevel]:
    """The levels a comparison may draw: of a run not judged invalid, where our client
    was not the bottleneck, with an answered turn."""
    if voice.validity.status not in ("valid", "degraded"):
        return []
    return [lv for lv in voice.levels if lv.concurrency is not None
            and lv.client.client_bound is False and lv.ttfa_judged_s.p90 is not None]


def voice_overlay(runs: Sequence[tuple[str, VoiceSection | None]]) -> str | None:
    """The comparison's voice chart (None: no run has a level to draw)."""
    drawn = [(label, levels) for label, voice in runs
             if voice is not None and (levels := _judged(voice))]
    if not drawn:
        return None
    limit = next((v.slo.ttfa_p90_s for _, v in runs if v is not None
                  and v.slo.ttfa_p90_s is not None), None)
    with matplotlib.rc_context(_RC):
        fig = new_figure(6.6, 2.6, ncols=2)
        ttfa, under = fig.axes
        every = sorted({float(lv.concurrency or 0) for _, levels in drawn for lv in levels})
        for i, (label, levels) in enumerate(drawn):
            xs = [float(lv.concurrency or 0) for lv in levels]
            ttfa.plot(xs, [(lv.ttfa_judged_s.p90 or 0.0) * 1000 for lv in levels],
                      label=plain(label), **series_style(i))
            shares = [(float(lv.concurrency or 0), lv.noticeable_underrun.share * 100)
                      for lv in levels if lv.noticeable_underrun.share is not None]
            if shares:
                under.plot([x for x, _ in shares], [v for _, v in shares], **series_style(i))
        if limit is not None:
            ttfa.axhline(limit * 1000, color="0.2", linestyle="--", linewidth=1.0)
        for ax, title, unit in ((ttfa, "judged TTFA p90 (ms)", "ms"),
                                (under, "answers with a noticeable underrun (%)", "%")):
            levels_axis(ax, every)
            ax.set_xlabel("concurrent calls")
            number_ticks(ax.yaxis)
            ax.set_ylim(bottom=0)
            ax.set_title(title, loc="left")
            ax.set_ylabel(unit)
        figure_title(fig, "Realtime calls, one line per run")
        legend_below(fig, *ttfa.get_legend_handles_labels())
        return to_svg(fig)
