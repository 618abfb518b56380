"""Stage 2, the run directory: the evidence a probe (or an import) leaves, read once,
bounded and checked as untrusted, and the summary re-derived from its records.

It hands the records, a checked `summary.json` read once as a `Summary` and run.json read
once as a `RunMeta` (`evalkit.rundir.meta`) to `evalkit.analysis` and `evalkit.review`.
"""
