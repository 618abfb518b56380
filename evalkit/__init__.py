"""evalkit: streaming-capacity probes and PDF scorecards for AI inference vendors.

The library is usable without the CLI; the CLI (`evalkit.cli`) is a thin shell over it.
"""

__version__ = "0.1.0"

#: Version of the standard probe suite; every result names it, because numbers from
#: different suite versions do not mean the same thing.
SUITE_VERSION = "1"

__all__ = ["SUITE_VERSION", "__version__", "load_run"]


def __getattr__(name: str) -> object:
    """`evalkit.load_run(dir)`: a run's requests as a DataFrame (imported on first use, so
    `import evalkit` stays light)."""
    if name == "load_run":
        from evalkit.rundir.export import load_run

        return load_run
    raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
