"""Benchmark: evalkit, AIPerf and guidellm side by side, each against the server's truth.

The developers' guide: "where our numbers differ from theirs on the same endpoint, know
why". Each tool drives a fresh reference endpoint (profile `gpu`, truth log on) at the
same closed-loop concurrency with the same prompt/output lengths; every request the tool
reports is joined to the server's own record of it (AIPerf by its X-Request-ID header,
guidellm by the response id `chatcmpl-<request id>`, evalkit by its request id), and the
tool's TTFT / TPOT / ITL / output tok/s are set beside the truth for the same requests.
See bench/peers.md for the findings and why the numbers differ.

The peers are NOT dependencies of evalkit: install them in throwaway virtualenvs and
point at their executables (or put them on PATH); a peer that is absent is skipped:
    python3 -m venv /tmp/venv-aiperf && /tmp/venv-aiperf/bin/pip install aiperf
    python3 -m venv /tmp/venv-guidellm && /tmp/venv-guidellm/bin/pip install torch==2.13.0 \
        && /tmp/venv-guidellm/bin/pip install guidellm      # CPU torch first: no CUDA build
    AIPERF_BIN=/tmp/venv-aiperf/bin/aiperf GUIDELLM_BIN=/tmp/venv-guidellm/bin/guidellm \
        .venv/bin/python bench/bench_peers.py [levels] [output_tokens]   # default 1,32 64
Offline: both need a Hugging Face tokenizer; this script trains a small byte-level BPE
tokenizer locally (with the peer's own `tokenizers`) from evalkit's synthetic text, so no
hub is contacted (HF_HUB_OFFLINE=1). Token counts come from the server's usage.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.analysis.frames import frames
from evalkit.analysis.stats import phase_stats
from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.reference.server import ReferenceServer

PROMPT_TOKENS = 128
ROUNDS = {1: 20}  # requests per stream; other levels: 3 each
SNAP = "0" * 40

TOKENIZER_SCRIPT = """
import sys
from pathlib import Path
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
corpus, out = sys.argv[1], Path(sys.argv[2])
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train([corpus], trainers.BpeTrainer(
    vocab_size=4000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    special_tokens=["<|endoftext|>"]))
PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                        bos_token="<|endoftext|>").save_pretrained(str(out))
"""


def find_peer(name: str) -> Path | None:
    """The peer's executable: $<NAME>_BIN, else on PATH, else None (skipped)."""
    given = os.environ.get(f"{name.upper()}_BIN") or shutil.which(name)
    return Path(given) if given and Path(given).exists() else None


def peer_version(exe: Path) -> str:
    """The peer's version as it reports it (recorded with every number)."""
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                         timeout=60).stdout.strip().splitlines()
    return out[-1] if out else "unknown"


def build_tokenizer(exe: Path, home: Path) -> Path:
    """Train a local tokenizer with the peer's own Python; lay it out as a cached hub repo."""
    corpus = home / "corpus.txt"
    corpus.write_text("\n".join(str(synthetic(512, 1, f"tok-{i}").content) for i in range(40)))
    local = home / "local-bpe"
    py = exe.parent / "python"
    subprocess.run([str(py), "-c", TOKENIZER_SCRIPT, str(corpus), str(local)], check=True,
                   capture_output=True, timeout=300)
    # AIPerf in offline mode resolves names through the hub cache only (a bare path fails
    # with HFValidationError), so the same files also go under HF_HOME as `local/bpe`.
    repo = home / "hf" / "hub" / "models--local--bpe"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    shutil.copytree(local, repo / "snapshots" / SNAP, dirs_exist_ok=True)
    (repo / "refs" / "main").write_text(SNAP)
    return local


