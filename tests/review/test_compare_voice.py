"""`evalkit compare` on voice runs (`probe --api openai-realtime`): two real runs against
the realtime reference endpoint, a fast vendor and one that falls behind playback and
refuses a call past its limit (two levels, two turns a call: seconds), compared through
the command, and each figure read back from compare.json and the page against that run's
own summary.json, so a voice figure dropped or set under the other vendor fails."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import (
    VoiceClient,
    VoiceLevel,
    VoiceSection,
    VoiceValidity,
)
from evalkit.cli import cli
from evalkit.fmt import fmt_ms, fmt_pct
from evalkit.render.comparerows import voice_table
from evalkit.review.compare import NO_STREAMS, RunView, compare_runs
from evalkit.review.compare_voice import NO_CALLS
from tests.probe.realtime.helpers import voice_probe
from tests.probe.realtime.test_voice_run import write_tones

TEXT_RUN = Path(__file__).parents[1] / "data" / "report_run"
#: the fast vendor, and the slow one: its audio falls to half real time past one call in
#: flight (every answer runs dry at 3 calls) and a third call is refused
FAST = {"ttfa_s": 0.12, "ttfa_jitter_s": 0.02, "answer_s": 0.3, "audio_rate": 2.0}
SLOW = {"ttfa_s": 0.3, "ttfa_jitter_s": 0.02, "answer_s": 0.6, "audio_rate": 2.0,
        "limit": 1, "over_rate": 0.5, "max_sessions": 2}


@pytest.fixture(scope="module")
def voice_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The fast vendor this quarter, the slow one the next (one after the other: the
    trend reads them in that order)."""
    folder = tmp_path_factory.mktemp("voicecmp")
    audio = write_tones(folder / "audio")  # both vendors hear the same callers
    runs = {}
    for name, params in (("fast", FAST), ("slow", SLOW)):
        runs[name] = voice_probe(folder / name, params, "--levels", "1,3", seed=3,
                                 audio=audio)
    yield runs


def voice_of(run: Path) -> VoiceSection:
    """The run's calls as its summary.json says them (degraded where the shared host made
    our client the bottleneck at a level: those figures are then withheld)."""
    voice = Summary.from_json(json.loads((run / "summary.json").read_text())).voice
    assert voice is not None and voice.validity.status in ("valid", "degraded"), voice
    return voice


def judged(lv: VoiceLevel | None, value: float | None) -> float | None:
    """What compare must show of a level's figure: withheld where our client was the
    bottleneck (or did not say)."""
    return value if lv is not None and lv.client.client_bound is False else None


def html_row(html: str, title: str) -> list[str]:
    """The cells of the voice table's row titled `title`, as printed, column by column."""
    voice = html.split("Realtime voice calls, side by side", 1)[1]
    row = re.search(r"<tr><th class=\"fig\">" + re.escape(title) + r" <span.*?</tr>",
                    voice, re.S)
    assert row is not None, title
    return [re.sub(r"<[^>]+>|\s+", " ", c).strip()
            for c in re.findall(r"<td>(.*?)</td>", row.group(0), re.S)]


