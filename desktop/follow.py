"""Kept for code that imported the tail from here: it lives in ``trainlab.tail``."""

from trainlab.tail import MetricsTail

__all__ = ["MetricsTail"]