def truth_of(entry: dict[str, Any]) -> dict[str, Any] | None:
    """Server-side TTFT, E2E, TPOT and content-write gaps of one request (seconds)."""
    writes = [w for w in entry["writes"] if w[3] in ("content", "reasoning")]
    if entry.get("outcome") != "ok" or not writes:
        return None
    first, last, tokens = writes[0][0], writes[-1][0], entry["completion_tokens"]
    return {"ttft": (first - entry["received_ns"]) / 1e9,
            "e2e": (last - entry["received_ns"]) / 1e9,
            "tpot": (last - first) / 1e9 / (tokens - 1) if tokens > 1 else None,
            "gaps": list(np.diff([w[0] for w in writes]) / 1e9),
            "tokens": tokens, "start_ns": entry["received_ns"], "end_ns": last,
            "writes": [(w[0], w[2]) for w in writes]}


def truth_rate(truths: list[dict[str, Any]], window: tuple[int, int] | None = None) -> float:
    """Output tokens / (last content write - first request received): whole run, or the
    tokens written inside `window` (perf_counter_ns) over its length."""
    if window is not None:
        a, b = window
        return sum(k for t in truths for ns, k in t["writes"] if a < ns <= b) / ((b - a) / 1e9)
    span = (max(t["end_ns"] for t in truths) - min(t["start_ns"] for t in truths)) / 1e9
    return sum(t["tokens"] for t in truths) / span


def run_aiperf(exe: Path, srv: ReferenceServer, streams: int, out_tokens: int,
               home: Path, work: Path) -> dict[str, Any]:
    """One AIPerf profile run; per request: id, ttft, tpot (its 'ITL'), chunk gaps."""
    n = streams * ROUNDS.get(streams, 3)
    art = work / f"aiperf-{streams}"
    cmd = [str(exe), "profile", "--model", srv.model, "--url", srv.base_url.removesuffix("/v1"),
           "--endpoint-type", "chat", "--streaming", "--tokenizer", "local/bpe",
           "--concurrency", str(streams), "--request-count", str(n),
           "--synthetic-input-tokens-mean", str(PROMPT_TOKENS),
           "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(out_tokens),
           "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
           "--extra-inputs", f"min_tokens:{out_tokens}", "--use-server-token-count",
           "--ui-type", "none", "--no-server-metrics", "--no-gpu-telemetry",
           "--artifact-dir", str(art)]
    env = {**os.environ, "HF_HOME": str(home / "hf"), "HF_HUB_OFFLINE": "1"}
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
    reqs = []
    for line in (art / "profile_export.jsonl").read_text().splitlines():
        rec = json.loads(line)
        m, meta = rec["metrics"], rec["metadata"]
        if meta.get("benchmark_phase") != "profiling" or "time_to_first_token" not in m:
            continue
        reqs.append({"id": meta["x_request_id"], "ttft": m["time_to_first_token"]["value"] / 1e3,
                     "tpot": m["inter_token_latency"]["value"] / 1e3,
                     "gaps": [g / 1e3 for g in m["inter_chunk_latency"]["value"]]})
    agg = json.loads((art / "profile_export_aiperf.json").read_text())
    return {"requests": reqs, "rate": agg["output_token_throughput"]["avg"]}


