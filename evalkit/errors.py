"""The one error hierarchy of evalkit.

    EvalkitError                 anything the user can fix; the CLI prints it, exit code 2
    ├── UsageError               options that do not fit together, an unknown profile
    ├── InputError               a file we were given is malformed (names file, line, field)
    │   ├── QuestionnaireError   ... a questionnaire, with every problem found at once
    │   ├── WorkloadError        ... a workload, conversations or trace file, likewise
    │   └── CorpusError          ... documents given to the corpus: every file's problem
    ├── RunDirError              a run directory is missing or not a run
    ├── EndpointError            the vendor endpoint cannot be probed at all
    │                            (unreachable, 401, unknown model)
    ├── ScaleOutError            the Ray cluster cannot run the probe (cannot join it, no
    │                            worker started, every worker lost, another evalkit there)
    └── SigningError             a PDF cannot be signed as asked (the timestamp authority
                                 unreachable): nothing is written unsigned in its place

A failed *request* during a probe is not an exception: it is an outcome in the record.
A bug is not an EvalkitError either, so it still shows its traceback.
"""

from __future__ import annotations


class EvalkitError(Exception):
    """Base class for errors the user can act on."""


class UsageError(EvalkitError):
    """Options or settings that cannot be used together or do not exist."""


class InputError(EvalkitError):
    """A file given to evalkit is malformed."""


class QuestionnaireError(InputError):
    """A questionnaire has problems; `problems` lists every one (file, line, field, message)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class WorkloadError(InputError):
    """A workload, conversations or trace file has problems; `problems` lists every one
    (`file:line: field: message`)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class CorpusError(InputError):
    """Documents given to the corpus cannot all be read; `problems` names each file and
    what is wrong with it. Nothing was added."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class RunDirError(EvalkitError):
    """A run directory is missing or does not hold a run."""


class EndpointError(EvalkitError):
    """The endpoint cannot be probed at all: unreachable, unauthorised, unknown model."""


class ScaleOutError(EvalkitError):
    """Ray cannot carry the probe: not reachable, workers not started or all lost."""


class SigningError(EvalkitError):
    """A PDF cannot be signed as asked; it is not written unsigned instead."""
