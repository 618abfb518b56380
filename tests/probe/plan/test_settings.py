"""Suite settings, prompt files and the run store: the parts that need no endpoint."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from evalkit.cli.options import parse_extra_body, parse_header, parse_int_list
from evalkit.errors import InputError, RunDirError, UsageError
from evalkit.probe.plan.profiles import load_profile, profile_names
from evalkit.probe.plan.prompts import PromptSource, count_tokens, load_prompts, synthetic
from evalkit.probe.plan.settings import ProbeConfig, SuiteSettings, resolve_settings
from evalkit.records import RequestRecord
from evalkit.rundir.store import RunStore, read_records, read_run_files


def _cfg(**kw: object) -> ProbeConfig:
    return ProbeConfig(base_url="http://127.0.0.1:1/v1", model="m", **kw)  # type: ignore[arg-type]


class TestSettings:
    def test_builtin_profiles(self) -> None:
        """quick and standard ship; quick is the shorter one."""
        assert {"quick", "standard"} <= set(profile_names())
        q, s = load_profile("quick"), load_profile("standard")
        assert q["ramp"]["level_duration_s"] < s["ramp"]["level_duration_s"]
        assert q["phases"][0] == "connect"

    def test_flags_override_profile(self) -> None:
        """--max-concurrency makes power-of-two levels up to it; --levels wins over both."""
        s = resolve_settings(_cfg(max_concurrency=24, output_tokens=7, prompt_tokens=99))
        assert s.ramp.levels == (1, 2, 4, 8, 16, 24)
        assert (s.output_tokens, s.prompt_tokens) == (7, 99)
        s = resolve_settings(_cfg(levels=(8, 2, 2), max_concurrency=4))
        assert s.ramp.levels == (2,)
        s = resolve_settings(_cfg(levels=(1, 512)))  # above the profile's cap, but asked for
        assert s.ramp.levels == (1, 512) and s.ramp.max_concurrency == 512

    def test_rate_replaces_ramp(self) -> None:
        """--rate runs the open-loop phase instead of the ramp."""
        s = resolve_settings(_cfg(rate=5.0))
        assert "ramp" not in s.phases and "rate" in s.phases
        assert s.rate.rate == 5.0

    def test_ray_without_the_extra_names_the_install(self, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
        """--ray with Ray missing is a usage error naming the install command, raised
        before a run directory exists; without --ray nothing imports Ray."""
        import importlib.util
        import subprocess
        import sys

        from evalkit.probe.suite import run_probe

        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "ray" else real(name, *a))
        with pytest.raises(UsageError, match=r"pip install 'evalkit\[ray\]'"):
            run_probe(_cfg(ray="auto"), tmp_path / "run")
        assert not (tmp_path / "run").exists()
        probe = ("import sys, evalkit.cli, evalkit.probe.suite, evalkit.probe.load.scaleout; "
                 "sys.exit('ray' in sys.modules)")
        assert subprocess.run([sys.executable, "-c", probe], check=False).returncode == 0

    def test_phases_keep_suite_order(self) -> None:
        """Phases run in the suite's order whatever order they were given in."""
        assert resolve_settings(_cfg(phases=("ramp", "connect"))).phases == ("connect", "ramp")

    @pytest.mark.parametrize("kw, message", [
        ({"phases": ("warmup",)}, "unknown phase"),
        ({"profile": "nonesuch"}, "unknown profile"),
        ({"rate": 0.0}, "--rate"),
        ({"levels": (0, 2)}, "--levels"),
        ({"ray": " "}, "--ray takes auto or a cluster address"),
        ({"ray_workers": 2}, "--ray-workers"),
        ({"ray": "auto", "ray_workers": 0}, "--ray-workers"),
    ])
    def test_bad_settings(self, kw: dict[str, object], message: str) -> None:
        """Each bad setting is a UsageError that names what is wrong."""
        with pytest.raises(UsageError, match=message):
            resolve_settings(_cfg(**kw))

    def test_profile_file_extends_builtin(self, tmp_path: Path) -> None:
        """A profile file only states what differs from the one it extends."""
        f = tmp_path / "p.json"
        f.write_text(json.dumps({"extends": "quick", "ramp": {"levels": [3]}}))
        s = resolve_settings(_cfg(profile=str(f)))
        assert s.ramp.levels == (3,)
        assert s.ramp.level_duration_s == load_profile("quick")["ramp"]["level_duration_s"]

    def test_a_profile_extends_a_file_beside_it_and_never_itself(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """`extends` finds a base file beside the profile whatever the working directory;
        a chain that loops is a usage error naming it, not a RecursionError."""
        (tmp_path / "base.json").write_text(json.dumps({"extends": "quick",
                                                        "ramp": {"levels": [5]}}))
        (tmp_path / "p.json").write_text(json.dumps({"extends": "base.json",
                                                     "output_tokens": 7}))
        monkeypatch.chdir(tmp_path.parent)
        s = resolve_settings(_cfg(profile=str(tmp_path / "p.json")))
        assert (s.ramp.levels, s.output_tokens) == ((5,), 7)
        (tmp_path / "base.json").write_text(json.dumps({"extends": "p.json"}))
        with pytest.raises(UsageError, match=r"p\.json: its `extends` chain comes back "
                                             r"to itself \(.*p\.json → .*base\.json → "
                                             r".*p\.json\)"):
            resolve_settings(_cfg(profile=str(tmp_path / "p.json")))
        (tmp_path / "p.json").write_text(json.dumps({"extends": "p.json"}))
        with pytest.raises(UsageError, match="comes back to itself"):
            resolve_settings(_cfg(profile=str(tmp_path / "p.json")))

    @pytest.mark.parametrize("content, message", [
        (b"{not json", r"p\.json: not valid JSON \(.*\); expected a profile"),
        (b"\xff\xfe{}", r"p\.json: not valid JSON"),
        (b"[1, 2]", r"p\.json: a JSON list, expected a profile \(a JSON object\)"),
        (b" " * (1 << 20) + b"{}", r"p\.json: larger than 1,048,576 bytes; not a profile"),
    ])
    def test_a_profile_file_that_is_no_json_object_is_named(
            self, tmp_path: Path, content: bytes, message: str) -> None:
        """A profile file is read bounded, and what is wrong with it names the file."""
        f = tmp_path / "p.json"
        f.write_bytes(content)
        with pytest.raises(UsageError, match=message):
            resolve_settings(_cfg(profile=str(f)))

    def test_client_limits_are_read_as_written(self) -> None:
        """The client check's limits (kept with every other threshold) come from the
        profile, a null send-lag share turning that check off."""
        s = resolve_settings(_cfg(overrides={"client_check": {
            "cpu_fraction": 0.8, "send_lag_fraction": None, "coalesced_min": 7}}))
        assert (s.client_check.cpu_fraction, s.client_check.send_lag_fraction,
                s.client_check.coalesced_min) == (0.8, None, 7)

    @pytest.mark.parametrize("profile", ["quick", "standard"])
    def test_builtin_profiles_round_trip(self, profile: str) -> None:
        """Every key a built-in profile holds is read, and written back the same way
        (run.json's `settings`): nothing in a profile goes unread."""
        def given(back: object, data: object) -> object:  # back, trimmed to data's keys
            if isinstance(data, dict) and isinstance(back, dict):
                return {k: given(back.get(k), v) for k, v in data.items()}
            return back

        data = load_profile(profile)
        assert given(SuiteSettings.from_dict(data).to_dict(), data) == data

    @pytest.mark.parametrize("over, message", [
        ({"ramp": {"max_requests_per_stream": 0}},
         r"profile quick: unknown key\(s\) ramp.max_requests_per_stream; known here: levels"),
        ({"bogus": 1}, r"unknown key\(s\) bogus;"),
        ({"ramp": {"levels": [1, 0]}}, r"ramp.levels\[1\] must be an integer of at least 1"),
        ({"ramp": {"level_duration_s": "2"}}, "ramp.level_duration_s must be a positive number"),
        ({"baseline": {"requests": 2.5}}, "baseline.requests must be an integer"),
        ({"client_check": {"cpu_fraction": 0}}, "client_check.cpu_fraction must be a positive"),
        ({"client_check": {"cpu": 0.9}}, r"unknown key\(s\) client_check.cpu; known here: "
                                         "loop_lag_p99_s, cpu_fraction"),
        ({"client_check": {"coalesced_min": -1}}, "client_check.coalesced_min must be an "
                                                  "integer of at least 0"),
        ({"client_check": {"send_lag_fraction": "0.1"}}, "client_check.send_lag_fraction must "
                                                         "be a positive number"),
        ({"force_output_length": "yes"}, "force_output_length must be true or false"),
        ({"soak": None}, "soak must be a JSON object"),
        ({"ramp": {"min_requests": {"four": 3}}}, "keyed by level"),
    ])
    def test_a_bad_profile_names_the_key(self, over: dict[str, object], message: str) -> None:
        """A profile value nobody reads, of the wrong type or out of range is a usage error
        that names the key, never a KeyError or a silently ignored setting."""
        with pytest.raises(UsageError, match=message):
            resolve_settings(_cfg(overrides=over))

    def test_a_profile_file_missing_a_key_says_which(self, tmp_path: Path) -> None:
        """A profile file that extends nothing it can lean on names the missing key."""
        from evalkit.probe.plan.settings import SuiteSettings

        data = load_profile("quick")
        del data["ramp"]["level_duration_s"]
        with pytest.raises(UsageError, match=r"ramp\.level_duration_s is missing"):
            SuiteSettings.from_dict(data)

    def test_cli_parsers(self) -> None:
        """Headers, integer lists and extra body parse, or fail with the option's name."""
        assert parse_header("X-Org:  acme ") == ("X-Org", "acme")
        assert parse_int_list("1, 2,4", "--levels") == (1, 2, 4)
        assert parse_extra_body('{"top_k": 1}') == {"top_k": 1}
        with pytest.raises(UsageError, match="--header"):
            parse_header("no colon")
        for bad in ("X-Org: café-sk-1", "X-Org: sk-1\x7f", "X Org: sk-1", "X-Örg: sk-1",
                    "Authorization Bearer sk-1: x"):
            with pytest.raises(UsageError, match="--header") as info:
                parse_header(bad)
            assert "sk-1" not in str(info.value)  # a value may be a key: never echoed
        assert parse_header("X-A: a\tb") == ("X-A", "a\tb")
        with pytest.raises(UsageError, match="--levels"):
            parse_int_list("1,x", "--levels")
        with pytest.raises(UsageError, match="JSON object"):
            parse_extra_body("[1]")


class TestPrompts:
    @pytest.mark.parametrize("n", [16, 100, 1000, 4096])
    def test_synthetic_length_is_exact(self, n: int) -> None:
        """A synthetic prompt is exactly the asked-for number of o200k tokens, and the nonce
        that seeds it is never sent (a vendor would read it as a probe's mark)."""
        p = synthetic(n, 8, "abc123-000001")
        assert isinstance(p.content, str)
        assert p.prompt_tokens == n == count_tokens(p.content)
        assert "abc123" not in p.content and not p.content.startswith("[")

    def test_no_two_prompts_share_a_cacheable_prefix(self) -> None:
        """Prefix caches keep whole blocks of 16 tokens (vLLM's default): no two prompts of a
        run share one, so none is served from another's cache."""
        from evalkit.probe.plan.prompts import _encoding

        src = PromptSource("run1")
        tokens = sorted(_encoding().encode_ordinary(str(src.next(256, 4).content))
                        for _ in range(300))

        def shared(a: list[int], b: list[int]) -> int:
            return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                        min(len(a), len(b)))

        assert max(shared(a, b) for a, b in itertools.pairwise(tokens)) < 16

    def test_prompt_file(self, tmp_path: Path) -> None:
        """JSONL prompts load with their own lengths; errors name file and line."""
        f = tmp_path / "p.jsonl"
        f.write_text('{"prompt": "hello there", "max_tokens": 5}\n\n'
                     '{"id": "q2", "messages": [{"role": "user", "content": "hi"}]}\n')
        ps = load_prompts(f, 32)
        assert [(p.id, p.max_tokens, p.prompt_tokens) for p in ps] == [
            ("line1", 5, 2), ("q2", 32, 1)]
        f.write_text('{"prompt": "ok"}\n{"prompt": 3}\n')
        with pytest.raises(InputError, match=r"p\.jsonl:2"):
            load_prompts(f, 32)
        f.write_text("not json\n")
        with pytest.raises(InputError, match=r"p\.jsonl:1: not JSON"):
            load_prompts(f, 32)


