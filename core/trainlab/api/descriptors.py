"""The descriptors a plugin declares: tasks, their parameters, presets and metrics.

Plain frozen dataclasses, importable without torch: discovery reads and
validates them cheaply (STYLE.md: no heavy plugin code at start-up).  The
runtime side of a task (``trainlab.Task`` and the family base classes) is
imported only when a run starts, through ``TaskSpec.factory``.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from trainlab.api.details import FAMILY_DETAILS, Detail

PARAM_TYPES = ("int", "float", "bool", "str", "choice", "path")
TASK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
PARAM_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
METRIC_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")

# The task families the engine and the window know how to evaluate and show.
# A plugin may name another family: it then supplies its own metric
# accumulator, and the window shows the table and curves of its declared
# metrics (``docs/plugins.md``).
FAMILIES = ("classification", "regression", "multilabel")
INPUT_KINDS = ("image", "text", "row", "file")
# The families whose outputs are classes: class_weighting and try-it's top-k
# apply to them (a task of another family says so with ``TaskSpec.classes``).
CLASS_FAMILIES = ("classification", "multilabel")
# Engine parameters that mean something only for a task with classes: the
# window and ``trainlab tasks`` do not offer them to the others.
CLASS_PARAMS = ("class_weighting",)
# How a metric reads (trainlab.runfolder.display); a Python format spec is accepted too.
METRIC_DISPLAYS = ("percent", "loss", "score", "count", "number")


class _Unset(enum.Enum):
    """``Param.before`` unset: runs made before the parameter existed behaved as its default says (an enum
    member, so it stays itself through pickling and copies)."""

    UNSET = "unset"


AS_DEFAULT = _Unset.UNSET

_TRUE = {"1", "true", "yes", "on", "y"}
_FALSE = {"0", "false", "no", "off", "n"}


@dataclass(frozen=True)
class Param:
    """One parameter of a task's schema.

    ``type`` is one of int, float, bool, str, choice, path.  For ``choice``,
    ``choices`` lists the allowed values; with ``open_choices`` other strings
    are accepted too (a model preset list that also takes a folder).
    ``minimum``/``maximum`` bound numbers (inclusive).  ``before`` is the
    value that runs made before the parameter existed behaved as having: a
    run resumed or evaluated from stored parameters that lack it gets
    ``before``, not today's default (a parameter added with a default that
    changes what a run does, a head's own learning rate, must not change
    the runs already made).
    """

    name: str
    type: str
    default: Any
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    open_choices: bool = False
    title: str = ""
    group: str = "task"
    advanced: bool = False
    before: Any = AS_DEFAULT

    def coerce(self, value: Any) -> Any:
        """Return ``value`` as this parameter's type, or raise ValueError."""
        if value is None:
            if self.default is None:
                return None
            raise ValueError(f"{self.name}: a value is required")
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError(f"{self.name}: expected true or false, got {value!r}")
        if self.type == "int":
            if isinstance(value, bool):
                raise ValueError(f"{self.name}: expected an integer, got {value!r}")
            try:
                number = int(str(value).strip()) if not isinstance(value, int) else value
            except ValueError:
                raise ValueError(f"{self.name}: expected an integer, got {value!r}") from None
            self._check_range(number)
            return number
        if self.type == "float":
            if isinstance(value, bool):
                raise ValueError(f"{self.name}: expected a number, got {value!r}")
            try:
                number = float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
            except ValueError:
                raise ValueError(f"{self.name}: expected a number, got {value!r}") from None
            if not math.isfinite(number):
                raise ValueError(f"{self.name}: expected a finite number, got {value!r}")
            self._check_range(number)
            return number
        text = str(value)
        if self.type == "choice":
            if text in self.choices or (self.open_choices and text.strip()):
                return text
            raise ValueError(f"{self.name}: {text!r} is not one of {', '.join(self.choices)}")
        if self.type == "path":
            return text
        return text

    def _check_range(self, number: float) -> None:
        if self.minimum is not None and number < self.minimum:
            raise ValueError(f"{self.name}: {number} is below the minimum {self.minimum:g}")
        if self.maximum is not None and number > self.maximum:
            raise ValueError(f"{self.name}: {number} is above the maximum {self.maximum:g}")

    def validate_declaration(self) -> list[str]:
        """Problems with this declaration itself (used on plugin descriptors)."""
        problems = []
        if not isinstance(self.name, str) or not PARAM_NAME_RE.match(self.name):
            problems.append(f"parameter name {self.name!r} is not lower_snake_case")
        if self.type not in PARAM_TYPES:
            problems.append(f"parameter {self.name!r}: unknown type {self.type!r}")
            return problems
        if self.type == "choice" and not self.choices and not self.open_choices:
            problems.append(f"parameter {self.name!r}: a choice needs choices")
        if self.default is not None:
            try:
                self.coerce(self.default)
            except ValueError as exc:
                problems.append(f"parameter {self.name!r}: bad default: {exc}")
        if self.before is not AS_DEFAULT and self.before is not None:
            try:
                self.coerce(self.before)
            except ValueError as exc:
                problems.append(f"parameter {self.name!r}: bad value for runs made before it: {exc}")
        return problems

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "type": self.type, "default": self.default, "help": self.help}
        if self.title:
            data["title"] = self.title
        if self.minimum is not None:
            data["minimum"] = self.minimum
        if self.maximum is not None:
            data["maximum"] = self.maximum
        if self.choices:
            data["choices"] = list(self.choices)
            data["open_choices"] = self.open_choices
        data["group"] = self.group
        data["advanced"] = self.advanced
        if self.before is not AS_DEFAULT:
            data["before"] = self.before
        return data


