"""Stage 2, the run directory: the evidence a probe (or an import) leaves, read once,
bounded and checked as untrusted, and the summary re-derived from its records.

It hands the records and a checked `summary.json` to `evalkit.analysis` and
`evalkit.review`.
"""
