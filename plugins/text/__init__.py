"""Built-in text-classification plugin (being written)."""
