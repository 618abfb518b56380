"""Tests of `evalkit.review`."""
