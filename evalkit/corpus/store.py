"""The buyer's corpus on disk: `--corpus DIR`, else `$EVALKIT_CORPUS`, else `corpus/` in
the user's data directory, beside the catalog (`~/.local/share/evalkit/corpus` on Linux).

    corpus.json              the index: each document's digest, name, kind and size
    documents/SHA256.txt     each document's text, as extracted and normalised
    tasks/SHA256.txt         the buyer's task templates, one a line

Nothing of it is ever written anywhere else: a run records the corpus's digest and size
(`Corpus.facts`), never a name or a word of it. Adding is all or nothing: every file is
read and checked first (every problem named at once), then the documents and the index
are written, each by a rename, under a lock, so a crash or a second `add` at the same
moment loses nothing already there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalkit.corpus.readers import SUFFIXES, kind_of, read_document
from evalkit.corpus.text import Passages, PromptText, paragraphs
from evalkit.errors import CorpusError, InputError, UsageError

CORPUS_ENV = "EVALKIT_CORPUS"
INDEX = "corpus.json"
SCHEMA = "evalkit.corpus/1"
#: the most a corpus holds (documents, characters of text) and one `add` reads (files)
MAX_DOCUMENTS = 100_000
MAX_CORPUS_CHARS = 256_000_000
MAX_FILES_PER_ADD = 10_000
#: the most of the corpus one run draws from (tokens): a seeded choice of documents
RUN_TOKENS = 1_000_000
MAX_TEMPLATES = 1000
MAX_TEMPLATE_CHARS = 2000
MAX_INDEX_BYTES = 64 << 20
#: a document's origin: the buyer's own, or text evalkit generated (the demo's)
ORIGINS = ("buyer", "generated")


def corpus_dir(given: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The corpus folder to use: the one given, else $EVALKIT_CORPUS, else the default."""
    from evalkit.catalog.paths import data_dir

    env = os.environ if env is None else env
    if given:
        return Path(given).expanduser()
    if env.get(CORPUS_ENV):
        return Path(env[CORPUS_ENV]).expanduser()
    return data_dir(env) / "corpus"


@dataclass(frozen=True)
class Document:
    """One document of the corpus, as the index lists it."""

    sha256: str
    name: str
    path: str
    kind: str
    chars: int
    tokens: int
    added_at: str
    origin: str = "buyer"


@dataclass(frozen=True)
class TaskFile:
    """A file of the buyer's task templates."""

    sha256: str
    name: str
    path: str
    templates: int
    added_at: str


@dataclass(frozen=True)
class Corpus:
    """What a corpus folder holds, read from its index."""

    folder: Path
    documents: tuple[Document, ...] = ()
    tasks: tuple[TaskFile, ...] = ()

    @property
    def digest(self) -> str | None:
        """SHA-256 over its documents' and templates' digests (None: it is empty): the
        same texts give the same digest, whatever their names or the order added."""
        if not self.documents and not self.tasks:
            return None
        docs = sorted(d.sha256 for d in self.documents)
        tasks = sorted(t.sha256 for t in self.tasks)
        return hashlib.sha256("\n".join([*docs, "tasks", *tasks]).encode()).hexdigest()

    @property
    def tokens(self) -> int:
        return sum(d.tokens for d in self.documents)

    @property
    def templates(self) -> int:
        return sum(t.templates for t in self.tasks)

    @property
    def origin(self) -> str:
        """`generated` when any document is evalkit's own, else `buyer`."""
        return "generated" if any(d.origin == "generated" for d in self.documents) else "buyer"

    def facts(self, drawn_tokens: int | None = None) -> dict[str, object]:
        """What a run records of the corpus (run.json `prompt_text.corpus`): its digest and
        size, never a name or a word of it."""
        return {"sha256": self.digest, "files": len(self.documents), "tokens": self.tokens,
                "drawn_tokens": drawn_tokens, "task_templates": self.templates,
                "origin": self.origin}


# --------------------------------------------------------------------------- reading


def read_corpus(folder: Path) -> Corpus:
    """The corpus in `folder` (an empty one when it has no index yet)."""
    index = folder / INDEX
    try:
        with index.open("rb") as fh:
            data = fh.read(MAX_INDEX_BYTES + 1)
    except FileNotFoundError:
        return Corpus(folder)
    except OSError as exc:
        raise InputError(f"{index}: cannot read the corpus index ({exc.strerror or exc})"
                         ) from None
    try:
        if len(data) > MAX_INDEX_BYTES:
            raise ValueError("larger than any index evalkit writes")
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise ValueError(f"not an {SCHEMA} index")
        docs = tuple(Document(**d) for d in doc.get("documents") or [])
        tasks = tuple(TaskFile(**t) for t in doc.get("tasks") or [])
        for d in docs:
            if not (isinstance(d.sha256, str) and len(d.sha256) == 64
                    and isinstance(d.tokens, int) and d.origin in ORIGINS):
                raise ValueError(f"a document entry that evalkit did not write ({d.name!r})")
    except (ValueError, TypeError) as exc:
        raise InputError(f"{index}: the corpus index is damaged ({str(exc)[:200]}); remove "
                         f"the folder {folder} and add the documents again") from None
    return Corpus(folder, docs, tasks)


