"""Built-in image-classification plugin (being written)."""
