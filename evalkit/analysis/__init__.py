"""Stage 3, the analysis: the pure core from records to `summary.json` (data in, data out,
no I/O): frames, statistics, intervals, data-quality checks, the ramp's verdict and the
run's validity. `evalkit.analysis.summarize.summarize(records)` is its entry;
`evalkit.analysis.summary.Summary` is the typed reading of what it writes.
"""
