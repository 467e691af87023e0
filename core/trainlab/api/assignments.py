"""How a parameter's value is written as text: the one formatter of ``--set key=value``.

What the window shows and remembers, and every command line TrainLab builds
for a run in another process (the window's child run, a torchrun group, the
queue's runs), writes values through ``format_value``; ``Param.coerce``
(``trainlab.api.descriptors``) reads them back, after ``parse_assignments``
(``trainlab.api.params``) has split ``key=value`` at its first ``=``.  So
the text is exact, not a rounded display: a float is its shortest ``repr``
(``0.30000000000000004`` stays that), without the ``.0`` of a whole number
(``2.0`` is ``2``, which an int parameter reads as well).  An argument list
is never a shell's, so spaces, commas and ``=`` in a value need no quoting.
``compact_value`` is the rounded display, for lines a person reads (a
sweep's trials), never for what is read back.
A leaf: it imports nothing of TrainLab's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


def format_value(value: Any) -> str:
    """``value`` as ``--set`` and the window's fields write it (``""`` for None).

    bool: ``true``/``false``; float: exact (``repr``), ``2`` for ``2.0``;
    a list or tuple: its items so written, joined by commas (as a
    comma-separated text parameter takes them); anything else: ``str``.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text.removesuffix(".0")
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(item) for item in value)
    return str(value)


def compact_value(value: Any, digits: int = 4) -> str:
    """``value`` for a person to read in a line of output: a float to ``digits`` significant digits
    (``0.0003162`` for a sampled 0.0003162277660168379, ``2`` for ``2.0``), anything else as
    ``format_value`` writes it.  Only for reading: ``--set``, JSON and the files a run writes keep
    the exact value."""
    if isinstance(value, float) and math.isfinite(value):
        return format(value, f".{digits}g")
    if isinstance(value, (list, tuple)):
        return ",".join(compact_value(item, digits) for item in value)
    return format_value(value)


def set_arguments(values: Mapping[str, Any], *, skip: Iterable[str] = ()) -> list[str]:
    """``["--set", "key=value", ...]`` for ``values`` in their order; None values and ``skip`` left out."""
    left_out = set(skip)
    arguments: list[str] = []
    for name, value in values.items():
        if value is None or name in left_out:
            continue
        arguments += ["--set", f"{name}={format_value(value)}"]
    return arguments
