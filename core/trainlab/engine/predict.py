"""Predictions of a trained run (``trainlab predict``, the window's try-it).

``predict`` answers one ``PredictedInput`` per input: the task family's typed
prediction (``trainlab.api.predictions``: ``LabelScores``, ``LabelSet``,
``Number`` or a plugin's own), or the reason that input could not be used.
A plugin API 1 predictor's ``(label, probability)`` lists are read through
``as_prediction``, so old plugins predict as before.

The inputs are checked against the task's declared input (``TaskSpec.input``)
before the model loads: a missing image is reported at once, and an input
that ``expand_inputs`` left as it was but looks like a file, given to a task
that takes texts or rows, is named in a warning (it is read as the text of
its name).  A file the task expanded into its rows is not warned about.

Each answer's ``input`` names what the user gave: the input itself, the
image file a folder gave, the text a file of texts gave, or, for a task of
row inputs, ``FILE row N`` (and the row's own name when ``expand_inputs``
gives an ``InputItem``), never the expanded numbers.

The task's predictor is loaded once and kept: the window asks for one input
at a time and must not reload the model for each.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from trainlab.api.descriptors import TaskSpec
from trainlab.api.errors import RunFailed, UsageError
from trainlab.api.predictions import InputItem, LabelScores, LabelSet, Number, Prediction, as_prediction
from trainlab.engine import context
from trainlab.engine.plugin_calls import plugin_calls
from trainlab.pluginhost.host import registry
from trainlab.runfolder.index import RunDir
from trainlab.system.fileio import verify_safetensors_in

_predictors: dict[tuple[str, str], Any] = {}
_predictors_lock = threading.Lock()

# The prediction type of each built-in family: the CSV columns of a call
# whose inputs all failed still follow the family's form.
FAMILY_PREDICTIONS: dict[str, type[Prediction]] = {"classification": LabelScores, "multilabel": LabelSet, "regression": Number}
# Files people give by mistake to a task that takes texts or rows; the
# suffixes other installed tasks declare are added to these.
COMMON_FILE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".wav", ".mp3", ".flac", ".pdf", ".npy", ".zip")


@dataclass(frozen=True)
class PredictedInput:
    """What a trained model said about one input (after ``expand_inputs``).

    ``prediction`` is None exactly when ``error`` says why this input could
    not be used.  ``family`` is the task's: it keeps the JSON of a failed
    classification input as it was (an empty ``predictions`` list).
    """

    input: str
    prediction: Prediction | None = None
    error: str = ""
    family: str = "classification"

    def to_json(self) -> dict[str, Any]:
        """``{"input", "prediction": {"kind", ...}, "error"?}``; classification
        also keeps ``predictions`` (``[{"label", "probability"}]``) as before
        plugin API 2."""
        data: dict[str, Any] = {"input": self.input}
        body = self.prediction.to_json() if self.prediction is not None else None
        if isinstance(self.prediction, LabelScores) or (self.prediction is None and self.family == "classification"):
            data["predictions"] = list(body["predictions"]) if body else []
        data["prediction"] = {"kind": self.prediction.kind, **body} if body is not None else None
        if self.error:
            data["error"] = self.error
        return data

    # Read like the dicts predict() returned before plugin API 2, so that
    # callers written then (scripts, the window's try-it) keep working.
    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_json().get(key, default)


def open_trained_run(run_dir: str | Path, *, need_model: bool = True) -> RunDir:
    """The run folder of a trained run, or a UsageError saying what is wrong with it.

    ``need_model``: it must hold ``model/`` (prediction); evaluation can use
    the checkpoints of a run that stopped early."""
    path = Path(run_dir).expanduser()
    if not path.exists():
        raise UsageError(f"{path}: no such folder")
    if not path.is_dir():
        raise UsageError(f"{path}: is a file, not a run folder")
    rd = RunDir(path)
    if not rd.exists():
        raise UsageError(f"{rd.path} is not a TrainLab run folder (no run.json)")
    if need_model and not rd.model_dir.is_dir():
        raise UsageError(f"{rd.path}: has no model/ folder (the run did not complete)")
    return rd


def check_inputs(spec: TaskSpec, inputs: Sequence[str], known_suffixes: Iterable[str] = ()) -> list[str]:
    """Warnings about ``inputs`` for ``spec``'s declared input; UsageError for a missing file.

    Cheap (file names and ``stat`` only), so it runs before the model loads.
    ``known_suffixes``: suffixes other tasks read, to recognise a file name
    given to a task that takes texts or rows.
    """
    kind, own = spec.input.kind, {s.lower() for s in spec.input.suffixes}
    warnings: list[str] = []
    for raw in inputs:
        raw = str(raw)
        if raw == "-" or not raw.strip():
            continue
        path = Path(raw).expanduser()
        suffix = path.suffix.lower()
        if kind in ("image", "file"):
            if not path.exists():
                raise UsageError(f"input {raw}: no such file or folder (task {spec.id} takes {_what(spec)})")
            if path.is_file() and own and suffix not in own:
                warnings.append(f"input {raw}: task {spec.id} takes {_what(spec)}; {suffix or 'a file without suffix'} may not be readable")
            continue
        if any(ch.isspace() for ch in raw) or (own and suffix in own):
            continue  # a text, or a file of texts the task reads
        if path.is_dir():
            warnings.append(f"input {raw} is a folder, but task {spec.id} takes {_what(spec)}: it is predicted as the text {raw!r}")
            continue
        if path.is_file() or suffix in {s.lower() for s in (*COMMON_FILE_SUFFIXES, *known_suffixes)}:
            warnings.append(
                f"input {raw} looks like a file, but task {spec.id} takes {_what(spec)}: it is predicted as the text {raw!r}"
            )
    return warnings


def _what(spec: TaskSpec) -> str:
    kind = spec.input.kind
    noun = spec.input.title or {"image": "image files", "text": "texts", "row": "table rows", "file": "files"}.get(kind, kind)
    if spec.input.suffixes and len(spec.input.suffixes) <= 8:  # a long list reads worse than none
        noun += f" ({', '.join(spec.input.suffixes)})" if kind in ("image", "file") else f" (and files {', '.join(spec.input.suffixes)})"
    return noun


def _other_suffixes(task_id: str) -> set[str]:
    return {s.lower() for tid, entry in registry().tasks.items() if tid != task_id for s in entry.spec.input.suffixes}


def predict(
    run_dir: str | Path,
    inputs: Sequence[str],
    top_k: int = 5,
    *,
    device: str = "auto",
    on_warning: Callable[[str], None] | None = None,
) -> list[PredictedInput]:
    """The trained run's typed prediction for each input (paths, texts, rows).

    An input the task could not use gets its ``error`` instead; a missing
    file, a run folder that is not one, or no inputs at all raise UsageError
    before the model loads.  ``on_warning`` hears what ``check_inputs``
    found (default: printed to stderr).
    """
    rd = open_trained_run(run_dir)
    record = rd.read()
    entry = registry().task(str(record.get("task", "")))
    spec = entry.spec
    say = on_warning or (lambda message: print(f"trainlab: warning: {message}", file=sys.stderr))
    inputs = [str(raw) for raw in inputs]
    files = spec.input.kind in ("image", "file")
    if files:  # a missing file is named before the task loads
        for warning in check_inputs(spec, inputs, _other_suffixes(spec.id)):
            say(warning)
    key = (str(rd.path), device)
    with _predictors_lock:  # one predictor in memory (the window's try-it), loaded once
        cached = _predictors.get(key)
        if cached is None:
            _, task, ctx = context.trained_task(rd, device)  # fitted state restored before load_predictor
            expanded = expand_named(task, spec, inputs)  # before the model: bad input is reported without waiting for it
            if not files:
                _warn_unexpanded(spec, inputs, expanded, say)
            verify_safetensors_in(rd.model_dir)  # a damaged file: one line naming it, before the task's own loader
            with plugin_calls(task).call("load_predictor"):
                cached = (task, task.load_predictor(rd.model_dir, ctx.device), threading.Lock())
            _predictors.clear()
            _predictors[key] = cached
        else:
            expanded = None
    task, predictor, lock = cached
    if expanded is None:
        expanded = expand_named(task, spec, inputs)
        if not files:
            _warn_unexpanded(spec, inputs, expanded, say)
    items, names = expanded.items, expanded.names
    with lock, plugin_calls(task).call("predictor"):
        answers = list(predictor(items, int(top_k)))
    if len(answers) != len(items):
        raise RunFailed(f"task {spec.id} (plugin {entry.plugin.name}): its predictor gave {len(answers)} answers for {len(items)} inputs")
    out: list[PredictedInput] = []
    for name, answer in zip(names, answers):
        try:
            value = as_prediction(answer)
        except TypeError as exc:
            raise RunFailed(f"task {spec.id} (plugin {entry.plugin.name}): {exc}") from None
        if isinstance(value, Exception):  # this input only (an unreadable file); see Task.load_predictor
            out.append(PredictedInput(name, None, str(value), spec.family))
        else:
            out.append(PredictedInput(name, value, "", spec.family))
    return out


@dataclass(frozen=True)
class ExpandedInputs:
    """What ``expand_inputs`` made of a call's inputs: the predictor's ``items``,
    the ``names`` its answers are given as ``input``, and the inputs it turned
    into other items (``expanded``: a file of rows, a folder of images)."""

    items: list[Any]
    names: list[str]
    expanded: frozenset[str]


def expand_named(task: Any, spec: TaskSpec, inputs: Sequence[str]) -> ExpandedInputs:
    """The task's ``expand_inputs`` of ``inputs``, each item named by what the user gave.

    A task of row inputs is asked about one input at a time, so that the rows
    of a file are named ``FILE row N`` (the Nth item it gave for that file);
    other tasks are asked once (stdin is read once), their items named by
    themselves: a text, or the image file a folder gave.
    """
    one_by_one = spec.input.kind == "row"
    groups = [[raw] for raw in inputs] if one_by_one else [list(inputs)]
    items: list[Any] = []
    names: list[str] = []
    expanded: set[str] = set()
    for group in groups:
        with plugin_calls(task).call("expand_inputs"):
            got = list(task.expand_inputs(list(group)))
        values = [item.value if isinstance(item, InputItem) else item for item in got]
        own = [item.name if isinstance(item, InputItem) else "" for item in got]
        if one_by_one and [str(v) for v in values] != group:
            raw = group[0]
            expanded.add(raw)
            names += [f"{raw} row {n}" + (f" ({label})" if label else "") for n, label in enumerate(own, start=1)]
        else:
            names += [label or str(value) for value, label in zip(values, own)]
            expanded |= set(group) - {str(v) for v in values}
        items += values
    if not items:
        raise UsageError("nothing to predict: no inputs")
    return ExpandedInputs(items, names, frozenset(expanded))


def _warn_unexpanded(spec: TaskSpec, inputs: Sequence[str], expanded: ExpandedInputs, say: Callable[[str], None]) -> None:
    """``check_inputs``' warnings about the inputs the task left as they were (read as texts or rows)."""
    for warning in check_inputs(spec, [raw for raw in inputs if raw not in expanded.expanded], _other_suffixes(spec.id)):
        say(warning)


def prediction_type(family: str, results: Sequence[PredictedInput]) -> type[Prediction] | None:
    """The prediction class whose CSV columns a call's results are written in."""
    found = next((type(r.prediction) for r in results if r.prediction is not None), None)
    return found or FAMILY_PREDICTIONS.get(family)
