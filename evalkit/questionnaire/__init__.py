"""The vendor's questionnaire: the six capacity questions, read from YAML with every
problem named by field and line (`evalkit.questionnaire.load.load_questionnaire`)."""
