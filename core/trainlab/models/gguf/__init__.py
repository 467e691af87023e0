"""GGUF export: a transformers causal LM as one file llama.cpp and Ollama run (``export.export_gguf``).

Needs the ``gguf`` extra (the ``gguf`` package's writer); NumPy does the
float16 and Q8_0 conversion, so nothing is compiled.  Imported only by the
commands that export: it loads NumPy.
"""