class TestRunStore:
    def test_records_survive_a_crash_mid_line(self, tmp_path: Path) -> None:
        """Each record is on disk when appended; a torn last line is skipped on reading."""
        store = RunStore(tmp_path, {"clock": {"origin_ns": 1}, "api_key_set": True})
        recs = [RequestRecord(id=f"r{i}", phase="baseline", level=1, outcome="ok", t0_s=i,
                              chunks=[(0.1, 1), (0.2, 2)]) for i in range(3)]
        for r in recs:
            store.append(r)
        # no close(): the process "crashed"; the lines are already flushed
        text = (tmp_path / "requests.jsonl").read_text()
        assert text.count("\n") == 3
        with open(tmp_path / "requests.jsonl", "a") as fh:
            fh.write('{"id": "torn", "pha')
        meta, back = read_run_files(tmp_path)
        assert back == recs
        assert meta["clock"]["origin_ns"] == 1
        store.close()

    def test_not_a_run(self, tmp_path: Path) -> None:
        """A directory without run.json is a RunDirError; a bad middle line too."""
        with pytest.raises(RunDirError):
            read_run_files(tmp_path)
        (tmp_path / "run.json").write_text('["not", "metadata"]')
        (tmp_path / "requests.jsonl").write_text("")
        with pytest.raises(RunDirError, match=r"run\.json: a JSON list, expected a run's "
                                              r"metadata"):
            read_run_files(tmp_path)
        f = tmp_path / "requests.jsonl"
        f.write_text('{"x": 1}\nnot json\n{"x": 2}\n')
        with pytest.raises(RunDirError, match=":1:"):
            read_records(f)
