"""The runtime side of a task: what the engine hands it and what it implements.

Instantiated when a run starts (through ``TaskSpec.factory``); nothing here
imports torch at module level: a task's methods do.  The family base classes
that build on ``Task`` live in ``trainlab.api.families``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from trainlab.api.descriptors import TaskSpec

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch


def _never() -> bool:
    return False


# What each key of ``DataSummary.counts[split]`` is in a built-in family
# (regression counts one total per split: no groups).
FAMILY_GROUP_NOUNS = {"classification": "class", "multilabel": "label"}
_PLURALS = {"class": "classes", "series": "series", "box": "boxes", "index": "indices", "datum": "data"}


def plural(noun: str) -> str:
    """The plural of an English ``noun`` ("class" -> "classes", "series" -> "series", "window" -> "windows")."""
    if noun in _PLURALS:
        return _PLURALS[noun]
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if len(noun) > 1 and noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


@dataclass
class DataSummary:
    """What the task found in the data, shown before training.

    ``counts`` maps split -> group -> count: for a classification task the
    groups are its classes.  ``skipped`` maps a reason to a count,
    ``skipped_examples`` lists a few (file or row, reason).

    Plugin API 2.1 lets a task say what it counts, in its family's words, for
    the window's data summary and the command line: ``group_noun``, what each
    group is, singular (``"series"``, ``"target"``; empty: the family's,
    ``"class"`` for classification, ``"label"`` for multi-label, none for a
    family whose counts are one total per split), and ``count_noun``, what
    each count counts, plural (``"windows"``, ``"tokens"``, ``"boxes"``;
    empty: ``"examples"``).

    ``notes``: lines about the data in the task's own words (lengths, how an
    example renders), shown under the window's data check as they are.
    """

    label_names: list[str]
    counts: dict[str, dict[str, int]]
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    group_noun: str = ""
    count_noun: str = ""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "label_names": list(self.label_names),
            "counts": self.counts,
            "skipped": self.skipped,
            "skipped_examples": [list(x) for x in self.skipped_examples],
            "warnings": list(self.warnings),
            "extra": self.extra,
            "group_noun": self.group_noun,
            "count_noun": self.count_noun,
            "notes": list(self.notes),
        }

    def nouns(self, family: str = "") -> tuple[str, str]:
        """(what a group is, singular; what a count counts, plural) for a task of ``family``.

        The group noun is empty when the counts are one total per split (a
        regression's ``{"rows": n}``): there are no groups to name or list.
        """
        group = self.group_noun or FAMILY_GROUP_NOUNS.get(family, "")
        if not group and any(len(per_group) > 1 for per_group in self.counts.values()):
            group = "group"  # a family of a plugin's own that did not name its groups
        return group, self.count_noun or "examples"

    def groups(self) -> list[str]:
        """The groups of ``counts``: ``label_names`` when given, else every key found."""
        names = list(self.label_names) or list(dict.fromkeys(k for c in self.counts.values() for k in c))
        return [str(name) for name in names]

    def describe(self, family: str = "") -> str:
        """One line for people: ``3 classes; train 180 examples, val 60 examples``."""
        group, counted = self.nouns(family)
        totals = ", ".join(f"{split} {sum(per.values()):,} {counted}" for split, per in self.counts.items())
        if not group:
            return totals
        n = len(self.groups())
        return f"{n} {group if n == 1 else plural(group)}; {totals}"

    def imbalance_warning(self, split: str = "train", ratio: float = 5.0) -> str | None:
        """Whether the classes of ``split`` are imbalanced (for a task with classes only)."""
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
    purpose: str = "train"  # why the task is prepared: "train", "resume", "evaluate" or "dry-run" (an estimate, no training)
    # evaluate: the data is not the run's own, so all of it is evaluated (no
    # train/validation split); on its own data a run is evaluated on the same
    # validation split it was trained with
    whole_data: bool = False
    # True once the user asked the run to stop: long work before the loop (a
    # data scan in prepare) asks it now and then and raises StopRequested
    should_stop: Callable[[], bool] = _never
    # How many processes of this run share this machine (the ranks of a run
    # over several GPUs on it; 1 otherwise): a task divides what it takes of
    # the machine (a memory budget, loader workers) by it.
    processes_on_this_machine: int = 1
    _shared: Any = field(default=None, repr=False, compare=False)  # the engine's SharedArrays, in a group

    def shared_array(self, name: str, shape: Sequence[int], dtype: Any, *, fits: bool = True) -> Any:
        """A zero-filled tensor that every process of this run on this machine maps: one copy per machine.

        For what the ranks of a run over several GPUs would otherwise each
        keep (decoded images, a cache of a fixed transform): each rank fills
        its share and reads the others'. Collective: every process calls it
        with the same ``name``, ``shape`` and ``dtype`` in the same order
        (``prepare`` runs the same in every rank), ``fits`` saying whether this
        process would keep that much itself. None when there is nothing to
        share with (one process), when it cannot be made (no shared memory on
        this system, not enough of it) or when a process of this machine said
        it does not fit: keep a private copy, or none, as alone. Store only
        what any rank would store for the same entry, and mark an entry ready
        after writing it (docs/plugins.md).
        """
        return self._shared.make(name, shape, dtype, fits) if self._shared is not None else None

    @property
    def is_cuda(self) -> bool:
        return getattr(self.device, "type", str(self.device)) == "cuda"


@dataclass
class EvalBatch:
    """One evaluation batch: summed loss, the model's outputs, targets, example keys.

    ``outputs`` are what the task's family accumulates: logits over the
    labels (classification, multi-label), predicted values in the target's
    units (regression), or anything a plugin's own accumulator reads.
    ``logits`` is the plugin API 1 name of the same field and still accepted.
    ``loss_sum`` None says the evaluation measures no loss (torchvision's
    detectors give none in evaluation mode): the report's ``loss`` is then
    None, and no surface shows a validation loss, rather than a made-up 0.
    """

    loss_sum: Any  # 0-d tensor: the loss summed over the batch's examples; None: no loss measured
    outputs: Any = None
    targets: Any = None
    keys: Sequence[Any] | None = None
    logits: Any = None

    def __post_init__(self) -> None:
        if self.outputs is None:
            self.outputs = self.logits
        elif self.logits is None:
            self.logits = self.outputs


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
        from trainlab.api.batches import move_to_device

        return move_to_device(batch, ctx.device)

    def train_step(self, model: torch.nn.Module, batch: Any, ctx: RunContext) -> tuple[torch.Tensor, int]:
        """Return (mean loss over the batch, number of examples)."""
        raise NotImplementedError

    def eval_step(self, model: torch.nn.Module, batch: Any, ctx: RunContext) -> EvalBatch:
        raise NotImplementedError

    def loss_weight(self, batch: Any) -> int | None:  # optional
        """What ``train_step``'s mean loss is a mean over in ``batch`` (on the CPU, before ``to_device``).

        None, the default: its examples.  A language model's loss is a mean
        over trained tokens, which differ from batch to batch: returning
        their count makes the engine weigh the micro-batches of an
        accumulated step, and the ranks of a torchrun group, by it, so the
        step's gradient is that of the mean over every trained token of the
        step, however they were batched and spread.
        """
        return None

    def memory_model(self, micro_batch: int) -> dict[str, int] | None:  # optional
        """An analytic estimate of the run's memory at ``micro_batch`` examples a step, in bytes:
        ``weights``, ``gradients``, ``optimizer``, ``activations`` (after ``prepare``).

        The engine measures activations with a real step in a child process;
        where that cannot load or step the model (a 7B model on a small
        machine) it states this estimate instead.  None, the default: no
        estimate then.
        """
        return None

    #: what ``batch_units`` counts, plural ("tokens"): the progress reads "N tokens/s"
    throughput_unit: str = ""

    def batch_units(self, batch: Any) -> int | None:  # optional
        """How many of ``throughput_unit`` ``batch`` trains (on the CPU, before ``to_device``).

        None, the default: the progress shows examples per second only.  A
        language model returns its non-pad tokens, whose count per example
        varies, so the progress also shows tokens per second.
        """
        return None

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

    def load_predictor(self, model_dir: Path, device: Any) -> Callable[[list[str], int], list[Any]]:
        """A function ``(inputs, top_k) -> one prediction per input``.

        A prediction is the family's typed value: ``LabelScores``
        (classification: labels with probabilities, best first),
        ``LabelSet`` (multi-label: the chosen labels and every score) or
        ``Number`` (regression), or any ``Prediction`` a plugin defines.  A
        plugin API 1 predictor's list of ``(label, probability)`` pairs is
        read as ``LabelScores``.  An input that cannot be used (an unreadable
        image) gets a ``DataError`` naming it in its place, rather than
        failing the whole call: the other inputs keep their predictions.

        The engine restores ``load_fitted_state`` before calling this.
        """
        raise NotImplementedError

    # -- evaluation and fitted state (plugin API 2) ------------------------------
    def metric_accumulator(self, split: str) -> Any:  # optional
        """A fresh ``MetricAccumulator`` for one pass over ``split``.

        The family base classes (``ClassificationTask``, ``RegressionTask``,
        ``MultiLabelTask``) return theirs; a task of another family returns
        its own (``trainlab.MetricAccumulator`` documents the protocol).
        None, the default, asks the engine for the built-in accumulator of the
        task's family (a plugin API 1 task that subclassed ``Task``).
        """
        return None

    def calibrate(self, split: str, accumulator: Any) -> None:  # optional
        """Fit post-hoc state on a finished validation pass (multi-label thresholds).

        Called after the final evaluation of ``split`` ("val"), before the
        model is saved; what it fits belongs in ``fitted_state``.
        """

    def fitted_state(self) -> dict[str, Any]:  # optional
        """State fitted on the data that evaluation and prediction need (JSON values).

        Column statistics, a vocabulary, target scaling, thresholds: saved
        with the run (``task_state.json`` in the run folder and in
        ``model/``) and given back through ``load_fitted_state`` on resume,
        ``trainlab eval`` and ``predict``.  Never pickled.  For tensors, return
        a dict under the key ``"tensors"`` of name -> tensor: they are saved as
        safetensors beside it.
        """
        return {}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:  # optional
        """Restore what ``fitted_state`` returned.

        Called before ``prepare`` for ``trainlab eval`` and before
        ``load_predictor`` for ``predict``.  A resumed run prepares its data
        again and fits again (the same training data gives the same state);
        post-hoc state such as thresholds is fitted again by ``calibrate``
        when the run completes.
        """

    def expand_inputs(self, inputs: Iterable[str]) -> list[str]:  # optional
        """Turn command-line inputs (folders, files of texts) into items."""
        return list(inputs)
