"""Other tools' exports (AIPerf, guidellm) read into evalkit's records, as run directories
whose validity is capped: evalkit did not measure them."""
