"""What a label cell holds, per task family: a class, a number, or a set of labels.

The readers in ``data.py`` hand each row's raw label value (a CSV cell is a
string; a JSONL value is whatever JSON holds) to the family's ``LabelKind``,
which turns it into the family's label or raises a ``DataError`` naming the
file and line.  ``strata`` gives the groups a validation split is carved out
of, so that the held-out rows cover every class, the target's whole range, or
every tag.  No torch here.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Hashable, Sequence

from trainlab import DataError

# Regression: the target's range is cut into this many bins of equal counts,
# each split like a class, so that validation spans low and high values alike.
REGRESSION_STRATA = 10


class LabelKind:
    """How one family reads a label cell.

    ``parse`` returns the label, or None for "no label" (the row is skipped
    and counted).  ``strata`` returns one sortable group key per row.
    """

    def parse(self, value: Any, path: Path, line: int) -> Any:
        raise NotImplementedError

    def strata(self, labels: Sequence[Any]) -> list[Hashable]:
        return list(labels)


class ClassLabel(LabelKind):
    """Single-label classification: a class name or an integer, as a string."""

    def parse(self, value: Any, path: Path, line: int) -> str | None:
        if value is None or isinstance(value, bool):
            return None if value is None else str(value).lower()
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        if isinstance(value, str):
            return value.strip() or None
        hint = "; for several labels per text use text-multilabel" if isinstance(value, list) else ""
        raise DataError(f"{path}: line {line}: label {value!r} is not a class name or an integer{hint}")


class NumberLabel(LabelKind):
    """Regression: a finite number (``3.5``, ``-2``, ``1e-3``); NaN and infinities are refused."""

    def parse(self, value: Any, path: Path, line: int) -> float | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise DataError(f"{path}: line {line}: label {value!r} is not a number")
        if isinstance(value, str):
            text = value.strip()
            try:
                number = float(text)
            except ValueError:
                hint = ""
                if text.count(",") == 1 and _is_number(text.replace(",", ".")):
                    hint = " (write the decimal separator as a dot: 3.5, not 3,5)"
                raise DataError(f"{path}: line {line}: label {text!r} is not a number{hint}") from None
        else:
            try:
                number = float(value)
            except OverflowError:  # an integer past the largest float
                number = math.inf
        if not math.isfinite(number):
            raise DataError(f"{path}: line {line}: label {value!r} is not a finite number (NaN and infinities cannot be learned)")
        return number

    def strata(self, labels: Sequence[float]) -> list[Hashable]:
        n = len(labels)
        bins = max(1, min(REGRESSION_STRATA, n // 5))
        order = sorted(range(n), key=lambda i: labels[i])
        out = [0] * n
        for rank, i in enumerate(order):
            out[i] = rank * bins // n
        return out


class LabelSetKind(LabelKind):
    """Multi-label: any number of labels per row, an empty set included.

    A CSV/TSV cell joins them with ``separator``; a JSONL value is a list
    (a string there is split by ``separator`` too, a number is one label).
    Repeated labels count once; the order is the order of first mention.
    """

    def __init__(self, separator: str = ";"):
        if not separator:
            raise DataError("label_separator is empty; give the character that joins a row's labels (default ;)")
        self.separator = separator

    def parse(self, value: Any, path: Path, line: int) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            items: list[Any] = value.split(self.separator)
        elif isinstance(value, list):
            items = value
        elif isinstance(value, int) and not isinstance(value, bool):
            items = [value]
        else:
            raise DataError(f"{path}: line {line}: labels {value!r} are neither a list nor names joined by {self.separator!r}")
        labels: list[str] = []
        for item in items:
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise DataError(f"{path}: line {line}: label {item!r} is not a name or an integer")
            name = str(item).strip()
            if name and name not in labels:
                labels.append(name)
        return tuple(labels)

    def strata(self, labels: Sequence[tuple[str, ...]]) -> list[Hashable]:
        # The rarest label of a row stands for it: every label, rare ones
        # above all, then reaches validation in proportion.
        frequency = Counter(label for row in labels for label in row)
        return [min(row, key=lambda label: (frequency[label], label)) if row else "" for row in labels]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
