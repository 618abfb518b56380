"""`python -m evalkit.cli`: the same command as `evalkit`."""

from evalkit.cli import main

main()
