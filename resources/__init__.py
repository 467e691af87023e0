"""Package data: sample data sets, icons, vocabularies, translations."""
