"""The command line: every command teaches through --help."""

from __future__ import annotations

import click
from click.testing import CliRunner

from evalkit.cli import cli


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the lazy ones too (`serve-reference`)
        cmd = group.get_command(ctx, name)
        path = (*prefix, name)
        out.append(path)
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, path))
    return out


def test_every_command_has_help() -> None:
    """Each command and subcommand prints a non-trivial help text and exits 0."""
    runner = CliRunner()
    for path in [(), *_commands(cli)]:
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output
        assert len(result.output.splitlines()) > 4, path


HEAVY = ("pandas", "matplotlib", "pyarrow", "weasyprint", "evalkit.reference")


def test_probe_help_loads_no_heavy_library() -> None:
    """`evalkit probe --help` is instant: no pandas, matplotlib, pyarrow or WeasyPrint, and
    not the reference endpoint (`serve-reference` is built only when asked for)."""
    import subprocess
    import sys

    code = ("import sys\nfrom evalkit.cli import cli\n"
            "try:\n    cli(['probe', '--help'])\nexcept SystemExit:\n    pass\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
    assert "--base-url" in out  # the help did print


def test_demo_plays_only_the_vendors_named() -> None:
    """`demo --vendor` offers the demo's own sample vendors and refuses any other (exit 2,
    naming the choices) before it starts anything."""
    from evalkit.demo import VENDORS

    result = CliRunner().invoke(cli, ["demo", "--vendor", "acme"])
    assert result.exit_code == 2
    for vendor in VENDORS:
        assert vendor.name in result.output