@dataclass(frozen=True)
class Preset:
    """A model preset: choosing ``model=name`` applies ``overrides``."""

    name: str
    title: str = ""
    description: str = ""
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title or self.name,
            "description": self.description,
            "overrides": dict(self.overrides),
        }


@dataclass(frozen=True)
class Metric:
    """A metric a task computes on each evaluation.

    ``name`` is its key in eval events, ``eval.json``, ``run.json`` and
    ``train --json`` (lower_snake_case, never ``loss``: the engine computes
    that).  ``higher_is_better`` decides the best checkpoint and early
    stopping when it is the ``monitor``.  ``display`` is how it reads: one of
    ``percent`` (a fraction shown as 92.5%), ``score`` (3 decimals), ``loss``
    or ``number`` (4 significant digits), ``count``, or a Python format spec.

    Plugin API 2.1 adds ``unit``, what the value is measured in, written after
    it wherever it is shown (``"°C"``, ``"ms"``; not for ``percent``), and
    ``monitorable``: False for a figure that does not follow the model (a
    naive baseline's error, a count of windows), which is then never offered
    as ``monitor``.  Every surface (the CLI, the window's log, tables and
    plots, the run history) writes a value through one function,
    ``trainlab.runfolder.display.format_metric(name, value, metric)``.
    """

    name: str
    title: str = ""
    higher_is_better: bool = True
    display: str = "number"
    help: str = ""
    unit: str = ""
    monitorable: bool = True

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Metric":
        """A metric as ``to_json`` wrote it (run.json's ``declared_metrics``); missing keys take their defaults."""
        return cls(
            str(data.get("name") or ""),
            str(data.get("title") or ""),
            bool(data.get("higher_is_better", True)),
            str(data.get("display") or "number"),
            str(data.get("help") or ""),
            str(data.get("unit") or ""),
            bool(data.get("monitorable", True)),
        )

    def validate(self) -> list[str]:
        problems = []
        if not isinstance(self.name, str) or not METRIC_NAME_RE.match(self.name) or self.name == "loss":
            problems.append(f"metric name {self.name!r} is not lower_snake_case (and not 'loss', which the engine computes)")
        if not isinstance(self.unit, str):
            problems.append(f"metric {self.name!r}: unit must be a string ('' for none)")
        if not isinstance(self.monitorable, bool):
            problems.append(f"metric {self.name!r}: monitorable must be True or False")
        if not isinstance(self.display, str) or not self.display:
            problems.append(f"metric {self.name!r}: display must be a kind ({', '.join(METRIC_DISPLAYS)}) or a format spec")
        elif self.display not in METRIC_DISPLAYS:
            try:
                format(0.5, self.display)
            except (ValueError, TypeError):
                problems.append(f"metric {self.name!r}: display {self.display!r} is neither a kind nor a format spec")
        return problems

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title or self.name,
            "higher_is_better": self.higher_is_better,
            "display": self.display,
            "help": self.help,
            "unit": self.unit,
            "monitorable": self.monitorable,
        }


