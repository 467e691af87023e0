"""The checks that train: a few CPU steps of one task on tiny data, through the real engine.

``TaskKit`` runs what the checks need once and shares it between them: a
straight run (watched for stray writes and sockets), the same run again (same
seed), and a run stopped in mid-training then resumed.  Every run executes
in the kit's own TrainLab home with a plugin host that holds only the plugin
under test (``active``), so a check never reads the user's runs or plugins.

A run that fails is reported once, by the first check that needs it, naming
the plugin's method that raised; every later check that needs it is skipped
with that reason (not failed again with a misleading message of its own).
The data is fingerprinted around every run: a task that writes its own data
is named by ``data_left_unchanged``, and the checks that compare two runs
are skipped rather than blaming the batch order.
"""

from __future__ import annotations

import csv
import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import trainlab.pluginhost.host as host
from trainlab.api.callbacks import Callback
from trainlab.api.details import ExampleRows
from trainlab.api.errors import DataError, UsageError
from trainlab.api.events import EVENT_TYPES, EvalResult, Finished, Log, Started, TrainStep, event_from_dict
from trainlab.api.families import accumulator_for
from trainlab.api.predictions import LabelScores, LabelSet, Number, Prediction
from trainlab.engine import context
from trainlab.engine.checkpoint import load_model_weights, read_checkpoint
from trainlab.engine.distributed import _state_bytes, _state_from_bytes
from trainlab.engine.loaders import SplitLoaders
from trainlab.engine.predict import predict
from trainlab.engine.prepare import prepare_task
from trainlab.engine.scripting import RunRequest, run_training
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.status import RunStatus
from trainlab.runfolder.tail import read_events
from trainlab.system import paths
from trainlab.system.fileio import verify_safetensors
from trainlab.testing.checks import CheckFailed, CheckSkipped
from trainlab.testing.target import kit_environment
from trainlab.testing.watch import watching

# Exact, quick and in this process: the CPU in fp32 (reproducible), loss read
# back every step (the loss curve has a point per step), no telemetry thread.
KIT_PARAMS: dict[str, Any] = {
    "device": "cpu",
    "precision": "fp32",
    "seed": 1234,
    "epochs": 2,
    "final_weights": "last",
    "keep_checkpoints": "last+best",
    "telemetry_every": 0,
    "log_interval": 0,
}


class _StopAtStep(Callback):
    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, state):
        if state.step == self.step:
            state.control.request_stop("the plugin kit's stop check")


