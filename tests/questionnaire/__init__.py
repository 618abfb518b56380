"""Tests of `evalkit.questionnaire`."""
