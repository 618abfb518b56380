"""What a voice run (`evalkit probe --api openai-realtime|gemini-live`) will do, decided before any
socket opens: the caller's audio read and checked, the levels of concurrent calls, how
long each runs and how many turns it needs (`VoicePlan`, printed by the CLI and run by
`evalkit.probe.realtime.voicerun`).

The levels are the text ramp's (`SuiteSettings.ramp.levels`: planned from the
questionnaire's claims, else 1, 2, 4, ...; --levels and --max-concurrency as for text),
and so are the floors a claim puts under a level. A level runs `level_duration_s` and
until `min_turns` turns have ended (36: the fewest that bound a p90 from above, so a
level can be found within the SLO), three times its duration at most: a call is real
time, so a level 1 of 36 turns of the shipped 2.5 s utterances takes minutes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evalkit.errors import UsageError
from evalkit.questionnaire.model import Questionnaire
from evalkit.voice.audio import Utterance, load_utterances
from evalkit.voice.records import VOICE_APIS

#: the `--api` names of the OpenAI Realtime protocol and of Gemini Live
REALTIME_API, GEMINI_LIVE_API = VOICE_APIS
#: Google's names for a Gemini API key, in the order read (google-genai's two)
GEMINI_KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def voice_key_env(api_key_env: str, api_version: str | None, api: str = REALTIME_API,
                  environ: Mapping[str, str] | None = None) -> str:
    """The variable a voice run's key is read from: --api-key-env's; for Gemini Live
    GEMINI_API_KEY, else GOOGLE_API_KEY when only that one is set; else Azure OpenAI's
    own with --api-version (Azure's marker), else OPENAI_API_KEY, as the text APIs'
    (`evalkit.probe.apis.base.key_env`): no vendor is sent another's key by default (an
    OpenAI key to Microsoft's endpoint or Google's)."""
    if api_key_env:
        return api_key_env
    if api == GEMINI_LIVE_API:
        env = environ if environ is not None else {}
        return next((n for n in GEMINI_KEY_ENVS if env.get(n)), GEMINI_KEY_ENVS[0])
    return "AZURE_OPENAI_API_KEY" if api_version else "OPENAI_API_KEY"


@dataclass(frozen=True)
class VoiceOptions:
    """The voice run's own settings (the CLI's flags; a notebook's)."""

    #: the buyer's recordings (None: the utterances shipped with evalkit, public)
    audio_dir: Path | None = None
    #: the vendor's server VAD decides the end of speech (False: the client commits)
    server_vad: bool = True
    turns: int = 3
    #: the silence window asked of the vendor's VAD
    silence_ms: int = 500
    frame_ms: int = 20
    #: every how many turns the caller talks over the answer (0: never)
    barge_in_every: int = 3
    pause_s: float = 0.3
    level_duration_s: float = 60.0
    min_turns: int = 36
    answer_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    #: the client's self-check (None: the profile's `client_check`): the event loop's lag
    #: p99 and the process's share of a core; the frames' own pace is checked apart (a
    #: frame late at the p99 is client-bound), and TTFA is stamped at the socket
    client_loop_lag_p99_s: float | None = None
    client_cpu_fraction: float | None = None


@dataclass(frozen=True)
class VoicePlan:
    """A voice run decided: the options, the audio read, the levels and their floors."""

    options: VoiceOptions
    utterances: tuple[Utterance, ...]
    levels: tuple[int, ...]
    #: least turns by level (the options' floor, or a claim's)
    min_turns: dict[int, int]
    #: levels run past the first degradation to confirm it; levels a claim names run
    #: whatever happens below them
    confirm_levels: int
    claimed: tuple[int, ...]

    @property
    def public(self) -> bool:
        """The caller's audio ships with evalkit: a vendor can recognise it."""
        return self.options.audio_dir is None

    def describe(self) -> list[str]:
        """The plan in lines, as printed before the run (and by --dry-run)."""
        o = self.options
        audio = (f"{len(self.utterances)} recording(s) from {o.audio_dir}" if not self.public
                 else f"the {len(self.utterances)} utterances shipped with evalkit (public)")
        return [f"voice: levels {', '.join(map(str, self.levels))} concurrent calls, each "
                f"level {o.level_duration_s:g} s and at least "
                f"{min(self.min_turns.values(), default=o.min_turns)} turns (at most "
                f"{3 * o.level_duration_s:g} s); the ramp stops {self.confirm_levels} "
                "level(s) after the first degradation",
                f"  calls of {o.turns} turn(s) in {o.frame_ms} ms frames at real-time pace, "
                + (f"the vendor's VAD deciding the end of speech ({o.silence_ms} ms asked)"
                   if o.server_vad else "the client committing each turn")
                + (f", a barge-in every {o.barge_in_every} turns" if o.barge_in_every
                   else ""),
                f"  audio: {audio}"]


def plan_voice(options: VoiceOptions | None, levels: tuple[int, ...],
               floors: dict[int, int], confirm_levels: int,
               claimed: tuple[int, ...]) -> VoicePlan:
    """The voice run for these options over the ramp's levels; bad options and bad
    recordings (`--audio DIR`: format, length, count, each named) are usage errors."""
    o = options or VoiceOptions()
    if o.turns < 1 or o.min_turns < 0 or o.level_duration_s <= 0:
        raise UsageError("a voice run needs calls of at least one turn and levels of a "
                         "positive duration")
    if not 20 <= o.frame_ms <= 40:
        raise UsageError(f"frames of 20 to 40 ms, as a phone sends them (not {o.frame_ms})")
    if o.silence_ms <= 0 or o.barge_in_every < 0:
        raise UsageError("the VAD's silence window must be positive")
    if not levels:
        raise UsageError("a voice run needs at least one level of concurrent calls")
    utterances = tuple(load_utterances(o.audio_dir))
    return VoicePlan(o, utterances, tuple(levels),
                     {c: max(o.min_turns, int(floors.get(c, 0))) for c in levels},
                     confirm_levels, claimed)


def voice_setting_notes(q: Questionnaire, options: VoiceOptions | None) -> list[str]:
    """Where the questionnaire's voice TTFA claim assumes another turn detection or
    silence window than the run will ask: the run will not verify it (the scorecard
    compares only like with like, `evalkit.review.voiceclaims`), said before it starts."""
    a = q.q1
    claimed = a.voice_turn_detection or ("server_vad" if a.voice_silence_ms else None)
    if not a.voice or claimed is None:
        return []
    run = options or VoiceOptions()
    asked = "server_vad" if run.server_vad else "client"
    if claimed == asked and (claimed == "client" or a.voice_silence_ms == run.silence_ms):
        return []
    said = (f"server VAD with a {a.voice_silence_ms} ms silence window"
            if claimed == "server_vad" else "client turn detection")
    runs = (f"server VAD with {run.silence_ms} ms" if run.server_vad
            else "client turn detection")
    flags = ("--turn-detection client" if claimed == "client" else
             "--turn-detection server-vad"
             + (f" --silence-ms {a.voice_silence_ms}" if a.voice_silence_ms else ""))
    return [f"Q1's voice claim assumes {said}; this run asks {runs}, so it will not verify "
            f"that claim ({flags} would)"]