def test_compare_carries_each_runs_voice_figures_in_its_column(
        voice_runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "voice.pdf"
    result = CliRunner().invoke(cli, ["compare", str(voice_runs["fast"]),
                                      str(voice_runs["slow"]), "--out", str(out), "--html"])
    assert result.exit_code == 0, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    html = out.with_suffix(".html").read_text()
    fast, slow = voice_of(voice_runs["fast"]), voice_of(voice_runs["slow"])
    figures = data["figures"]
    for level in (1, 3):
        mine = [v.level(level) for v in (fast, slow)]
        assert all(lv is not None for lv in mine)
        for p in ("p50", "p90"):
            row = figures[f"voice.ttfa_judged_{p}_s.at_{level}"]
            want = [judged(lv, lv.ttfa_judged_s.get(p)) for lv in mine if lv is not None]
            assert row["values"] == want
            assert [w is None for w in want] == [w is not None for w in row["withheld"]]
            cells = html_row(html, f"Time to first audio {p} (judged) at "
                                   f"{level} call{'s' if level > 1 else ''}")
            assert cells == [fmt_ms(v) if v is not None else f"not judged: {why}"
                             for v, why in zip(want, row["withheld"], strict=True)]
        for key, pick, what in (("noticeable_underrun_share", "noticeable_underrun",
                                 "answers"), ("failed_turn_share", "failures", "turns"),
                                ("refused_call_share", "admission", "calls")):
            levels = [lv for lv in mine if lv is not None]
            shares = [getattr(lv, pick) for lv in levels]
            row = figures[f"voice.{key}.at_{level}"]
            # calls refused are the vendor's word whatever our client's pace
            assert row["values"] == [
                s.count / s.of if pick == "admission" else judged(lv, s.count / s.of)
                for lv, s in zip(levels, shares, strict=True)]
            assert row["detail"] == [
                f"{s.count} of {s.of} {what if s.of != 1 else what[:-1]}" for s in shares]
    # the slow vendor's calls ran dry and one was refused at 3 calls; the fast one's not
    tops = [v.level(3) for v in (fast, slow)]
    assert figures["voice.noticeable_underrun_share.at_3"]["values"] == [
        judged(lv, share) for lv, share in zip(tops, (0.0, 1.0), strict=True)]
    assert figures["voice.refused_call_share.at_3"]["values"] == [0.0, 1 / 3]
    assert html_row(html, "Calls refused at 3 calls") == [
        "0% (0 of 3 calls)", f"{fmt_pct(1 / 3)} (1 of 3 calls)"]
    # what degraded first, and where; the most calls within the SLO, as each run found
    first = figures["voice.first_degraded_calls"]
    assert slow.first_degraded == "underruns" and fast.first_degraded_level is None
    assert first["values"] == [None, 3]
    assert first["detail"] == ["nothing degraded up to 3 calls: a lower bound", "underruns"]
    assert html_row(html, "First degraded at (concurrent calls)") == [
        "nothing degraded up to 3 calls: a lower bound", "3 (underruns)"]
    within = figures["voice.max_calls_within_slo"]
    # two turns a level cannot bound a p90 from above: nothing established, never 0
    assert [v.max_calls_within_slo for v in (fast, slow)] == [None, None]
    assert within["values"] == [None, None]
    assert all(d.startswith("none established: 1 call a tie") for d in within["detail"])
    assert [r["validity"] for r in data["voice_runs"]] == [
        v.validity.status for v in (fast, slow)]
    # no text stream was measured: no wall of text rows reading "not measured"
    assert "TTFT p50, alone" not in html
    assert "no text streams: their figures" in " ".join(html.split())


def test_a_text_run_beside_a_voice_run_reads_not_measured_never_zero(
        voice_runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "mixed.pdf"
    result = CliRunner().invoke(cli, ["compare", str(TEXT_RUN), str(voice_runs["fast"]),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    for key, row in data["figures"].items():
        if key.startswith("voice."):
            assert row["values"][0] is None and row["detail"][0] == NO_CALLS, key
        elif row["values"][0] is not None:  # the text run's measured figures
            assert row["values"][1] is None and row["detail"][1] == NO_STREAMS, key
    assert data["voice_runs"][0] is None
    assert data["voice_runs"][1]["validity"] == voice_of(voice_runs["fast"]).validity.status
    assert data["figures"]["baseline_ttft_p50_s"]["values"][0] is not None


def _view(run: Path, label: str, voice: VoiceSection, audio: tuple[str, ...] = ("a", "b")
          ) -> RunView:
    doc = {**json.loads((run / "summary.json").read_text()), "voice": voice.to_json()}
    return RunView(label, label, "2026-12-05", "1", {}, Summary.from_json(doc),
                   voice_audio=audio)


def clear(voice: VoiceSection) -> VoiceSection:
    """The run's calls with every level's self-check passed: a known start for the tests
    that then mark a level or a run themselves."""
    return replace(voice, levels=tuple(replace(lv, client=VoiceClient(client_bound=False))
                                       for lv in voice.levels),
                   client_bound_levels=(), validity=VoiceValidity("valid"))


def test_a_client_bound_level_or_an_invalid_run_is_not_judged(
        voice_runs: dict[str, Path]) -> None:
    """Our client's pause is never the vendor's figure: a client-bound level's figures
    are withheld (its refusals stay: the vendor's word), an invalid run's all are; a
    degraded run's show but win no ★; other callers' audio is left out."""
    fast, slow = clear(voice_of(voice_runs["fast"])), clear(voice_of(voice_runs["slow"]))
    bound = replace(slow, levels=tuple(
        replace(lv, client=VoiceClient(client_bound=True)) if lv.concurrency == 3 else lv
        for lv in slow.levels), client_bound_levels=(3,),
        validity=VoiceValidity("degraded", ("the client was the bottleneck at level 3",)))
    invalid = replace(fast, validity=VoiceValidity("invalid", ("no level could be judged",)))
    runs = [_view(voice_runs["fast"], "fast", fast), _view(voice_runs["slow"], "slow", bound),
            _view(voice_runs["fast"], "gone", invalid),
            _view(voice_runs["fast"], "other", fast, audio=("c",))]
    cmp = compare_runs(runs)
    rows = {r.figure.key: r for r in cmp.voice_rows}
    p90 = rows["voice.ttfa_judged_p90_s.at_3"].cells
    assert p90[0].value == (fast.level(3) or fast.levels[0]).ttfa_judged_s.p90
    assert p90[1].value is None and p90[1].withheld == (
        "client-bound at 3 calls: our client was the bottleneck")
    assert p90[2].value is None and p90[2].withheld == "voice run invalid"
    assert p90[3].value is None and (p90[3].excluded or "").startswith("caller audio")
    assert rows["voice.ttfa_judged_p90_s.at_1"].cells[1].value is not None
    assert rows["voice.ttfa_judged_p90_s.at_1"].cells[1].unstarred == "voice run degraded"
    refused = rows["voice.refused_call_share.at_3"].cells
    assert refused[1].value == pytest.approx(1 / 3) and refused[1].withheld is None
    assert all(c.withheld == "voice run invalid" for r in cmp.voice_rows
               for c in [r.cells[2]])
    table = voice_table(cmp)
    assert table is not None
    assert table.standings[1].startswith("DEGRADED: the client was the bottleneck")
    assert "client-bound (not judged) at 3 calls" in table.standings[1]
    assert table.standings[2].startswith("INVALID: no level could be judged")
    texts = {r.title: [c.text for c in r.cells] for r in table.rows}
    assert texts["Time to first audio p90 (judged) at 3 calls"][1:3] == [
        "not judged: client-bound at 3 calls: our client was the bottleneck",
        "not judged: voice run invalid"]


def test_a_slower_quarter_of_one_voice_vendor_is_a_regression(
        voice_runs: dict[str, Path], tmp_path: Path) -> None:
    """The slow vendor's run read as the fast one's next quarter: its TTFA (300 against
    120 ms) is a regression at every level our client could judge in both."""
    out = tmp_path / "trend.pdf"
    result = CliRunner().invoke(cli, [
        "compare", str(voice_runs["fast"]), str(voice_runs["slow"]), "--same-vendor",
        "Acme Voice", "--out", str(out), "--fail-on", "regression"])
    said = " ".join(result.output.split())
    judged_in_both = [row["title"] for key, row in json.loads(
        out.with_suffix(".json").read_text())["figures"].items()
        if key.startswith("voice.ttfa_judged_") and None not in row["values"]]
    assert result.exit_code == 1, result.output
    assert judged_in_both
    for title in judged_in_both:
        assert f"regression: Acme Voice: {title}:" in said, title
    # a share that was none and is now most answers (underruns, refused calls) is a
    # regression in points: from 0 a relative change has no size, and it must not pass
    doc = json.loads(out.with_suffix(".json").read_text())
    rose = [row["title"] for key, row in doc["figures"].items()
            if key.startswith("voice.") and row.get("unit") == "share"
            and None not in row["values"] and row["values"][0] == 0 and row["values"][1] >= 0.1]
    assert rose, doc["figures"].keys()
    for title in rose:
        (found,) = [g for g in doc["regressions"] if g["figure"] == title]
        assert found["before"] == 0 and found["change"] == found["after"] >= 0.1
        assert "points against a tolerance of 1.0 points" in found["text"], found


def test_the_voice_chart_draws_no_level_that_is_not_the_vendors(
        voice_runs: dict[str, Path]) -> None:
    from evalkit.render.charts.voice import voice_overlay

    fast, slow = clear(voice_of(voice_runs["fast"])), clear(voice_of(voice_runs["slow"]))
    svg = voice_overlay([("Fastvoice", fast), ("Slowvoice", slow), ("Textco", None)])
    assert svg is not None and "Fastvoice" in svg and "Slowvoice" in svg
    assert "Textco" not in svg
    invalid = replace(slow, validity=VoiceValidity("invalid", ("no level",)))
    svg = voice_overlay([("Fastvoice", fast), ("Slowvoice", invalid)])
    assert svg is not None and "Slowvoice" not in svg
    bound = replace(fast, levels=tuple(replace(lv, client=VoiceClient(client_bound=True))
                                       for lv in fast.levels))
    assert voice_overlay([("Fastvoice", bound)]) is None


def test_a_level_whose_self_check_is_missing_is_not_judged(voice_runs: dict[str, Path]
                                                           ) -> None:
    """A level whose summary says nothing of our client's self-check judges nothing, as
    the analysis reads it: its TTFA is withheld, never set beside another vendor's."""
    fast = clear(voice_of(voice_runs["fast"]))
    unsaid = replace(fast, levels=tuple(replace(lv, client=VoiceClient())
                                        for lv in fast.levels))
    cmp = compare_runs([_view(voice_runs["fast"], "fast", fast),
                        _view(voice_runs["fast"], "unsaid", unsaid)])
    cells = {r.figure.key: r.cells for r in cmp.voice_rows}["voice.ttfa_judged_p50_s.at_1"]
    assert cells[0].value is not None and cells[1].value is None
    assert cells[1].withheld == "no client self-check at 1 call: our pace is not known"