def _document_file(folder: Path, sha256: str) -> Path:
    return folder / "documents" / f"{sha256}.txt"


def _task_file(folder: Path, sha256: str) -> Path:
    return folder / "tasks" / f"{sha256}.txt"


def _read_stored(path: Path, sha256: str, name: str) -> str:
    """A stored text, checked against its digest (a file edited by hand is refused)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"corpus: {name}: its text is missing ({exc.strerror or exc}); "
                         f"`evalkit corpus remove {name}` and add it again") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise InputError(f"corpus: {name}: its text changed since it was added ({path}); "
                         f"`evalkit corpus remove {name}` and add it again")
    return data.decode("utf-8")


def _chosen(corpus: Corpus, seed: int, budget: int) -> list[Document]:
    """The documents a run draws from: all of them within `budget` tokens, else a
    seeded choice that fills it (each in digest order, so a corpus's texts, not the
    order they were added in, decide)."""
    docs = sorted(corpus.documents, key=lambda d: d.sha256)
    if corpus.tokens <= budget:
        return docs
    random.Random(f"{seed}:corpus").shuffle(docs)
    out: list[Document] = []
    used = 0
    for d in docs:
        if used + d.tokens <= budget or not out:
            out.append(d)
            used += d.tokens
    return sorted(out, key=lambda d: d.sha256)


def load_text(folder: Path, seed: int = 0, budget: int = RUN_TOKENS) -> PromptText | None:
    """What a run's prompts are made of, from the corpus in `folder` (None: it holds no
    document): at most `budget` tokens of its documents, its task templates, its facts."""
    corpus = read_corpus(folder)
    if not corpus.documents:
        return None
    pars: list[str] = []
    for d in _chosen(corpus, seed, budget):
        text = _read_stored(_document_file(folder, d.sha256), d.sha256, d.name)
        pars += paragraphs(text)
    chars = sum(len(p) for p in pars)
    if chars > 6 * budget:  # one document far over the budget: its first part only
        keep, size = [], 0
        for p in pars:
            keep.append(p)
            size += len(p)
            if size > 6 * budget:
                break
        pars = keep
    templates: list[str] = []
    for t in corpus.tasks:
        templates += _templates(_read_stored(_task_file(folder, t.sha256), t.sha256, t.name))
    passages = Passages.of(pars)
    return PromptText(passages, "generated" if corpus.origin == "generated" else "corpus",
                      tuple(templates), corpus.facts(len(passages)))


# --------------------------------------------------------------------------- writing


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One writer at a time (POSIX advisory lock; elsewhere none)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover (Windows)
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_index(corpus: Corpus) -> None:
    doc = {"schema": SCHEMA, "documents": [asdict(d) for d in corpus.documents],
           "tasks": [asdict(t) for t in corpus.tasks]}
    _write_atomic(corpus.folder / INDEX, (json.dumps(doc, indent=1) + "\n").encode())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def expand(paths: Sequence[Path]) -> tuple[list[Path], int]:
    """The files `paths` name: each file as given, each folder's documents (by suffix,
    hidden ones left out), and how many other files those folders held."""
    files: list[Path] = []
    ignored = 0
    for p in paths:
        found: list[Path] = []
        if p.is_dir():
            for f in p.rglob("*"):  # symlinked folders are not followed
                rel = f.relative_to(p).parts
                if any(part.startswith(".") for part in rel) or not f.is_file():
                    continue
                if kind_of(f) is None:
                    ignored += 1
                else:
                    found.append(f)
                if len(files) + len(found) > MAX_FILES_PER_ADD:
                    break
        else:
            found.append(p)
        files += sorted(found)
        if len(files) > MAX_FILES_PER_ADD:
            raise UsageError(f"more than {MAX_FILES_PER_ADD:,} documents in one add; add "
                             "them a folder at a time")
    return files, ignored


@dataclass(frozen=True)
class Added:
    """What `add` did: the documents it added, those already held, files it passed over."""

    corpus: Corpus
    added: tuple[Document, ...]
    already: tuple[str, ...]
    ignored: int


def _count(text: str) -> int:
    from evalkit.corpus.text import count

    return sum(count(p + "\n\n") for p in paragraphs(text))


def add(folder: Path, paths: Sequence[Path], origin: str = "buyer") -> Added:
    """Add the documents `paths` name (files, or folders of them) to the corpus in
    `folder`: all of them, or none (CorpusError naming every file that failed)."""
    files, ignored = expand([Path(p) for p in paths])
    if not files:
        raise UsageError("no documents to add: give files or folders holding "
                         f"{', '.join(SUFFIXES)} files")
    read: list[tuple[Path, str, str]] = []
    problems: list[str] = []
    for f in files:
        try:
            kind, text = read_document(f)
        except InputError as exc:
            problems.append(str(exc))
            continue
        read.append((f, kind, text))
    if problems:
        raise CorpusError(f"{len(problems)} of {len(files)} file(s) could not be read; "
                          "nothing was added", problems[:50])
    with _locked(folder):
        corpus = read_corpus(folder)
        held = {d.sha256 for d in corpus.documents}
        new: list[tuple[Document, bytes]] = []
        already: list[str] = []
        for f, kind, text in read:
            data = text.encode("utf-8")
            sha = hashlib.sha256(data).hexdigest()
            if sha in held:
                already.append(f.name)
                continue
            held.add(sha)
            new.append((Document(sha, f.name, str(f.resolve()), kind, len(text),
                                 _count(text), _now(), origin), data))
        chars = sum(d.chars for d in corpus.documents) + sum(d.chars for d, _ in new)
        if chars > MAX_CORPUS_CHARS or len(held) > MAX_DOCUMENTS:
            raise UsageError(f"the corpus would hold more than {MAX_CORPUS_CHARS:,} "
                             f"characters or {MAX_DOCUMENTS:,} documents; nothing was added")
        for d, data in new:
            _write_atomic(_document_file(folder, d.sha256), data)
        corpus = Corpus(folder, (*corpus.documents, *(d for d, _ in new)), corpus.tasks)
        if new:
            _write_index(corpus)
    return Added(corpus, tuple(d for d, _ in new), tuple(already), ignored)


def _templates(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def add_tasks(folder: Path, path: Path) -> tuple[Corpus, TaskFile | None]:
    """Add a file of task templates (one a line; `{detail}` and `{phrase}` filled in
    per prompt; lines starting with # are comments). None: the corpus already held it."""
    if kind_of(path) != "text":
        raise UsageError(f"{path}: task templates are a text file (.txt), one a line")
    _, text = read_document(path)
    found = _templates(text)
    long = [t[:40] for t in found if len(t) > MAX_TEMPLATE_CHARS]
    if not found or len(found) > MAX_TEMPLATES or long:
        raise InputError(f"{path}: expected 1 to {MAX_TEMPLATES:,} templates of at most "
                         f"{MAX_TEMPLATE_CHARS:,} characters, one a line; found {len(found):,}"
                         + (f", {len(long)} too long" if long else ""))
    data = "\n".join(found).encode("utf-8")
    sha = hashlib.sha256(data).hexdigest()
    with _locked(folder):
        corpus = read_corpus(folder)
        if any(t.sha256 == sha for t in corpus.tasks):
            return corpus, None
        entry = TaskFile(sha, path.name, str(path.resolve()), len(found), _now())
        _write_atomic(_task_file(folder, sha), data)
        corpus = Corpus(folder, corpus.documents, (*corpus.tasks, entry))
        _write_index(corpus)
    return corpus, entry


def remove(folder: Path, names: Sequence[str], everything: bool = False
           ) -> tuple[Corpus, list[str]]:
    """Forget documents and template files, each named by its name, its path as added
    or the start of its digest (at least 8 hex digits); `everything`: all of them. A name
    that matches nothing, or more than one, is an error and nothing is removed."""
    with _locked(folder):
        corpus = read_corpus(folder)
        entries: list[Document | TaskFile] = [*corpus.documents, *corpus.tasks]
        if everything:
            gone = entries
        else:
            gone = []
            for name in names:
                hits = [e for e in entries if name in (e.name, e.path) or (
                    len(name) >= 8 and e.sha256.startswith(name.lower()))]
                if len(hits) != 1:
                    raise UsageError(f"{name!r} names {'no' if not hits else len(hits)} "
                                     "entries of the corpus (`evalkit corpus` lists them; a "
                                     "digest's first 8 digits name one); nothing was removed")
                gone.append(hits[0])
        keep = Corpus(folder, tuple(d for d in corpus.documents if d not in gone),
                      tuple(t for t in corpus.tasks if t not in gone))
        _write_index(keep)
        for e in gone:
            target = (_document_file if isinstance(e, Document) else _task_file)(folder,
                                                                                  e.sha256)
            target.unlink(missing_ok=True)
    return keep, [e.name for e in gone]
