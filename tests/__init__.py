"""evalkit's tests, one folder per pipeline stage (a package: file names may repeat
across folders)."""