def run_guidellm(exe: Path, srv: ReferenceServer, streams: int, out_tokens: int,
                 local_tok: Path, work: Path) -> dict[str, Any]:
    """One guidellm concurrent run; per request: id (from response id), ttft, tpot ('ITL')."""
    n = streams * ROUNDS.get(streams, 3)
    out = work / f"guidellm-{streams}.json"
    cmd = [str(exe), "run", "--backend",
           f"kind=openai_http,target={srv.base_url.removesuffix('/v1')},model={srv.model},"
           "validate_backend=false",  # it probes GET /health, which an OpenAI API needn't have
           "--profile", f"kind=concurrent,streams={streams}",
           "--constraint", f"kind=max_requests,count={n}",
           "--tokenizer", f"kind=huggingface_auto,model={local_tok}",
           "--data", f"kind=synthetic_text,prompt_tokens={PROMPT_TOKENS},"
                     f"output_tokens={out_tokens}",
           "--output", f"kind=json,path={out}", "--disable-console"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
    bench = json.loads(out.read_text())["benchmarks"][0]
    reqs = []
    for r in bench["requests"]["successful"]:
        t = r["info"]["timings"]
        reqs.append({"id": (r.get("response_id") or "").removeprefix("chatcmpl-"),
                     "ttft": t["first_token_iteration"] - t["request_start"],
                     "tpot": (r["inter_token_latency_ms"] or np.nan) / 1e3,
                     "tpot_guidellm": (r["time_per_output_token_ms"] or np.nan) / 1e3,
                     "gaps": []})  # guidellm keeps no per-chunk times
    rate = bench["metrics"]["output_tokens_per_second"]["successful"]["mean"]
    return {"requests": reqs, "rate": rate}


async def _evalkit(srv: ReferenceServer, streams: int, out_tokens: int) -> tuple[Any, float]:
    target = Target(srv.base_url, srv.model, timeout_s=120, tag_requests=True)
    rounds = ROUNDS.get(streams, 3)
    async with Prober(target, time.perf_counter_ns(), f"peers{streams}") as p:
        await p.clients.prepare(streams)

        async def user(i: int) -> list[Any]:
            await asyncio.sleep(i * 0.0005)
            return [await p.stream(synthetic(PROMPT_TOKENS, out_tokens, f"p{streams}-{i}-{k}"),
                                   "ramp", streams) for k in range(rounds)]

        done = await asyncio.gather(*(user(i) for i in range(streams)))
        return [r for rs in done for r in rs], p.origin_ns


def run_evalkit(srv: ReferenceServer, streams: int, out_tokens: int) -> dict[str, Any]:
    """The real prober, closed loop like the peers; evalkit's own phase statistics."""
    recs, origin = asyncio.run(_evalkit(srv, streams, out_tokens))
    req, chunks = frames(recs)
    stats = phase_stats(req, chunks, target=streams)
    w = stats["steady_state"]
    reqs = [{"id": r.id, "ttft": r.ttft_s,
             "tpot": (r.e2e_s - r.ttft_s) / (r.output_tokens - 1)
             if r.outcome == "ok" and r.output_tokens and r.output_tokens > 1 else None,
             "gaps": list(np.diff([c[0] for c in r.chunks]))}
            for r in recs if r.outcome == "ok"]
    return {"requests": reqs, "rate": stats["aggregate_tokens_per_s"],
            "window_ns": None if w is None else (origin + int(w["start_s"] * 1e9),
                                                 origin + int(w["end_s"] * 1e9))}


def compare(result: dict[str, Any], truth: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Join the tool's requests to the truth; summarise tool value, truth and error (ms)."""
    pairs = [(r, truth[r["id"]]) for r in result["requests"] if r["id"] in truth]
    ttft = np.array([r["ttft"] for r, _ in pairs]) * 1e3
    t_ttft = np.array([t["ttft"] for _, t in pairs]) * 1e3
    tpot = np.array([r["tpot"] for r, _ in pairs], dtype=float) * 1e3
    t_tpot = np.array([t["tpot"] for _, t in pairs], dtype=float) * 1e3
    gaps = [g for r, _ in pairs for g in r["gaps"]]
    t_gaps = [g for _, t in pairs for g in t["gaps"]]
    gap_err = [a - b for r, t in pairs if len(r["gaps"]) == len(t["gaps"])
               for a, b in zip(r["gaps"], t["gaps"], strict=True)]
    e = ttft - t_ttft
    return {"joined": len(pairs), "reported": len(result["requests"]),
            "ttft": float(np.mean(ttft)), "ttft_truth": float(np.mean(t_ttft)),
            "ttft_err_mean": float(np.mean(e)), "ttft_err_max": float(np.max(e)),
            "tpot": float(np.nanmean(tpot)), "tpot_truth": float(np.nanmean(t_tpot)),
            "itl_p50": float(np.median(gaps)) * 1e3 if gaps else None,
            "itl_truth_p50": float(np.median(t_gaps)) * 1e3,
            "itl_err_p99": float(np.percentile(np.abs(gap_err), 99)) * 1e3 if gap_err else None,
            "rate": result["rate"],
            "rate_truth": truth_rate([t for _, t in pairs], result.get("window_ns"))
            if pairs else None}


def one(tool: str, exe: Path | None, streams: int, out_tokens: int, home: Path,
        local_tok: Path | None) -> dict[str, Any]:
    """Fresh reference endpoint, one tool at one level, compared with that server's truth."""
    log = home / f"truth-{tool}-{streams}.jsonl"
    with ReferenceServer("gpu", {}, truth_log=log, mode="subprocess") as srv:
        if tool == "aiperf" and exe:
            res = run_aiperf(exe, srv, streams, out_tokens, home, home)
        elif tool == "guidellm" and exe and local_tok:
            res = run_guidellm(exe, srv, streams, out_tokens, local_tok, home)
        else:
            res = run_evalkit(srv, streams, out_tokens)
        truth = {t["request_id"]: v for t in srv.truth() if (v := truth_of(t))}
    return {"tool": tool, "streams": streams, **compare(res, truth)}


def fmt(v: float | None, spec: str = ".1f") -> str:
    """A number, or '-' where the tool has none."""
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def main(argv: list[str]) -> int:
    """Run every available tool at every level; print one table; 0 unless a run failed."""
    levels = [int(x) for x in (argv[0] if argv else "1,32").split(",")]
    out_tokens = int(argv[1]) if len(argv) > 1 else 64
    peers = {name: find_peer(name) for name in ("aiperf", "guidellm")}
    if not any(peers.values()):
        print("peers: neither aiperf nor guidellm is installed (set AIPERF_BIN / "
              "GUIDELLM_BIN to their executables in a throwaway venv); skipped")
        return 0
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}; "
          f"reference profile gpu, prompt {PROMPT_TOKENS} tokens, output {out_tokens} tokens")
    for name, exe in peers.items():
        print(f"{name}: {peer_version(exe) if exe else 'not installed: skipped'}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="evalkit-peers-") as tmp:
        home = Path(tmp)
        tok_exe = peers["aiperf"] or peers["guidellm"]
        local_tok = build_tokenizer(tok_exe, home) if tok_exe else None
        for streams in levels:
            for tool in ("evalkit", "aiperf", "guidellm"):
                if tool != "evalkit" and not peers[tool]:
                    continue
                try:
                    rows.append(one(tool, peers.get(tool), streams, out_tokens, home, local_tok))
                except subprocess.CalledProcessError as exc:
                    tail = (exc.stderr or b"").decode(errors="replace")[-600:]
                    print(f"{tool} at {streams} streams FAILED (exit {exc.returncode}):\n{tail}")
                    return 1
    print(f"{'tool':>9} {'c':>3} {'joined':>7} | {'TTFT ms':>8} {'truth':>7} {'err mean':>8} "
          f"{'err max':>8} | {'TPOT ms':>7} {'truth':>6} | {'ITL p50':>7} {'truth':>6} "
          f"{'|err| p99':>9} | {'tok/s':>7} {'truth':>7}")
    for r in rows:
        print(f"{r['tool']:>9} {r['streams']:>3} {r['joined']:>3}/{r['reported']:<3} | "
              f"{fmt(r['ttft']):>8} {fmt(r['ttft_truth']):>7} {fmt(r['ttft_err_mean'], '+.2f'):>8} "
              f"{fmt(r['ttft_err_max'], '+.2f'):>8} | {fmt(r['tpot'], '.2f'):>7} "
              f"{fmt(r['tpot_truth'], '.2f'):>6} | {fmt(r['itl_p50'], '.2f'):>7} "
              f"{fmt(r['itl_truth_p50'], '.2f'):>6} {fmt(r['itl_err_p99'], '.2f'):>9} | "
              f"{fmt(r['rate']):>7} {fmt(r['rate_truth']):>7}")
    print("TTFT truth = server received -> first content write; TPOT = (last - first content)"
          " / (tokens - 1) (AIPerf and guidellm call it ITL); ITL = per-chunk gaps; tok/s "
          "truth = whole run, or for evalkit its own steady-state window")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