# The metrics of each built-in family, and its default monitor: a task of a
# family declares none of its own unless it computes others.
FAMILY_METRICS: dict[str, tuple[tuple[Metric, ...], str]] = {
    "classification": (
        (
            Metric("accuracy", "Accuracy", True, "percent", "Share of examples whose top label is right."),
            Metric("macro_f1", "Macro-F1", True, "score", "F1 of each class present, averaged with equal weight."),
        ),
        "accuracy",
    ),
    "regression": (
        (
            Metric("r2", "R\u00b2", True, "score", "Share of the targets' variance the model explains (1 is perfect, 0 is the mean)."),
            Metric("mae", "MAE", False, "number", "Mean absolute error, in the target's units."),
            Metric("rmse", "RMSE", False, "number", "Root mean squared error, in the target's units."),
        ),
        "r2",
    ),
    "multilabel": (
        (
            Metric("micro_f1", "Micro-F1", True, "score", "F1 over every (example, label) decision."),
            Metric("macro_f1", "Macro-F1", True, "score", "F1 of each label, averaged with equal weight."),
        ),
        "micro_f1",
    ),
}


@dataclass(frozen=True)
class InputSpec:
    """What one input to a trained model is, for try-it, ``predict`` and the data chooser.

    ``kind``: ``image`` (an image file), ``text`` (a string), ``row`` (one
    row of a table: a mapping of column to value, or a CSV line), or
    ``file`` (a file of one of ``suffixes``).  ``title`` is how try-it asks
    for one ("a photo of a cell", "a review").  ``columns`` (plugin API 2.1)
    names a row's columns in order: try-it then offers a field per column and
    gives the predictor the row as one CSV line in that order.
    """

    kind: str = "text"
    suffixes: tuple[str, ...] = ()
    title: str = ""
    columns: tuple[str, ...] = ()

    def validate(self) -> list[str]:
        problems = []
        if self.kind not in INPUT_KINDS:
            problems.append(f"input kind {self.kind!r} is not one of {', '.join(INPUT_KINDS)}")
        if not all(isinstance(s, str) and s.startswith(".") for s in self.suffixes):
            problems.append("input suffixes must be strings starting with a dot ('.wav')")
        if isinstance(self.columns, str) or not all(isinstance(c, str) and c.strip() for c in self.columns):
            problems.append("input columns must be a tuple of column names")
        elif len(set(self.columns)) != len(self.columns):
            problems.append("input columns name a column twice")
        elif self.columns and self.kind != "row":
            problems.append(f"input columns are for row inputs, not {self.kind}")
        return problems

    def accepts_path(self, path: str | Path) -> bool:
        """Whether ``path`` names a file of this kind (by its suffix)."""
        suffix = Path(path).suffix.lower()
        return bool(self.suffixes) and suffix in {s.lower() for s in self.suffixes}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "suffixes": list(self.suffixes), "title": self.title}
        if self.columns:
            out["columns"] = list(self.columns)
        return out


