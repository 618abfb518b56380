"""Tests of `evalkit.cli`."""
