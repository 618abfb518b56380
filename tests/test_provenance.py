"""run.json's provenance (issue 26): what made a run, with no secret in it, and a package
digest that changes when a file of the package does."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import evalkit
from evalkit import provenance as prov
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.resources import data_dir
from evalkit.rundir.store import read_run_files

ROOT = Path(__file__).resolve().parents[1]
KEY, HEADER = "sk-live-PROVENANCE-KEY-4242", "hdr-secret-value-9191"
SHORT = {"output_tokens": 4, "baseline": {"requests": 3}}


def test_a_probe_run_records_its_provenance_without_secrets(reference: Any,
                                                            tmp_path: Path) -> None:
    """`evalkit probe` as a user types it, the key in the environment and a secret header
    on the command line: run.json has every provenance key, the command line with the
    header's value blanked, and neither secret anywhere in the run directory."""
    srv = reference("gpu", mode="thread")
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.cli", "probe", "--base-url", srv.base_url,
         "--model", srv.model, "--out", str(out), "--phases", "connect,baseline",
         "--output-tokens", "4", "--header", f"X-Vendor-Token: {HEADER}",
         "--header", f"Authorization: Bearer {KEY}", "--quiet"],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    meta = json.loads((out / "run.json").read_text())
    p = meta["provenance"]
    assert set(p) >= {"evalkit_version", "suite_version", "package_sha256", "git", "python",
                      "platform", "command_line", "prompts"}
    assert p["evalkit_version"] == evalkit.__version__
    assert p["package_sha256"] == prov.installed_digest()
    assert p["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert p["platform"]["cpu_count"] == os.cpu_count()
    assert p["prompts"]["seed"] == 0 and p["prompts"]["encoding"] == "o200k_base"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()
    if head and Path(evalkit.__file__).resolve().parent.parent == ROOT:
        assert p["git"]["commit"] == head and isinstance(p["git"]["dirty"], bool)
    argv = p["command_line"]
    assert argv[argv.index("probe") - 1] == "evalkit.cli" and "--base-url" in argv
    assert "X-Vendor-Token: ***" in argv and "Authorization: ***" in argv
    for f in out.iterdir():
        body = f.read_bytes()
        for secret in (KEY, HEADER):
            assert secret.encode() not in body, (f.name, secret)
    assert meta["run_id"] == meta["run_tag"]


def test_the_recorded_seed_remakes_every_prompt(reference: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with seed 7: each record's prompt, re-made from run.json's seed and the
    record alone, is byte for byte the text the server read (its truth log's hash);
    and a key passed on the command line is not in the command line recorded."""
    monkeypatch.setattr(sys, "orig_argv", ["evalkit", "probe", "--api-key", KEY,
                                           f"--token={HEADER}", "--api-key-env", "MY_KEY"])
    srv = reference("gpu", mode="thread")
    run_probe(ProbeConfig(srv.base_url, srv.model, phases=("connect", "baseline", "prefill"),
                          seed=7, overrides={**SHORT, "prefill": {
                              "prompt_tokens": [64, 256], "repeats": 1, "output_tokens": 2}}),
              tmp_path / "run")
    meta, records = read_run_files(tmp_path / "run")
    seed = meta["provenance"]["prompts"]["seed"]
    assert seed == 7
    assert meta["provenance"]["command_line"] == [
        "evalkit", "probe", "--api-key", "***", "--token=***", "--api-key-env", "MY_KEY"]
    read = {t["prompt_sha"] for t in srv.truth() if t.get("prompt_sha")}
    remade = 0
    for r in records:
        assert r.prompt_id and r.counted_prompt_tokens and r.requested_output_tokens
        text = synthetic(r.counted_prompt_tokens, r.requested_output_tokens, r.prompt_id,
                         seed).content
        assert hashlib.sha256(str(text).encode()).hexdigest()[:16] in read, r.prompt_id
        other = synthetic(r.counted_prompt_tokens, r.requested_output_tokens, r.prompt_id,
                          0).content
        assert hashlib.sha256(str(other).encode()).hexdigest()[:16] not in read
        remade += 1
    assert remade == len(records) >= 6


def _copy_package(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    pkg = Path(shutil.copytree(Path(evalkit.__file__).resolve().parent, tmp_path / "evalkit",
                               ignore=shutil.ignore_patterns("__pycache__")))
    data = {name: Path(shutil.copytree(data_dir(name), tmp_path / name))
            for name in prov.DATA_FILES}
    return pkg, data


def test_the_digest_is_of_the_package_files(tmp_path: Path) -> None:
    """A copy digests as the installed package does; a byte changed in code or a
    template, a file renamed or a module added changes it; a file the package does not
    ship (notes, a compiled cache) does not."""
    pkg, data = _copy_package(tmp_path)
    base = prov.package_digest(pkg, data)
    assert base == prov.installed_digest()

    def changed() -> bool:
        return prov.package_digest(pkg, data) != base

    (pkg / "NOTES.txt").write_text("not shipped")
    (pkg / "__pycache__").mkdir(exist_ok=True)
    (pkg / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert not changed()
    fmt = pkg / "fmt.py"
    original = fmt.read_bytes()
    fmt.write_bytes(original.replace(b"def ", b"def  ", 1))
    assert changed()
    fmt.write_bytes(original)
    assert not changed()
    css = data["templates"] / "scorecard.css"
    css.write_text(css.read_text() + "\n")
    assert changed()
    css.write_text(css.read_text()[:-1])
    assert not changed()
    (pkg / "fmt.py").rename(pkg / "fmt2.py")
    assert changed()
    (pkg / "fmt2.py").rename(pkg / "fmt.py")
    (pkg / "analysis" / "extra.py").write_text("")
    assert changed()


def test_findings_compare_the_recorded_with_the_running() -> None:
    """`provenance_findings`: nothing when they agree, each difference in words, and a
    run without provenance named as an older suite's."""
    now = prov.current()
    assert prov.provenance_findings({"provenance": dict(now)}, now) == []
    other = {**now, "package_sha256": "ab" * 32, "evalkit_version": "0.0.9"}
    found = prov.provenance_findings({"provenance": other}, now)
    assert found == [
        f"evalkit version: the run was measured with 0.0.9, this is {evalkit.__version__}",
        f"package digest: the run was measured with {'ab' * 6}, this is "
        f"{prov.short(now['package_sha256'])}"]
    assert "older suite" in prov.provenance_findings({"schema": "evalkit.run/1"}, now)[0]


@pytest.mark.parametrize(("argv", "kept"), [
    (["--api-key", KEY], ["--api-key", "***"]),
    ([f"--openai-api-key={KEY}"], ["--openai-api-key=***"]),
    (["--sign-passphrase", "pw123456"], ["--sign-passphrase", "***"]),
    (["--sign-passphrase-env", "PASS_VAR"], ["--sign-passphrase-env", "PASS_VAR"]),
    (["--prompt-tokens", "512", "--output-tokens", "8"],
     ["--prompt-tokens", "512", "--output-tokens", "8"]),
    (["--header", "Authorization: Bearer abcdefgh"], ["--header", "Authorization: ***"]),
    (["-H", "x-api-key: abcdefgh"], ["-H", "x-api-key: ***"]),
    (["--header=Api-Key: abcdefgh"], ["--header=Api-Key: ***"]),
    (["curl", "Authorization: Bearer abc.def.ghi"], ["curl", "Authorization: Bearer ***"]),
    ([f"note {KEY} here"], ["note sk-*** here"]),
    (["--base-url", "https://user:pw@api.example/v1?api_key=zz&x=1"],
     ["--base-url", "https://***@api.example/v1?api_key=***&x=1"]),
    # a key named by a prefix, a vendor's own name or a cloud's signature: all blanked;
    # a name that merely ends in the letters (monkey) is not a key
    (["--other-url", "https://m.example/metrics?x-api-key=zz&dd-api-key=yy&monkey=1"],
     ["--other-url", "https://m.example/metrics?x-api-key=***&dd-api-key=***&monkey=1"]),
    # the metrics page's URL is written with every query value blanked, whatever its
    # name: its token rides there (the scraper sends no header)
    (["--metrics-url", "https://m.example/metrics?t=zz&monkey=1"],
     ["--metrics-url", "https://m.example/metrics?t=***&monkey=***"]),
    (["--metrics-url=https://m.example/metrics?t=zz"],
     ["--metrics-url=https://m.example/metrics?t=***"]),
    (["https://f.example/api?code=abcd&subscription-key=ef&X-Amz-Signature=0a"],
     ["https://f.example/api?code=***&subscription-key=***&X-Amz-Signature=***"]),
    (["--auth", "bearer"], ["--auth", "bearer"]),
])
def test_the_command_line_keeps_no_secret(argv: list[str], kept: list[str]) -> None:
    assert prov.command_line(argv) == kept


def test_the_targets_key_is_blanked_in_every_form() -> None:
    """A key the Target knows is blanked wherever it appears, even in no secret's place."""
    from evalkit.probe.client.clients import Target

    target = Target("http://127.0.0.1:9/v1", "m", secret="plainsecretvalue")
    assert prov.command_line(["echo", "x=plainsecretvalue", "PLAINSECRETVALUE"],
                             target.redact) == ["echo", "x=***", "***"]


def test_a_url_as_written_keeps_no_query_value_or_password() -> None:
    """A metrics page's token rides in its query under any name the vendor chose: every
    value is blanked, the names and the path kept, the fragment dropped."""
    from evalkit.provenance import url_as_written

    assert url_as_written("https://u:pw@m.example:9/metrics?t=abc&format=prom&flag#x") == \
        "https://***@m.example:9/metrics?t=***&format=***&flag"
    assert url_as_written("http://m.example/metrics") == "http://m.example/metrics"