def _weights(run_dir: str | Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    path = Path(run_dir) / "checkpoints" / "last.safetensors"
    if not path.is_file():
        raise CheckFailed(f"{path}: no last checkpoint")
    return {k: v for k, v in load_file(str(path)).items() if k.startswith("model.")}


def _differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    import torch

    if a.keys() != b.keys():
        return [f"different tensors: {sorted(set(a) ^ set(b))[:5]}"]
    return [key for key in a if not torch.equal(a[key], b[key])]


class TaskKit:
    """One task of the plugin under test, on tiny data, in its own home."""

    def __init__(
        self,
        task_id: str,
        data: str | Path,
        workdir: str | Path,
        registry: Any,
        *,
        params: Mapping[str, Any] | None = None,
        predict_inputs: Callable[[], Sequence[str]] | None = None,
        bad_data: Callable[[], Path] | None = None,
        home: str | Path | None = None,
    ):
        self.task_id = task_id
        self.data = str(data)
        self.workdir = Path(workdir)
        self.home = Path(home) if home else self.workdir / "home"
        self.registry = registry
        self.params = {**KIT_PARAMS, **dict(params or {})}
        self._predict_inputs = predict_inputs
        self._bad_data = bad_data
        self._runs: dict[str, Any] = {}
        self._watch = None
        self._reported: set[str] = set()  # runs whose failure a check has reported already
        self._data_print: dict[str, tuple[int, int]] | None = None
        self._data_changed: list[str] = []  # data files a run changed

    @property
    def spec(self):
        return self.registry.task(self.task_id).spec

    @contextmanager
    def active(self) -> Iterator[None]:
        """This kit's home and plugin host for TrainLab, for the duration of a check."""
        saved_registry = host._registry
        with kit_environment(self.home):
            host._registry = self.registry
            try:
                yield
            finally:
                host._registry = saved_registry

    def train(self, name: str, callbacks: Sequence[Callback] = (), **params: Any):
        values = {k: str(v) for k, v in {**self.params, **params}.items()}
        out = self.workdir / "runs" / name
        if out.exists():  # a check that trains again: a new folder, never "already holds a run"
            out = out.with_name(f"{name}-{sum(1 for _ in out.parent.glob(name + '*')) + 1}")
        request = RunRequest(task=self.task_id, data=self.data, params=values, out=str(out))
        if self._data_print is None:
            self._data_print = data_fingerprint(self.data)
        with self.active():
            try:
                return run_training(request, callbacks=list(callbacks))
            finally:
                self._note_data_changes()

    def _note_data_changes(self) -> None:
        changed = changed_files(self._data_print or {}, data_fingerprint(self.data))
        self._data_changed += [path for path in changed if path not in self._data_changed]

    def _completed(self, outcome, what: str, key: str = ""):
        """``outcome`` if it completed; else the failure, once (later callers skip with its reason)."""
        if outcome.status == RunStatus.COMPLETED:
            return outcome
        method = outcome.failure.get("method") if outcome.failure else ""
        where = f" in {method}" if method and method not in outcome.error else ""
        if key and key in self._reported:
            raise CheckSkipped(f"needs {what}, which ended {outcome.status}{where} (reported once, by the first check that needed it): {outcome.error}")
        self._reported.add(key)
        raise CheckFailed(f"{what} ended {outcome.status}{where}: {outcome.error}")

    # -- the runs the checks share --------------------------------------------------
    def straight(self):
        return self._completed(self._straight_outcome(), "the tiny run", "straight")

    def _straight_outcome(self):
        """The straight run's outcome, made once, whether it completed or not."""
        if "straight" not in self._runs:
            with watching() as watch:
                outcome = self.train("straight")
            self._watch = watch
            self._runs["straight"] = outcome
        return self._runs["straight"]

    def stopped(self):
        """A run stopped after one step of its second epoch (or its first step, for one-step epochs)."""
        if "stopped" not in self._runs:
            straight = self.straight()
            per_epoch = max(1, straight.steps // max(1, straight.epochs))
            stop_at = per_epoch + 1 if per_epoch > 1 and straight.epochs > 1 else 1
            outcome = self.train("stopped", callbacks=[_StopAtStep(stop_at)])
            self._runs["stopped"] = (outcome, stop_at)
        return self._runs["stopped"]

    def _same_data(self, what: str) -> None:
        """Skip a comparison of two runs when the data changed under them (data_left_unchanged says who)."""
        if self._data_changed:
            raise CheckSkipped(
                f"{what} compares runs, but the data changed while the kit's runs read it ({', '.join(self._data_changed[:3])}): "
                "runs on different data differ whatever the task does (data_left_unchanged names the method)"
            )

    # -- the checks ------------------------------------------------------------------
    def bad_data_raises_data_error(self) -> str:
        bad = Path(self._bad_data() if self._bad_data else default_bad_data(self.spec, self.workdir / "bad"))
        with self.active():
            try:
                prepare_task(self.task_id, str(bad), {k: str(v) for k, v in self.params.items()})
            except DataError as exc:
                if bad.name not in str(exc):
                    raise CheckFailed(f"DataError does not name the file {bad.name}: {exc}") from None
                return f"DataError: {exc}"
            except UsageError as exc:
                raise CheckFailed(f"{bad}: raised UsageError, not trainlab.DataError: {exc}") from None
            except Exception as exc:  # noqa: BLE001
                raise CheckFailed(f"{bad}: prepare() raised no trainlab.DataError naming the file: {exc}") from None
        raise CheckFailed(f"{bad}: prepare() accepted data that is not of this task (expected a DataError naming the file)")

    def data_left_unchanged(self) -> str:
        """``prepare`` and the runs read the data and never write it."""
        before = data_fingerprint(self.data)
        if self._data_print is None:
            self._data_print = before
        with self.active():
            try:
                prepare_task(self.task_id, self.data, {k: str(v) for k, v in self.params.items()})
            except Exception as exc:  # noqa: BLE001 - the tiny run reports a prepare that fails
                raise CheckSkipped(f"prepare() failed on the tiny data ({type(exc).__name__}: {exc}); the tiny run reports it") from None
        changed = changed_files(before, data_fingerprint(self.data))
        if changed:
            self._data_changed += [path for path in changed if path not in self._data_changed]
            raise CheckFailed(
                f"prepare() changed the data it was given: {', '.join(changed[:3])} (expected it to read the data and leave it as it is: "
                "keep what it derives in memory, under trainlab.cache_dir() or in the run folder)"
            )
        if self._straight_outcome().status != RunStatus.COMPLETED:  # the checks that need the run report it
            return f"{len(before)} data file(s) unchanged by prepare(); the tiny run did not complete"
        if self._data_changed:
            raise CheckFailed(
                f"a run changed its data: {', '.join(self._data_changed[:3])} (prepare() alone did not; "
                "expected every method to read the data and leave it as it is)"
            )
        return f"{len(before)} data file(s) unchanged by prepare() and the runs"

    def loss_finite_and_falls(self) -> str:
        run = self.straight()
        losses = [e.loss for e in read_events(Path(run.run_dir) / "metrics.jsonl") if isinstance(e, TrainStep)]
        if len(losses) < 2:
            raise CheckFailed(f"{len(losses)} train event(s): the tiny data needs at least two steps (more rows or a smaller batch_size)")
        bad = [i for i, loss in enumerate(losses) if not math.isfinite(loss)]
        if bad:
            raise CheckFailed(f"loss not finite at train event(s) {bad[:5]}: {[losses[i] for i in bad[:5]]}")
        k = max(1, len(losses) // 3)
        first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
        if not last < first:
            raise CheckFailed(
                f"the loss did not fall on the tiny learnable data: mean of the first {k} steps {first:.4g}, of the last {k} {last:.4g}"
            )
        return f"loss {first:.4g} -> {last:.4g} over {len(losses)} steps"

    def events_match_schema(self) -> str:
        import json

        run = self.straight()
        path = Path(run.run_dir) / "metrics.jsonl"
        events, problems = [], []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            try:
                data = json.loads(line)
                if data.get("event") not in EVENT_TYPES:
                    raise ValueError(f"unknown event {data.get('event')!r}")
                for key, kind in (("time", (int, float)), ("step", int), ("epoch", int)):
                    if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
                        raise ValueError(f"{key} is {data.get(key)!r}")
                events.append(event_from_dict(data))
            except (ValueError, TypeError) as exc:
                problems.append(f"line {number}: {exc}")
        run_events = [e for e in events if not isinstance(e, Log)]  # what planning said comes first
        if not run_events or not isinstance(run_events[0], Started) or not isinstance(run_events[-1], Finished):
            problems.append("the run's events do not start with 'started' and end with 'finished'")
        steps = [e.step for e in events if isinstance(e, TrainStep)]
        if steps != sorted(steps):
            problems.append(f"train steps out of order: {steps}")
        declared = [m.name for m in self.spec.metric_specs()]
        evals = [e for e in events if isinstance(e, EvalResult)]
        if not evals:
            problems.append("no eval event")
        for event in evals:
            missing = [name for name in declared if not isinstance(event.metrics.get(name), (int, float))]
            if missing:
                problems.append(f"eval at step {event.step} lacks declared metric(s) {missing}")
        if problems:
            raise CheckFailed(f"{path}: " + "; ".join(problems[:5]))
        return f"{len(events)} events, {len(evals)} evaluations with {', '.join(declared)}"

    def saved_model_loads(self) -> str:
        run = self.straight()
        rd = RunDir(run.run_dir)
        model_dir = rd.model_dir
        files = sorted(p for p in model_dir.rglob("*") if p.is_file()) if model_dir.is_dir() else []
        if not files:
            raise CheckFailed(f"{model_dir}: save_model wrote nothing")
        for path in files:
            if path.suffix == ".safetensors":
                verify_safetensors(path)
        with self.active():
            _, task, ctx = context.trained_task(rd, "cpu")
            try:
                model = task.load_trained_model(model_dir, ctx)
            except NotImplementedError as exc:
                raise CheckFailed(f"load_trained_model: {exc} (implement it, or set supports_export = False)") from None
        saved = {f"model.{k}": v for k, v in model.state_dict().items()}
        trained = _weights(run.run_dir)
        common = set(saved) & set(trained)
        if not common:
            raise CheckFailed(f"the model load_trained_model rebuilt from {model_dir} shares no tensor name with the trained one")
        different = _differences({k: saved[k] for k in common}, {k: trained[k] for k in common})
        if different:
            raise CheckFailed(f"the model loaded from {model_dir} differs from the trained weights in {different[:5]}")
        return f"{len(files)} file(s) in model/, {len(common)} tensors as trained"

    def predicts(self) -> str:
        inputs = list(self._predict_inputs() if self._predict_inputs else default_predict_inputs(self.spec, self.data, self.params))
        from_evaluation = not inputs and not self._predict_inputs
        if from_evaluation:  # a family whose data rows are no inputs (series): the inputs its evaluation listed
            inputs = evaluated_inputs(self.spec, self.straight().run_dir)
        if not inputs:
            raise CheckSkipped(
                f"no inputs to predict for a task of input kind {self.spec.input.kind!r} in its data: give them with "
                "predict_inputs(task_id, data) of the plugin's PluginConformance class, or name them in the input_column of an ExampleRows detail the evaluation reports"
            )
        run = self.straight()
        with self.active():
            rd = RunDir(run.run_dir)
            record, task, ctx = context.trained_task(rd, "cpu")
            with _plugin_method("expand_inputs"):
                items = list(task.expand_inputs(inputs))
            with _plugin_method("load_predictor"):
                predictor = task.load_predictor(rd.model_dir, ctx.device)
            with _plugin_method("the predictor load_predictor returned"):
                answers = list(predictor(items, 3))
        if len(answers) != len(items):
            raise CheckFailed(f"load_predictor's predictor returned {len(answers)} answer(s) for {len(items)} input(s); expected one per input")
        legacy = str(record.get("plugin_api", "") or self._api_version()).startswith("1.")
        for item, answer in zip(items, answers):
            problem = answer_problem(self.spec, answer, dict(record.get("parameters") or {}), legacy)
            if problem:
                raise CheckFailed(f"load_predictor's predictor, given {_short(item)}, returned {problem}")
        with self.active():
            results = predict(run.run_dir, inputs, top_k=3, device="cpu", on_warning=lambda message: None)
        failed = [f"{r.input}: {r.error}" for r in results if r.prediction is None]
        if failed:
            raise CheckFailed("no prediction for " + "; ".join(failed[:3]))
        source = "the evaluation's example rows" if from_evaluation else "the data"
        where = "" if self._predict_inputs else f" (inputs from {source}: {_short(inputs[0])})"
        return f"{len(results)} prediction(s): {results[0].prediction.summary()}{where}"

    def _api_version(self) -> str:
        entry = self.registry.tasks.get(self.task_id)
        return getattr(getattr(entry, "plugin", None), "api_version", "") or ""

    def accumulator_merges(self) -> str:
        """The validation pass split across two simulated ranks and merged gives what the whole pass gives."""
        run = self.straight()
        with self.active():
            rd = RunDir(run.run_dir)
            record, task, ctx = context.trained_task(rd, "cpu")
            ctx.purpose = "evaluate"
            with _plugin_method("prepare"):
                task.prepare(self.data, ctx, label_names=record.get("label_names"))
            splits = list(task.splits())
            split = "val" if "val" in splits else splits[-1]
            with _plugin_method("build_model"):
                model = task.prepare_model(task.build_model(ctx), ctx)
            tensors, plain = read_checkpoint(rd.last_checkpoint)
            load_model_weights(model, tensors, plain)
            model.eval()
            n = len(task.dataset(split))
            if n < 2:
                raise CheckSkipped(f"the {split} split of the tiny data holds {n} example(s): two ranks need two")
            order = task.batch_order(split, 0, max(1, -(-n // 4)), int(ctx.params["seed"]))
            loaders = SplitLoaders(task, ctx)
            try:
                import torch

                with torch.inference_mode(), _plugin_method("eval_step"):
                    batches = [[task.eval_step(model, task.to_device(batch, ctx), ctx)] for batch in loaders.loader(split, order, 0)]
            finally:
                loaders.close()

            def fresh():
                with _plugin_method(f"metric_accumulator({split!r})"):
                    made = task.metric_accumulator(split)
                return made if made is not None else accumulator_for(task, split)

            problem = merge_problem(fresh, batches, split)
        if problem:
            raise CheckFailed(problem)
        return f"the {split} split over two simulated ranks, merged: the same report as in one pass ({len(batches)} batches)"

    def resume_is_exact(self) -> str:
        straight = self.straight()
        stopped, stop_at = self.stopped()
        if stopped.status != RunStatus.CANCELLED:
            raise CheckFailed(f"the run stopped at step {stop_at} ended {stopped.status}: {stopped.error}")
        with self.active():
            try:
                resumed = self._completed(run_training(RunRequest(resume=stopped.run_dir)), "the resumed run")
            finally:
                self._note_data_changes()
        self._same_data("resume_is_exact")
        if resumed.steps != straight.steps:
            raise CheckFailed(f"the resumed run took {resumed.steps} steps in all, the straight one {straight.steps}")
        different = _differences(_weights(straight.run_dir), _weights(resumed.run_dir))
        if different:
            raise CheckFailed(
                f"stopped at step {stop_at} and resumed, the weights differ from an uninterrupted run in {different[:5]}: "
                "keep batch_order a function of (seed, epoch), and draw randomness from generators the engine seeds"
            )
        return f"stopped at step {stop_at}, resumed: the same weights as an uninterrupted run"

    def same_seed_same_result(self) -> str:
        straight = self.straight()
        again = self._completed(self.train("again"), "the second run")
        self._same_data("same_seed_same_result")
        different = _differences(_weights(straight.run_dir), _weights(again.run_dir))
        if different:
            raise CheckFailed(f"two runs with seed {self.params['seed']} end with different weights in {different[:5]}")
        return f"seed {self.params['seed']} twice: the same weights"

    def stop_within_one_step(self) -> str:
        stopped, stop_at = self.stopped()
        if stopped.status != RunStatus.CANCELLED or stopped.steps != stop_at:
            raise CheckFailed(f"stop requested at step {stop_at}: the run ended {stopped.status} after {stopped.steps} steps")
        return f"stop at step {stop_at}: cancelled after {stopped.steps}"

    def writes_only_its_run_folder(self) -> str:
        run = self.straight()
        with self.active():
            allowed = [Path(run.run_dir), paths.cache_dir(), paths.model_store_dir(), paths.log_dir(), paths.config_dir()]
            index = paths.index_path()
        # the run index and the list of --out folders it knows are TrainLab's own bookkeeping beside it
        own = (index.name, RunStore.OTHER_FOLDERS)
        stray = [p for p in self._watch.outside(allowed) if not (Path(p).parent == index.parent and Path(p).name.startswith(own))]
        if stray:
            raise CheckFailed(f"a run wrote outside its run folder and TrainLab's caches: {stray[:5]}")
        return f"{len(self._watch.written)} path(s) written, all in the run folder or TrainLab's caches"

    def opens_no_socket(self) -> str:
        self.straight()
        if self._watch.sockets:
            raise CheckFailed(f"a run opened network sockets: {self._watch.sockets[:5]} (TrainLab runs offline)")
        return "no network socket"


def default_bad_data(spec, folder: Path) -> Path:
    """Data no task of this kind can use: a table of nonsense, or a folder holding only a broken file."""
    folder.mkdir(parents=True, exist_ok=True)
    if spec.data_kind == "folder":
        root = folder / "bad-data"
        (root / "nothing").mkdir(parents=True, exist_ok=True)
        (root / "nothing" / "broken.png").write_bytes(b"not an image at all")
        return root
    path = folder / "bad-data.csv"
    path.write_text("no,column,you,expect\n\x01,\x02,,\n", encoding="utf-8")
    return path


def default_predict_inputs(spec, data: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """Two inputs of the task's declared kind: texts, image files found in the data, or rows of the data."""
    if spec.input.kind == "text":
        return ["a short text to classify", "another one"]
    if spec.input.kind == "image":
        root = Path(data)
        images = sorted(p for p in (root.rglob("*") if root.is_dir() else []) if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
        return [str(p) for p in images[:2]]
    if spec.input.kind == "row":
        return rows_of(spec, data, params or {})
    return []


def evaluated_inputs(spec, run_dir: str, count: int = 2) -> list[str]:
    """Inputs the run's evaluation listed with its example rows (``ExampleRows.input_column``)."""
    try:
        report = RunDir(run_dir).read_eval().primary
    except UsageError:
        return []
    if report is None:
        return []
    details = report.view_details(spec.detail_specs())
    return [item for d in details if isinstance(d, ExampleRows) for item, _ in d.example_inputs()][:count]


# Columns that hold what a row is labelled with, not what a model is given.
TARGET_COLUMNS = ("label", "labels", "target", "targets", "y")


def rows_of(spec, data: str, params: Mapping[str, Any], count: int = 2) -> list[str]:
    """The first rows of a CSV in the data, as the comma-separated values a row input takes.

    The columns are the task's declared ``InputSpec.columns``; without them,
    every column but the ones a task parameter names (``target_column``,
    ``label_column``) and the usual target names.
    """
    path = Path(data)
    if path.is_dir():
        path = next(iter(sorted(path.rglob("*.csv"))), path)
    if not path.is_file() or path.suffix.lower() not in (".csv", ".tsv"):
        return []
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        rows = [row for _, row in zip(range(count), reader)]
        header = list(reader.fieldnames or [])
    declared = [str(getattr(c, "name", c)) for c in getattr(spec.input, "columns", ()) or ()]
    if declared:
        columns = [c for c in declared if c in header]
        if not columns:  # the data's rows are not inputs (a series in long form)
            return []
    else:
        values = {**{p.name: p.default for p in spec.params}, **dict(spec.defaults), **dict(params)}
        named = {str(v) for k, v in values.items() if isinstance(v, str) and k.endswith(("column", "columns"))}
        columns = [c for c in header if c not in named and c.lower() not in TARGET_COLUMNS]
    return [",".join(str(row.get(c, "")) for c in columns) for row in rows]


def data_fingerprint(data: str | Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of the data file, or of every file under the data folder."""
    root = Path(data)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    prints = {}
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        prints[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return prints


def changed_files(before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]]) -> list[str]:
    """Files written, added or removed between two fingerprints."""
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


@contextmanager
def _plugin_method(method: str) -> Iterator[None]:
    """A call into the plugin: what it raises is a failure that names ``method``."""
    try:
        yield
    except (CheckFailed, CheckSkipped):
        raise
    except NotImplementedError as exc:
        raise CheckFailed(f"{method} is not implemented: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the plugin's bug is the check's verdict
        raise CheckFailed(f"{method} raised {type(exc).__name__}: {exc}") from None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _describe(value: Any) -> str:
    """What a plugin returned, for a message: its type and the start of its value."""
    if isinstance(value, (list, tuple)):
        kinds = sorted({type(v).__name__ for v in value})
        head = ", ".join(f"{v:.4g}" if isinstance(v, float) else _short(v, 20) for v in list(value)[:3])
        return f"a {type(value).__name__} of {len(value)} {'/'.join(kinds) or 'items'} [{head}{', ...' if len(value) > 3 else ''}]"
    return f"{type(value).__name__} {_short(value)}"


FAMILY_PREDICTIONS = {"classification": LabelScores, "regression": Number, "multilabel": LabelSet}


def answer_problem(spec, answer: Any, params: Mapping[str, Any], legacy: bool = False) -> str:
    """What is wrong with one answer of a task's predictor, or "" (the caller names the input)."""
    if isinstance(answer, Exception):
        return ""  # an input it could not use, in its place (Task.load_predictor)
    expected = FAMILY_PREDICTIONS.get(spec.family)
    wanted = f"{expected.__name__}" if expected else f"a Prediction subclass of family {spec.family!r}"
    if not isinstance(answer, Prediction):
        pairs = isinstance(answer, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in answer)
        if pairs and (legacy or spec.family == "classification"):
            return ""  # (label, probability) pairs, plugin API 1's form: read as LabelScores
        if spec.family == "regression" and isinstance(answer, (int, float)) and not isinstance(answer, bool):
            return ""  # a bare number is read as Number
        return f"{_describe(answer)}; expected one trainlab Prediction per input ({wanted}), or a DataError for an input it cannot use"
    if expected is not None and not isinstance(answer, expected):
        return f"{type(answer).__name__}; a {spec.family} task predicts {expected.__name__}"
    output = getattr(spec, "output", None)
    if output is None:
        return ""
    if output.kind and answer.kind != output.kind:
        return f"{type(answer).__name__} of kind {answer.kind!r}; TaskSpec.output declares kind {output.kind!r}"
    if output.field:
        missing = object()
        values = getattr(answer, output.field, missing)
        if values is missing:
            return f"{type(answer).__name__} without the field {output.field!r} that TaskSpec.output names"
        if output.shape:
            try:
                lengths = output.lengths(params)
            except (KeyError, TypeError, ValueError):
                return ""  # a parameter the run did not record: nothing to compare with
            actual = shape_of(values)[: len(lengths)]
            if actual != lengths:
                got = f"length {actual[0]}" if len(actual) == 1 else f"shape {actual}"
                want = f"length {lengths[0]}" if len(lengths) == 1 else f"shape {lengths}"
                return (
                    f"{type(answer).__name__}.{output.field} of {got}; TaskSpec.output declares shape "
                    f"{output.describe(params)}: expected {want}"
                )
    return ""


def shape_of(value: Any) -> tuple[int, ...]:
    """The lengths of nested sequences (or an array's shape); () for a scalar."""
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (list, tuple)):
        return tuple(int(n) for n in shape)
    if isinstance(value, (list, tuple)):
        return (len(value), *(shape_of(value[0]) if value else ()))
    return ()


def merge_problem(fresh: Callable[[], Any], batches: Sequence[Sequence[Any]], split: str = "val") -> str:
    """"" when one pass over ``batches`` and the same batches over two ranks, merged, report the same.

    ``batches``: the ``EvalBatch`` pieces of each loader batch.  The two
    simulated ranks get whole batches in turn, as a run over several GPUs
    deals them; each rank's ``state()`` travels as it does between processes
    (tensors as safetensors, the rest as JSON) and a fresh accumulator merges
    them in rank order.
    """
    whole, ranks = fresh(), [fresh(), fresh()]
    name = type(whole).__name__
    with _plugin_method(f"{name}.update"):
        for index, pieces in enumerate(batches):
            for piece in pieces:
                whole.update(piece)
                ranks[index % 2].update(piece)
    merged = fresh()
    for rank in ranks:
        with _plugin_method(f"{name}.state"):
            state = rank.state()
        try:
            state = _state_from_bytes(_state_bytes(state))
        except Exception as exc:  # noqa: BLE001
            return (
                f"{name}.state() returned what cannot travel between processes ({type(exc).__name__}: {exc}); "
                "expected a dict of tensors and JSON values"
            )
        with _plugin_method(f"{name}.merge"):
            merged.merge(state)
    with _plugin_method(f"{name}.compute"):
        one, two = whole.compute(), merged.compute()
    differences = []
    for key in ("samples", "loss"):
        if not _same(one.get(key), two.get(key)):
            differences.append((key, one.get(key), two.get(key)))
    metrics_one, metrics_two = dict(one.get("metrics") or {}), dict(two.get("metrics") or {})
    for key in sorted(set(metrics_one) | set(metrics_two)):
        if not _same(metrics_one.get(key), metrics_two.get(key)):
            differences.append((key, metrics_one.get(key), metrics_two.get(key)))
    if not differences:
        return ""
    def said(i: int) -> str:
        return ", ".join(f"{d[0]} {_num(d[i])}" for d in differences[:3])

    return (
        f"{name}.merge(state()) loses what another process evaluated: the {split} split in one pass gives {said(1)}; "
        f"dealt out to two simulated ranks and merged it gives {said(2)}: expected the same "
        "(merge must add every example of the other state, as a run over several GPUs needs)"
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)
    return a == b


def _num(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)
