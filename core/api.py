"""The public plugin API: what a task plugin declares and what it implements.

Everything here is importable without torch: descriptors (``TaskSpec``,
``Param``, ``Preset``) are plain frozen dataclasses that discovery can read and
validate cheaply.  The runtime side (``Task`` and ``ClassificationTask``) is
only instantiated when a run starts, through the descriptor's ``factory``
path, and imports torch inside its methods.

Compatibility follows ``PLUGIN_API_VERSION`` = (major, minor): a minor bump
only adds, a major bump removes or changes.  A plugin built for another major
is reported ``incompatible`` and not loaded.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

PLUGIN_API_VERSION: tuple[int, int] = (1, 0)

PARAM_TYPES = ("int", "float", "bool", "str", "choice", "path")
TASK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
PARAM_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


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


def _never() -> bool:
    return False


# --------------------------------------------------------------------------
# Parameters


_TRUE = {"1", "true", "yes", "on", "y"}
_FALSE = {"0", "false", "no", "off", "n"}


@dataclass(frozen=True)
class Param:
    """One parameter of a task's schema.

    ``type`` is one of int, float, bool, str, choice, path.  For ``choice``,
    ``choices`` lists the allowed values; with ``open_choices`` other strings
    are accepted too (a model preset list that also takes a folder).
    ``minimum``/``maximum`` bound numbers (inclusive).
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
class TaskSpec:
    """What a plugin declares about one task; cheap to build, no torch.

    ``factory`` is ``"package.module:Class"``; it is imported only when a run
    starts and must produce a ``Task``.  ``defaults`` overrides engine
    parameter defaults for this task (for example ``lr``).  ``data_kind`` tells
    the window whether to offer a folder, a file, or both.
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
    sample_data: str = ""  # a path inside trainlab.resources, for demos

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
        if not isinstance(self.params, (tuple, list)) or not all(isinstance(p, Param) for p in self.params):
            problems.append(f"task {self.id!r}: params must be a sequence of trainlab.Param")
            return problems
        names = [p.name for p in engine_params]
        for param in self.params:
            problems += [f"task {self.id!r}: {msg}" for msg in param.validate_declaration()]
            if param.name in names:
                problems.append(f"task {self.id!r}: parameter {param.name!r} is declared twice")
            names.append(param.name)
        schema = {p.name: p for p in (*engine_params, *self.params)}
        for key, value in dict(self.defaults).items():
            problems += _check_override(self.id, "defaults", schema, key, value)
        if not all(isinstance(p, Preset) for p in self.presets):
            problems.append(f"task {self.id!r}: presets must be trainlab.Preset")
            return problems
        for preset in self.presets:
            for key, value in dict(preset.overrides).items():
                problems += _check_override(self.id, f"preset {preset.name!r}", schema, key, value)
        return problems

    def to_json(self, engine_params: Sequence[Param] = ()) -> dict[str, Any]:
        from trainlab.params import full_schema, resolve

        schema = full_schema(self, engine_params)
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "data_kind": self.data_kind,
            "data_help": self.data_help,
            "parameters": [p.to_json() for p in schema.values()],
            "defaults": resolve(self, engine_params, {}, {}),
            "presets": [p.to_json() for p in self.presets],
        }


def _check_override(task_id: str, where: str, schema: Mapping[str, Param], key: str, value: Any) -> list[str]:
    if key not in schema:
        return [f"task {task_id!r}: {where} sets unknown parameter {key!r}"]
    try:
        schema[key].coerce(value)
    except ValueError as exc:
        return [f"task {task_id!r}: {where}: {exc}"]
    return []


# --------------------------------------------------------------------------
# Runtime


@dataclass
class DataSummary:
    """What the task found in the data, shown before training.

    ``counts`` maps split -> label -> count.  ``skipped`` maps a reason to a
    count, ``skipped_examples`` lists a few (file or row, reason).
    """

    label_names: list[str]
    counts: dict[str, dict[str, int]]
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "label_names": list(self.label_names),
            "counts": self.counts,
            "skipped": self.skipped,
            "skipped_examples": [list(x) for x in self.skipped_examples],
            "warnings": list(self.warnings),
            "extra": self.extra,
        }

    def imbalance_warning(self, split: str = "train", ratio: float = 5.0) -> str | None:
        counts = [c for c in self.counts.get(split, {}).values() if c > 0]
        if len(counts) >= 2 and max(counts) >= ratio * min(counts):
            return (
                f"classes are imbalanced in {split} (largest {max(counts)}, smallest {min(counts)}); "
                "consider --set class_weighting=true"
            )
        return None


@dataclass
class RunContext:
    """What the engine tells a task about the run it is part of."""

    device: Any  # torch.device
    precision: str  # "fp32", "bf16" or "fp16"
    seed: int
    run_dir: Path | None
    params: Mapping[str, Any]
    log: Callable[[str], None] = print
    class_weights: Any = None  # torch.Tensor on device, or None
    multiprocessing_context: str | None = None  # start method for DataLoader workers
    purpose: str = "train"  # why the task is prepared: "train", "resume" or "evaluate"
    # evaluate: the data is not the run's own, so all of it is evaluated (no
    # train/validation split); on its own data a run is evaluated on the same
    # validation split it was trained with
    whole_data: bool = False
    # True once the user asked the run to stop: long work before the loop (a
    # data scan in prepare) asks it now and then and raises StopRequested
    should_stop: Callable[[], bool] = _never

    @property
    def is_cuda(self) -> bool:
        return getattr(self.device, "type", str(self.device)) == "cuda"


@dataclass
class EvalBatch:
    """One evaluation batch: summed loss, logits and targets, example keys."""

    loss_sum: Any  # 0-d tensor
    logits: Any  # [n, classes] tensor
    targets: Any  # [n] tensor
    keys: Sequence[Any] | None = None


class Task:
    """The runtime side of a task; the engine owns the loop.

    A task supplies data, a model and step functions.  Override what your task
    needs; ``ClassificationTask`` provides the step functions for the common
    case of logits and integer targets.  Methods marked *optional* have
    working defaults.
    """

    spec: TaskSpec

    def __init__(self, spec: TaskSpec, params: Mapping[str, Any]):
        self.spec = spec
        self.params = dict(params)
        self.label_names: list[str] = []

    # -- data ---------------------------------------------------------------
    def prepare(self, data_path: str, ctx: RunContext, label_names: Sequence[str] | None = None) -> DataSummary:
        """Scan and validate the data; raise DataError for unusable input.

        With ``label_names`` (evaluating a trained run on new data), the data's
        labels must be among them and keep their order.
        """
        raise NotImplementedError

    def splits(self) -> list[str]:
        """Splits that exist after ``prepare`` (train, val, maybe test)."""
        return ["train", "val"]

    def dataset(self, split: str) -> Any:
        """An indexable dataset for ``split`` (picklable: loader workers)."""
        raise NotImplementedError

    def collate(self, items: list[Any]) -> Any:  # optional
        from torch.utils.data import default_collate

        return default_collate(items)

    def batch_order(self, split: str, epoch: int, batch_size: int, seed: int) -> list[list[int]]:  # optional
        """Index batches for one pass; train order depends only on (seed, epoch)."""
        import torch

        n = len(self.dataset(split))
        if split == "train":
            gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
            order = torch.randperm(n, generator=gen).tolist()
        else:
            order = list(range(n))
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]

    def loader_options(self, split: str, ctx: RunContext) -> dict[str, Any]:  # optional
        """Extra DataLoader arguments (num_workers, pin_memory, ...)."""
        return {"num_workers": 0}

    def label_counts(self) -> list[int]:  # optional
        """Training examples per label (for class weighting)."""
        return []

    def describe_examples(self, split: str, keys: Sequence[Any]) -> list[str]:  # optional
        """A path or text for each example key (for misclassified lists)."""
        return [str(k) for k in keys]

    def skipped_during_training(self) -> dict[str, Any]:  # optional
        """Files or rows found unusable while training (listed in run.json)."""
        return {}

    # -- model --------------------------------------------------------------
    def build_model(self, ctx: RunContext) -> torch.nn.Module:
        raise NotImplementedError

    def prepare_model(self, model: torch.nn.Module, ctx: RunContext) -> torch.nn.Module:  # optional
        """Device placement and memory format; default ``model.to(device)``."""
        return model.to(ctx.device)

    def parameter_groups(self, model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:  # optional
        """Optimizer groups: no weight decay on biases and normalisation weights."""
        decay, no_decay = [], []
        for name, param in model.named_parameters():
            if not param.requires_grad:
                continue
            (no_decay if param.ndim <= 1 or name.endswith(".bias") else decay).append(param)
        groups = [{"params": decay, "weight_decay": weight_decay}]
        if no_decay:
            groups.append({"params": no_decay, "weight_decay": 0.0})
        return groups

    def to_device(self, batch: Any, ctx: RunContext) -> Any:  # optional
        from trainlab.engine.batches import move_to_device

        return move_to_device(batch, ctx.device)

    def train_step(self, model: torch.nn.Module, batch: Any, ctx: RunContext) -> tuple[torch.Tensor, int]:
        """Return (mean loss over the batch, number of examples)."""
        raise NotImplementedError

    def eval_step(self, model: torch.nn.Module, batch: Any, ctx: RunContext) -> EvalBatch:
        raise NotImplementedError

    # -- outputs ------------------------------------------------------------
    def save_model(self, model: torch.nn.Module, out_dir: Path, ctx: RunContext) -> None:
        """Write the final model, loadable without TrainLab."""
        raise NotImplementedError

    def load_trained_model(self, model_dir: Path, ctx: RunContext) -> torch.nn.Module:  # optional
        """Rebuild the trained model from ``save_model``'s folder.

        The engine evaluates from the run's checkpoints when they were kept;
        this is the fallback when they were not (``keep_checkpoints=none``).
        """
        raise NotImplementedError(f"task {self.spec.id} cannot reload its exported model; keep checkpoints")

    def load_predictor(self, model_dir: Path, device: Any) -> Callable[[list[str], int], list[list[tuple[str, float]] | DataError]]:
        """A function (inputs, top_k) -> per input [(label, probability)].

        An input that cannot be used (an unreadable image) gets a ``DataError``
        naming it in its place, rather than failing the whole call: the other
        inputs keep their predictions.
        """
        raise NotImplementedError

    def expand_inputs(self, inputs: Iterable[str]) -> list[str]:  # optional
        """Turn command-line inputs (folders, files of texts) into items."""
        return list(inputs)


class ClassificationTask(Task):
    """A task whose model maps a batch to logits over ``label_names``.

    Implement ``forward(model, batch) -> (logits, targets)`` and optionally
    ``batch_keys(batch)``; the loss is cross-entropy, with the engine's class
    weights when class weighting is on.
    """

    def forward(self, model: Any, batch: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def batch_keys(self, batch: Any) -> Sequence[Any] | None:
        return None

    def train_step(self, model, batch, ctx):
        import torch.nn.functional as F

        logits, targets = self.forward(model, batch)
        weight = ctx.class_weights
        if weight is not None:
            weight = weight.to(logits.dtype)
        loss = F.cross_entropy(logits, targets, weight=weight)
        return loss, int(targets.shape[0])

    def eval_step(self, model, batch, ctx):
        import torch.nn.functional as F

        logits, targets = self.forward(model, batch)
        loss_sum = F.cross_entropy(logits.float(), targets, reduction="sum")
        return EvalBatch(loss_sum=loss_sum, logits=logits, targets=targets, keys=self.batch_keys(batch))
