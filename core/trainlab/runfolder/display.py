"""How numbers of a run read: metrics and durations, the same in every view.

``format_metric(name, value)`` picks a form from the metric's name:

- accuracy-like (``accuracy``, ``top5_accuracy``, ``val_accuracy``...): a
  percentage with one decimal, ``92.5%``;
- losses and errors (``loss``, ``mae``, ``rmse``...): 4 significant digits;
- scores bounded by 1 (``macro_f1``, ``precision``, ``r2``...): 3 decimals;
- counts (``samples``, ``support``): an integer with thousands separators;
- anything else: 4 significant digits (no false precision on an unknown scale).

A task may declare how its metric reads (``display``): one of the kind names
above, or a Python format spec such as ``".2%"``, and in what ``unit`` it is
measured (written after the number: ``1.23 °C``).  No value, NaN or infinity
read as an en dash.  No Qt here: the command line, the window's log, tables
and plots, and the run history all write a metric through ``format_metric``,
given the declared ``trainlab.Metric`` when there is one.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "\u2013"  # en dash: no value (a run without evaluation, NaN)

PERCENT, LOSS, SCORE, COUNT, NUMBER = "percent", "loss", "score", "count", "number"
KINDS = (PERCENT, LOSS, SCORE, COUNT, NUMBER)

_LOSS_NAMES = {"loss", "mae", "mse", "rmse", "mape", "error", "perplexity"}
_SCORE_NAMES = {"f1", "precision", "recall", "r2", "auc", "roc_auc", "iou", "dice", "mcc", "kappa"}
_COUNT_NAMES = {"samples", "support", "count", "examples", "steps", "epochs"}


def metric_kind(name: str | None) -> str:
    """The form a metric reads in, inferred from its name (see the module docstring)."""
    key = str(name or "").strip().lower()
    last = key.rsplit("_", 1)[-1] if key else ""
    if key.endswith("accuracy") or last == "acc":
        return PERCENT
    if key in _COUNT_NAMES:
        return COUNT
    if key in _LOSS_NAMES or last in _LOSS_NAMES:
        return LOSS
    if key in _SCORE_NAMES or last in _SCORE_NAMES:
        return SCORE
    return NUMBER


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):  # metrics.jsonl carries NaN and infinities as strings
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def format_metric(name: str | None, value: Any, display: Any = None, *, detail: bool = False) -> str:
    """``value`` of metric ``name`` as text; ``MISSING`` for no usable value.

    ``display``: the metric as its task declared it (a ``trainlab.Metric``:
    its display and unit), or a declared form alone (a kind or a format
    spec); else the form is inferred from the name.  ``detail``: a table of
    one run's results, where percentages carry two decimals (runs 0.05
    points apart are told apart there); other kinds do not change.
    """
    number = _number(value)
    if number is None:
        return MISSING
    unit = ""
    if display is not None and not isinstance(display, str):  # a Metric (duck-typed: no import of the API here)
        unit = str(getattr(display, "unit", "") or "")
        display = getattr(display, "display", None)
    kind = display or metric_kind(name)
    if kind not in KINDS:
        try:
            return _with_unit(format(number, kind), unit, kind)
        except ValueError:  # a declared format this value cannot take: never fatal
            kind = metric_kind(name)
    if kind == PERCENT:
        return f"{number:.{2 if detail else 1}%}"
    if kind == SCORE:
        text = f"{number:.3f}"
    elif kind == COUNT and number.is_integer():
        text = f"{int(number):,}"
    else:
        text = f"{number:.4g}"
    return _with_unit(text, unit, kind)


def _with_unit(text: str, unit: str, kind: str) -> str:
    """``text`` and the unit after it; a percentage carries its own sign."""
    if not unit or kind == PERCENT or text.endswith("%"):
        return text
    return f"{text}{unit}" if unit in ("\u00b0", "\u2030") else f"{text} {unit}"  # 12\u00b0, else 12 ms


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
