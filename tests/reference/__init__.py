"""Tests of `evalkit.reference`."""
