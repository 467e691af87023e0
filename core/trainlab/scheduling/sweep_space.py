"""``--space`` items: which parameters a sweep varies and over what, checked against the task's schema.

Forms (``trainlab sweep --space ...``):

* ``lr=1e-5:1e-3`` a range of a number parameter, ``lr=1e-5:1e-3:log`` on a
  log scale; an integer parameter gives integers;
* ``lr=1e-5:1e-3:log:4`` the same range as 4 points (evenly spaced, on the
  log scale with ``log``): what a grid needs of a continuous range;
* ``model=mlp,wide-mlp`` or ``batch_size=16,32`` a list of values (one value
  fixes the parameter).

Each bound and value is checked as the parameter itself checks it (its type,
range and choices), so a space the task would refuse is exit 2 naming the
item before any trial runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from trainlab.api.assignments import format_value
from trainlab.api.descriptors import Param
from trainlab.api.errors import UsageError, did_you_mean

GRID_INTEGERS_MAX = 64  # an integer range listed whole in a grid, up to this many values
NOT_SWEPT = ("device",)  # the queue and the sweep choose the device


@dataclass(frozen=True)
class Dimension:
    """One swept parameter: a range (``low``..``high``, ``log``, optional ``points``) or ``values``."""

    name: str
    type: str  # int, float (ranges); any parameter type (values)
    low: float | None = None
    high: float | None = None
    log: bool = False
    points: int | None = None
    values: tuple[Any, ...] = ()

    @property
    def is_range(self) -> bool:
        return self.low is not None

    def text(self) -> str:
        """The item, written back canonically (a study remembers its space this way)."""
        if not self.is_range:
            return f"{self.name}=" + ",".join(format_value(v) for v in self.values)
        parts = [format_value(self._typed(self.low)), format_value(self._typed(self.high))]
        if self.log:
            parts.append("log")
        if self.points:
            parts.append(str(self.points))
        return f"{self.name}=" + ":".join(parts)

    def grid_values(self) -> list[Any]:
        """Every value a grid visits; UsageError for a continuous range without a point count."""
        if not self.is_range:
            return list(self.values)
        assert self.low is not None and self.high is not None
        if self.points:
            return self._points()
        if self.type == "int" and self.high - self.low + 1 <= GRID_INTEGERS_MAX:
            return list(range(int(self.low), int(self.high) + 1))
        example = f"{self.name}={format_value(self._typed(self.low))}:{format_value(self._typed(self.high))}{':log' if self.log else ''}:4"
        raise UsageError(f"--space {self.text()}: a grid over a range needs a point count, e.g. {example}")

    def _points(self) -> list[Any]:
        assert self.low is not None and self.high is not None and self.points
        n = self.points
        if self.log:
            a, b = math.log(self.low), math.log(self.high)
            raw = [math.exp(a + (b - a) * i / (n - 1)) for i in range(n)]
        else:
            raw = [self.low + (self.high - self.low) * i / (n - 1) for i in range(n)]
        raw[0], raw[-1] = self.low, self.high  # exact ends, not exp(log(x))
        values: list[Any] = []
        for value in raw:
            typed = self._typed(value) if self.type == "int" else float(f"{value:.6g}")
            if typed not in values:
                values.append(typed)
        return values

    def distribution(self) -> Any:
        """The optuna distribution a TPE or random sampler draws from."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if not self.is_range or self.points:
            return CategoricalDistribution(self.grid_values())
        if self.type == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log)
        return FloatDistribution(float(self.low), float(self.high), log=self.log)

    def _typed(self, value: Any) -> Any:
        return int(round(value)) if self.type == "int" else float(value)


def parse_space(items: Sequence[str], schema: Mapping[str, Param]) -> list[Dimension]:
    """The dimensions of ``--space`` items; UsageError naming the first bad one."""
    if not items:
        raise UsageError("sweep: give at least one --space KEY=LOW:HIGH[:log] or KEY=A,B,...")
    dimensions: list[Dimension] = []
    for item in items:
        dimension = parse_item(item, schema)
        if any(d.name == dimension.name for d in dimensions):
            raise UsageError(f"--space {item}: {dimension.name} is already swept by an earlier --space")
        dimensions.append(dimension)
    return dimensions


def parse_item(item: str, schema: Mapping[str, Param]) -> Dimension:
    name, sep, spec = item.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name or not spec.strip():
        raise UsageError(f"--space {item!r}: expected KEY=LOW:HIGH[:log][:POINTS] or KEY=A,B,...")
    param = schema.get(name)
    if param is None:
        hint = did_you_mean(name, schema) or "; `trainlab tasks TASK_ID` lists the task's parameters"
        raise UsageError(f"--space {item}: unknown parameter {name!r}{hint}")
    if name in NOT_SWEPT:
        raise UsageError(f"--space {item}: {name} is chosen by the sweep and the queue, not swept")
    if ":" in spec and param.type in ("int", "float"):
        return _range(item, param, spec)
    if ":" in spec and param.type not in ("str", "path"):
        listed = f" ({', '.join(param.choices)})" if param.choices else ""
        raise UsageError(f"--space {item}: {name} is a {param.type}{listed}, not a number: list its values with commas")
    values = []
    for raw in spec.split(","):
        if not raw.strip():
            raise UsageError(f"--space {item}: an empty value")
        try:
            value = param.coerce(raw.strip())
        except ValueError as exc:
            raise UsageError(f"--space {item}: {exc}") from None
        if value not in values:
            values.append(value)
    return Dimension(name, param.type, values=tuple(values))


def _range(item: str, param: Param, spec: str) -> Dimension:
    parts = [p.strip() for p in spec.split(":")]
    if len(parts) < 2 or len(parts) > 4:
        raise UsageError(f"--space {item}: expected {param.name}=LOW:HIGH[:log][:POINTS]")
    try:
        low, high = (param.coerce(p) for p in parts[:2])
    except ValueError as exc:
        raise UsageError(f"--space {item}: {exc}") from None
    log, points = False, None
    for extra in parts[2:]:
        if extra.lower() == "log" and not log:
            log = True
        elif extra.isdigit() and points is None:
            points = int(extra)
        else:
            raise UsageError(f"--space {item}: {extra!r} is neither 'log' nor a point count")
    if not low < high:
        raise UsageError(f"--space {item}: the low end must be below the high end")
    if log and low <= 0:
        raise UsageError(f"--space {item}: a log range needs a low end above 0")
    if points is not None and points < 2:
        raise UsageError(f"--space {item}: a range of points needs at least 2")
    return Dimension(param.name, param.type, low=float(low), high=float(high), log=log, points=points)


def grid_size(dimensions: Sequence[Dimension]) -> int:
    size = 1
    for dimension in dimensions:
        size *= len(dimension.grid_values())
    return size
