"""Kept for code that imported the curves from here: they live in ``trainlab.curves``
(a ``RunSession`` owns them, and it has no Qt)."""

from trainlab.curves import MAX_POINTS, RunCurves, Series, Smoother

__all__ = ["MAX_POINTS", "RunCurves", "Series", "Smoother"]
