"""The command line: every command teaches through --help."""

from __future__ import annotations

import click
from click.testing import CliRunner

from evalkit.cli import cli


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, cmd in group.commands.items():
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