@dataclass(frozen=True)
class OutputSpec:
    """What one prediction of a trained model holds (plugin API 2.1), for the kit to check.

    ``kind``: the ``Prediction.kind`` the task's predictor returns (empty:
    any).  ``field``: the attribute of that prediction holding its values
    (``"values"`` of a forecast).  ``shape``: the length of ``field`` along
    each axis, a number or the name of an ``int`` task parameter that holds
    it (``("horizon",)``: as many values as the ``horizon`` parameter says).
    Nothing declared: nothing checked.
    """

    kind: str = ""
    field: str = ""
    shape: tuple[int | str, ...] = ()

    def validate(self, params: Mapping[str, Param] | None = None) -> list[str]:
        problems = []
        if not isinstance(self.kind, str) or not isinstance(self.field, str):
            return ["output kind and field must be strings"]
        if self.field and not self.field.isidentifier():
            problems.append(f"output field {self.field!r} is not an attribute name")
        if not isinstance(self.shape, (tuple, list)):
            return problems + ["output shape must be a tuple of lengths or parameter names"]
        if self.shape and not self.field:
            problems.append("output shape needs the field that holds the values")
        for axis in self.shape:
            if isinstance(axis, bool) or not isinstance(axis, (int, str)) or (isinstance(axis, int) and axis < 0):
                problems.append(f"output shape entry {axis!r} is neither a length nor a parameter name")
            elif isinstance(axis, str) and params is not None and (axis not in params or params[axis].type != "int"):
                problems.append(f"output shape names {axis!r}, which is not an int parameter of the task")
        return problems

    def lengths(self, params: Mapping[str, Any]) -> tuple[int, ...]:
        """``shape`` with each parameter name replaced by its value in ``params``."""
        return tuple(int(params[axis]) if isinstance(axis, str) else int(axis) for axis in self.shape)

    def describe(self, params: Mapping[str, Any]) -> str:
        """``(horizon=3,)``: the declared shape as the kit's messages name it."""
        parts = [f"{axis}={int(params[axis])}" if isinstance(axis, str) else str(axis) for axis in self.shape]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "shape": list(self.shape)}


