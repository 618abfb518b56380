"""Stage 3, the analysis: the pure core from records to `summary.json` (data in, data out,
no I/O): frames, statistics, intervals, data-quality checks, the ramp's verdict and the
run's validity. `evalkit.analysis.summarize.summarize(records)` is its entry
(`summary_of(records)` the same as a `Summary`); `evalkit.analysis.summary.Summary` is
the typed reading of what it writes, read once by `Summary.from_json`: its `sections`
type every key (`summary_levels`, `summary_sections`, `summary_checks`,
`summary_workload`, read through `jsonread`), so a new summary figure is one field in its
section's dataclass, read wherever the section is.
"""
