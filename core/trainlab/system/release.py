"""TrainLab's release: the version of the distribution (pyproject.toml reads it here) and of ``trainlab.__version__``.

A leaf that imports nothing, so that ``import trainlab`` and every layer can
name the version without loading anything else.
"""

TRAINLAB_VERSION = "0.1.0"
