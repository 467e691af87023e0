"""Small text formats the window shares (no Qt)."""

from __future__ import annotations

import math


def format_duration(seconds: float | None, missing: str = "\u2014") -> str:
    """``m:ss`` or ``h:mm:ss``; ``missing`` for no value or a negative one
    (an ETA, a run's duration)."""
    return _duration(seconds, missing, signed=False)


def format_offset(seconds: float) -> str:
    """A duration that may be negative: ``-0:05`` (time-axis ticks)."""
    return _duration(seconds, "", signed=True)


def _duration(seconds: float | None, missing: str, signed: bool) -> str:
    if seconds is None or not math.isfinite(seconds) or (seconds < 0 and not signed):
        return missing
    whole = int(round(seconds))
    sign = "-" if whole < 0 else ""
    hours, rest = divmod(abs(whole), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours}:{minutes:02d}:{secs:02d}" if hours else f"{sign}{minutes}:{secs:02d}"