@dataclass(frozen=True)
class TaskSpec:
    """What a plugin declares about one task; cheap to build, no torch.

    ``factory`` is ``"package.module:Class"``; it is imported only when a run
    starts and must produce a ``Task``.  ``defaults`` overrides engine
    parameter defaults for this task (for example ``lr``).  ``data_kind`` tells
    the window whether to offer a folder, a file, or both.

    Plugin API 2 adds (each with a default that keeps an API 1 descriptor
    meaning what it meant):

    * ``family``: ``classification`` (default), ``regression``, ``multilabel``
      or a plugin's own; it picks the results view and the prediction form.
    * ``metrics``: what each evaluation computes; empty means the family's
      (``FAMILY_METRICS``).  ``monitor``: the default ``monitor`` parameter,
      a metric's name or ``loss``; empty means the family's.
    * ``input``: what one input to the trained model is (``InputSpec``).
    * ``model_formats``: the model folder formats the ``model`` parameter
      accepts (``trainlab.models.catalog`` tells each folder's format:
      ``transformers``, ``trainlab-image``, ``torchvision-checkpoint``, or a
      plugin's own ``model.json`` format); the model store and the window
      offer only those.
    * ``sample_data``: a demo data set, ``"package:relative/path"`` inside the
      plugin's own package (found without importing it), or a path inside
      ``trainlab_resources`` (the built-ins).
    Plugin API 2.1 adds:

    * ``output``: what one prediction holds (``OutputSpec``: its kind, and
      the field and shape of its values), checked by the plugin kit.
    * ``details``: what each evaluation reports besides its metrics, typed
      (``trainlab.Table``, ``ExampleRows``, ``Series``, ``Figure``), in the
      order the results page shows them; empty means the family's
      (``FAMILY_DETAILS``).
    """

    id: str
    title: str
    factory: str
    description: str = ""
    params: tuple[Param, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    presets: tuple[Preset, ...] = ()
    data_kind: str = "either"  # "folder", "file" or "either"
    data_help: str = ""
    sample_data: str = ""
    family: str = "classification"
    metrics: tuple[Metric, ...] = ()
    monitor: str = ""
    input: InputSpec = field(default_factory=InputSpec)
    model_formats: tuple[str, ...] = ()
    classes: bool | None = None
    output: OutputSpec = field(default_factory=OutputSpec)
    details: tuple[Detail, ...] = ()

    # -- the resolved declarations ------------------------------------------
    def metric_specs(self) -> tuple[Metric, ...]:
        """The metrics each evaluation computes (the family's when none are declared)."""
        if self.metrics:
            return tuple(self.metrics)
        return FAMILY_METRICS.get(self.family, ((), "loss"))[0]

    def detail_specs(self) -> tuple[Detail, ...]:
        """The details each evaluation reports besides its metrics (the family's when none are declared)."""
        if self.details:
            return tuple(self.details)
        return FAMILY_DETAILS.get(self.family, ())

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metric_specs() if m.name == name), None)

    def default_monitor(self) -> str:
        if self.monitor:
            return self.monitor
        if not self.metrics and self.family in FAMILY_METRICS:
            return FAMILY_METRICS[self.family][1]
        choices = self.monitor_choices()
        return choices[0]  # the first monitorable metric, else loss

    def monitor_choices(self) -> tuple[str, ...]:
        """What ``monitor`` may name: the monitorable metrics, and ``loss``."""
        return (*(m.name for m in self.metric_specs() if m.monitorable), "loss")

    def has_classes(self) -> bool:
        """Whether the task's outputs are classes (``classes``, else its family's answer)."""
        return bool(self.classes) if self.classes is not None else self.family in CLASS_FAMILIES

    def uses_param(self, name: str) -> bool:
        """False for an engine parameter that means nothing to this task (``class_weighting``
        without classes): the window and ``trainlab tasks`` leave it out."""
        return self.has_classes() or name not in CLASS_PARAMS

    def higher_is_better(self, metric: str) -> bool:
        spec = self.metric(metric)
        return spec.higher_is_better if spec is not None else False  # loss, or unknown: lower

    def sample_path(self) -> Path | None:
        """The folder or file of ``sample_data``, or None when there is none here."""
        value = (self.sample_data or "").strip()
        if not value:
            return None
        if ":" in value and not Path(value).is_absolute():
            package, _, relative = value.partition(":")
            path = _package_folder(package)
            path = path / relative if path is not None else None
        else:
            from trainlab_resources import resource_path

            path = resource_path(value)
        return path if path is not None and path.exists() else None

    # -- checks and listing -------------------------------------------------
    def validate(self, engine_params: Sequence[Param] = ()) -> list[str]:
        """Problems with this descriptor; empty when it is usable."""
        problems: list[str] = []
        if not isinstance(self.id, str) or not TASK_ID_RE.match(self.id):
            return [f"task id {self.id!r} must be lower-case letters, digits and dashes"]
        if not isinstance(self.title, str) or not self.title.strip():
            problems.append(f"task {self.id!r}: title is empty")
        if not isinstance(self.factory, str) or not re.match(r"^[\w.]+:[\w.]+$", self.factory):
            problems.append(f"task {self.id!r}: factory {self.factory!r} is not 'module:attribute'")
        if self.data_kind not in ("folder", "file", "either"):
            problems.append(f"task {self.id!r}: data_kind {self.data_kind!r} is not folder, file or either")
        if not isinstance(self.family, str) or not re.match(r"^[a-z][a-z0-9-]{0,62}$", self.family):
            problems.append(f"task {self.id!r}: family {self.family!r} is not a lower-case name")
        if not isinstance(self.metrics, (tuple, list)) or not all(isinstance(m, Metric) for m in self.metrics):
            problems.append(f"task {self.id!r}: metrics must be a sequence of trainlab.Metric")
        else:
            seen: set[str] = set()
            for metric in self.metrics:
                problems += [f"task {self.id!r}: {msg}" for msg in metric.validate()]
                if metric.name in seen:
                    problems.append(f"task {self.id!r}: metric {metric.name!r} is declared twice")
                seen.add(metric.name)
            if not self.metrics and self.family not in FAMILY_METRICS:
                problems.append(f"task {self.id!r}: family {self.family!r} is not built in, so the task must declare its metrics")
            unmonitorable = {m.name for m in self.metric_specs() if not m.monitorable}
            if self.monitor in unmonitorable:
                problems.append(f"task {self.id!r}: monitor {self.monitor!r} is declared monitorable=False, so it cannot be the monitor")
            elif self.monitor and self.monitor not in self.monitor_choices():
                problems.append(f"task {self.id!r}: monitor {self.monitor!r} is not one of {', '.join(self.monitor_choices())}")
        if self.classes is not None and not isinstance(self.classes, bool):
            problems.append(f"task {self.id!r}: classes must be True, False or None (the family's answer)")
        if not isinstance(self.input, InputSpec):
            problems.append(f"task {self.id!r}: input must be a trainlab.InputSpec")
        else:
            problems += [f"task {self.id!r}: {msg}" for msg in self.input.validate()]
        if not isinstance(self.model_formats, (tuple, list)) or not all(isinstance(f, str) and f for f in self.model_formats):
            problems.append(f"task {self.id!r}: model_formats must be a sequence of format names")
        if not isinstance(self.params, (tuple, list)) or not all(isinstance(p, Param) for p in self.params):
            problems.append(f"task {self.id!r}: params must be a sequence of trainlab.Param")
            return problems
        problems += self._detail_problems()
        if not isinstance(self.output, OutputSpec):
            problems.append(f"task {self.id!r}: output must be a trainlab.OutputSpec")
        else:
            declared = {p.name: p for p in (*engine_params, *self.params) if isinstance(p, Param)}
            problems += [f"task {self.id!r}: {msg}" for msg in self.output.validate(declared)]
        names = [p.name for p in engine_params]
        for param in self.params:
            problems += [f"task {self.id!r}: {msg}" for msg in param.validate_declaration()]
            if param.name in names:
                problems.append(f"task {self.id!r}: parameter {param.name!r} is declared twice")
            names.append(param.name)
        schema = {p.name: p for p in (*engine_params, *self.params)}
        if "monitor" in schema and not problems:
            import dataclasses

            schema["monitor"] = dataclasses.replace(schema["monitor"], choices=self.monitor_choices(), default=self.default_monitor())
        for key, value in dict(self.defaults).items():
            problems += _check_override(self.id, "defaults", schema, key, value)
        if not all(isinstance(p, Preset) for p in self.presets):
            problems.append(f"task {self.id!r}: presets must be trainlab.Preset")
            return problems
        for preset in self.presets:
            for key, value in dict(preset.overrides).items():
                problems += _check_override(self.id, f"preset {preset.name!r}", schema, key, value)
        return problems


    def _detail_problems(self) -> list[str]:
        if isinstance(self.details, (str, Mapping)) or not all(isinstance(d, Detail) for d in self.details):
            return [f"task {self.id!r}: details must be a sequence of trainlab details (Table, ExampleRows, Series, Figure)"]
        problems = []
        names = [d.name for d in self.details]
        for name in dict.fromkeys(n for n in names if names.count(n) > 1):
            problems.append(f"task {self.id!r}: detail {name!r} is declared twice")
        metric_names = {m.name for m in self.metric_specs()} if isinstance(self.metrics, (tuple, list)) else set()
        for detail in self.details:
            problems += [f"task {self.id!r}: {msg}" for msg in detail.validate()]
            if detail.name in metric_names:
                problems.append(f"task {self.id!r}: detail {detail.name!r} has a metric's name")
        return problems


def _package_folder(package: str) -> Path | None:
    """The folder of ``package`` without importing it (its parent packages only)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin).parent if spec.origin else None


def _check_override(task_id: str, where: str, schema: Mapping[str, Param], key: str, value: Any) -> list[str]:
    if key not in schema:
        return [f"task {task_id!r}: {where} sets unknown parameter {key!r}"]
    try:
        schema[key].coerce(value)
    except ValueError as exc:
        return [f"task {task_id!r}: {where}: {exc}"]
    return []
