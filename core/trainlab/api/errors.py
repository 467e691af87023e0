"""The errors of the plugin API, and the exit code each one becomes.

A leaf: it imports nothing of TrainLab's, so every layer can raise them.
"""

from __future__ import annotations

import difflib
from typing import Iterable


class UsageError(Exception):
    """Bad usage or bad input: exit code 2, message names what is at fault."""

    exit_code = 2


class DataError(UsageError):
    """The data cannot be used as given (names the file, row or option)."""


class RunFailed(Exception):
    """A run that started and then failed: exit code 1."""

    exit_code = 1


class StopRequested(KeyboardInterrupt):
    """Raised by task code that honoured ``RunContext.should_stop`` (a long data scan).

    A KeyboardInterrupt, so that ``except Exception`` in task code lets it
    through and whatever handles Ctrl-C handles it too (exit 130).
    """

    exit_code = 130


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """``"; did you mean epochs?"`` for the closest of ``names`` to a mistyped ``word``, or ``""``."""
    close = difflib.get_close_matches(word, list(names), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""
