"""The catalog of evaluations: an embedded SQLite index of every run directory, report
and panel sample evalkit made, so last quarter's run is a query, not a folder to
remember, and our own production panel can be pooled over a window.

It is an edge like `evalkit.rundir`: it reads and writes files (the database, and each
entry's files to check their digests). The run directories stay the evidence; an entry
whose directory has gone or whose files changed is reported as `missing` or `edited`,
never dropped.
"""
