"""The buyer's workload: what traffic a capacity figure holds for.

A stage of its own, read before the probe runs (like the questionnaire): `model` holds the
shapes as plain data; the readers turn a workload file, the buyer's conversations and a
Mooncake trace into them, refusing a malformed file with every problem at once.
"""
