"""run.json read as typed data (`RunMeta`): what was probed, when, with which settings and
by which evalkit, for the review, the page and the comparison.

`open_run` reads it once, beside the document itself (`RunDir.run`, kept for the
importers and the evidence checks, and its bytes for the attachments). Read defensively
(`evalkit.analysis.jsonread.read_as`): run.json is a file anyone can edit, so a missing or
malformed part is None, never a crash. The free-form parts (the vendor label, the
provenance, the client) stay JSON as written: their readers clean them before a page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from evalkit.analysis.jsonread import Json, read_as


@dataclass(frozen=True)
class Sampling:
    """The sampling every request asked for (temperature, seed; None: the API's own)."""

    temperature: float | None = None
    seed: int | None = None


@dataclass(frozen=True)
class StandIn:
    """The model and endpoint a demonstration run stood in for (run.json's
    `stands_in_for`: the demo's reference endpoint played that vendor's endpoint)."""

    model: str | None = None
    endpoint: str | None = None

    @classmethod
    def from_json(cls, doc: object) -> StandIn | None:
        """The object as written; None when it names nothing at all ({}): no stand-in."""
        return read_as(cls, doc) if isinstance(doc, Mapping) and doc else None

    def to_json(self) -> dict[str, str]:
        """The object again, with the keys it gave (scorecard.json's `run.stands_in_for`)."""
        return {key: value for key, value in (("model", self.model),
                                              ("endpoint", self.endpoint))
                if value is not None}


@dataclass(frozen=True)
class Target:
    """The endpoint probed: its base URL, the model asked for, the API spoken, how the
    probe authenticated (the kind, never the secret) and the sampling it asked for."""

    base_url: str | None = None
    model: str | None = None
    api: str | None = None
    auth: str | None = None
    sampling: Sampling = field(default_factory=Sampling)


@dataclass(frozen=True)
class Clock:
    """The run's clock: its origin (t0_s = 0) read on the wall clock, in Unix ns, as
    written (a whole number kept whole: read through a float it would move in 256 ns
    steps), or None."""

    wall_ns: Json | None = None


@dataclass(frozen=True)
class ImportedFile:
    """One file an imported run was read from: its SHA-256."""

    sha256: str | None = None


@dataclass(frozen=True)
class Imported:
    """The typed part of run.json's `imported` (a run read from a peer tool's files)."""

    tool: str | None = None
    files: tuple[ImportedFile, ...] = ()


@dataclass(frozen=True)
class RampSettings:
    """The ramp's settings: its concurrency levels."""

    levels: tuple[int, ...] = ()


@dataclass(frozen=True)
class Settings:
    """The suite's settings as run: the prompt and output lengths, the ramp."""

    prompt_tokens: int | None = None
    output_tokens: int | None = None
    ramp: RampSettings | None = None


@dataclass(frozen=True)
class Config:
    """The command's configuration (what the CLI was given)."""

    profile: str | None = None


@dataclass(frozen=True)
class PromptsFile:
    """The buyer's prompts file the ramp's prompts came from: its name and SHA-256."""

    name: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class PromptsProvenance:
    """Where the run's prompts came from."""

    file: PromptsFile | None = None


@dataclass(frozen=True)
class Provenance:
    """The typed part of run.json's `provenance` (the rest is `RunMeta.provenance`)."""

    prompts: PromptsProvenance | None = None


@dataclass(frozen=True)
class UtteranceMeta:
    """One utterance a voice run's callers said: its SHA-256 (of the PCM sent)."""

    sha256: str | None = None


@dataclass(frozen=True)
class AudioMeta:
    """A voice run's caller audio (run.json's `audio`): whose recordings, and each
    utterance's SHA-256, so two runs' calls are known to be the same calls."""

    source: str | None = None
    utterances: tuple[UtteranceMeta, ...] = ()

    @property
    def digests(self) -> tuple[str, ...]:
        """Each utterance's SHA-256 in the order sent; empty when any is not recorded."""
        found = tuple(u.sha256 for u in self.utterances if u.sha256)
        return found if len(found) == len(self.utterances) else ()


@dataclass(frozen=True)
class RunMeta:
    """run.json's keys the stages after the probe read, each typed."""

    schema: str | None = None
    run_id: str | None = None
    tool_version: str | None = None
    suite_version: str | None = None
    #: complete | interrupted | ... (None: not recorded)
    status: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    target: Target = field(default_factory=Target)
    #: the label given at probe time (`probe --vendor`; free-form: `vendor_name` checks it)
    vendor: Json | None = None
    #: the model and endpoint a demonstration run stood in for (None: not a demonstration)
    stands_in_for: StandIn | None = None
    #: the suite profile (quick / standard / a file)
    profile: str | None = None
    settings: Settings = field(default_factory=Settings)
    config: Config = field(default_factory=Config)
    #: the measuring evalkit's package, checkout, command line and prompts (free-form)
    provenance: Json | None = None
    #: the machine that measured (free-form)
    client: Json | None = None
    #: the buyer's prompts file the ramp's prompts came from (provenance's; None: the
    #: suite's own prompts)
    prompts_file: PromptsFile | None = None
    #: what a run imported from a peer tool (`evalkit import`) was read from and how its
    #: figures differ from ours (free-form; None: a probe's run)
    imported: Json | None = None
    #: the run's clock (its origin on the wall clock)
    clock: Clock = field(default_factory=Clock)
    #: a voice run's caller audio (None: not a voice run)
    audio: AudioMeta | None = None

    @property
    def imported_from(self) -> Imported | None:
        """`imported` read as typed data (None: a probe's run, not an import)."""
        return read_as(Imported, self.imported) if isinstance(self.imported, Mapping) \
            else None

    @classmethod
    def from_json(cls, doc: object) -> RunMeta:
        """run.json read (anything missing or malformed is None or empty)."""
        doc = doc if isinstance(doc, Mapping) else {}
        base = read_as(cls, {k: v for k, v in doc.items() if k != "prompts_file"})
        prov = read_as(Provenance, base.provenance)
        return replace(base, prompts_file=prov.prompts.file if prov.prompts else None)
