"""Results where analysts work: a run's requests as a pandas DataFrame and as Parquet.

`requests.jsonl` is the evidence (one line per request, written as it completes);
`requests.parquet` beside it is the same records with typed columns for pandas, Arrow or
DuckDB, written once the run is written up. One row per request: every record field,
the derived figures evalkit judges on (TTFT, E2E, TPOT, stream rate, output tokens as
counted for the summary), and the chunk arrival times and token counts as list columns.

    import evalkit
    df = evalkit.load_run("out/acme")          # reads requests.parquet, else the JSONL
    df.groupby("level")["ttft_s"].quantile(0.9)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalkit.errors import RunDirError
from evalkit.records import Chunks, RequestRecord
from evalkit.rundir.store import REQUESTS_FILE, iter_records

PARQUET_FILE = "requests.parquet"
#: derived columns from the metrics' request frame, as judged in summary.json
DERIVED = ("ttft_s", "e2e_s", "tpot_s", "stream_tokens_per_s", "output_tokens",
           "output_tokens_estimated", "n_chunks", "end_s")


def requests_frame(records: list[RequestRecord]) -> pd.DataFrame:
    """One typed row per request: record fields, derived figures, chunk lists."""
    from evalkit.analysis.frames import records_frame

    req = records_frame(records)
    df = pd.DataFrame({f: pd.Series([_cell(getattr(r, f)) for r in records], dtype=dtype)
                       for f, dtype in _dtypes().items()})
    for col in DERIVED:
        df[col] = req[col].to_numpy()
    times, tokens = zip(*map(_chunk_arrays, records), strict=True) if records else ((), ())
    df["chunk_s"] = pd.Series(times, dtype=object)
    df["chunk_tokens"] = pd.Series(tokens, dtype=object)
    return df


def _chunk_arrays(record: RequestRecord) -> tuple[np.ndarray, np.ndarray]:
    """A record's chunk times and tokens as arrays: views of a record read back
    (`Chunks`), not a Python float and int a chunk again (a long run's write-up holds
    every record and this frame at once)."""
    chunks = record.chunks
    if isinstance(chunks, Chunks):
        return (np.frombuffer(chunks.times, dtype=np.float64),
                np.frombuffer(chunks.tokens, dtype=np.int64))
    return (np.array([t for t, _ in chunks], dtype=np.float64),
            np.array([n for _, n in chunks], dtype=np.int64))


def _cell(value: Any) -> Any:
    """A record's value as a Parquet cell: a mapping (the rate-limit headers) as JSON text."""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


def _dtypes() -> dict[str, str]:
    """A nullable pandas dtype per record field, from its annotation (None stays missing)."""
    out = {}
    for name, f in RequestRecord.__dataclass_fields__.items():
        kind = str(f.type)
        if name == "chunks":
            continue
        out[name] = ("boolean" if kind.startswith("bool") else "Float64" if "float" in kind
                     else "Int64" if "int" in kind else "string")
    return out


def write_parquet(run_dir: Path, records: Sequence[RequestRecord] | None = None) -> Path:
    """Write requests.parquet from requests.jsonl (the JSONL stays the evidence).

    `records` are requests.jsonl's, when the caller has read them already (a probe
    writing its run up reads them once for the summary, the vendor's metrics and this).
    """
    run_dir = Path(run_dir)
    records = list(iter_records(run_dir / REQUESTS_FILE) if records is None else records)
    out = run_dir / PARQUET_FILE
    tmp = out.with_name(out.name + ".tmp")
    requests_frame(records).to_parquet(tmp, index=False)
    tmp.replace(out)
    return out


def load_run(run_dir: str | Path) -> pd.DataFrame:
    """A run's requests as a DataFrame: requests.parquet when it is current, else the JSONL.

    A Parquet file older than the JSONL (a run still going, or cut) is not trusted: the
    records are read from the JSONL, line by line, instead.
    """
    run_dir = Path(run_dir)
    jsonl, parquet = run_dir / REQUESTS_FILE, run_dir / PARQUET_FILE
    if parquet.is_file() and (not jsonl.is_file()
                              or parquet.stat().st_mtime >= jsonl.stat().st_mtime):
        return pd.read_parquet(parquet)
    if not jsonl.is_file():
        raise RunDirError(f"{run_dir}: no {REQUESTS_FILE}; is this a run directory?")
    return requests_frame(list(iter_records(jsonl)))
