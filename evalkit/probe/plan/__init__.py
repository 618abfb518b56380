"""The plan: settings from the CLI and a profile, claims read from a questionnaire into
levels and floors, prompts and their text, canaries and their watch, the buyer's workload
and trace, the answers' privacy. Data for the run; imports no other room."""
