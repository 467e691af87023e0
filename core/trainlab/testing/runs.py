"""The checks that train: a few CPU steps of one task on tiny data, through the real engine.

``TaskKit`` runs what the checks need once and shares it between them: a
straight run (watched for stray writes and sockets), the same run again (same
seed), and a run stopped in mid-training then resumed.  Every run executes
in the kit's own TrainLab home with a plugin host that holds only the plugin
under test (``active``), so a check never reads the user's runs or plugins.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import trainlab.pluginhost.host as host
from trainlab.api.callbacks import Callback
from trainlab.api.errors import DataError, UsageError
from trainlab.api.events import EVENT_TYPES, EvalResult, Finished, Log, Started, TrainStep, event_from_dict
from trainlab.api.predictions import LabelScores, LabelSet, Number
from trainlab.engine import context
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
        request = RunRequest(task=self.task_id, data=self.data, params=values, out=str(self.workdir / "runs" / name))
        with self.active():
            return run_training(request, callbacks=list(callbacks))

    def _completed(self, outcome, what: str):
        if outcome.status != RunStatus.COMPLETED:
            where = f" in {outcome.failure.get('method')}" if outcome.failure else ""
            raise CheckFailed(f"{what} ended {outcome.status}{where}: {outcome.error}")
        return outcome

    # -- the runs the checks share --------------------------------------------------
    def straight(self):
        if "straight" not in self._runs:
            with watching() as watch:
                outcome = self.train("straight")
            self._watch = watch
            self._runs["straight"] = self._completed(outcome, "the tiny run")
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
        inputs = list(self._predict_inputs() if self._predict_inputs else default_predict_inputs(self.spec, self.data))
        if not inputs:
            raise CheckSkipped("no inputs to predict (implement predict_inputs)")
        run = self.straight()
        with self.active():
            results = predict(run.run_dir, inputs, top_k=3, device="cpu", on_warning=lambda message: None)
        failed = [f"{r.input}: {r.error}" for r in results if r.prediction is None]
        if failed:
            raise CheckFailed("no prediction for " + "; ".join(failed[:3]))
        expected = {"classification": LabelScores, "regression": Number, "multilabel": LabelSet}.get(self.spec.family)
        if expected is not None:
            wrong = [type(r.prediction).__name__ for r in results if not isinstance(r.prediction, expected)]
            if wrong:
                raise CheckFailed(f"a {self.spec.family} task predicts {expected.__name__}, got {wrong[0]}")
        return f"{len(results)} prediction(s): {results[0].prediction.summary()}"

    def resume_is_exact(self) -> str:
        straight = self.straight()
        stopped, stop_at = self.stopped()
        if stopped.status != RunStatus.CANCELLED:
            raise CheckFailed(f"the run stopped at step {stop_at} ended {stopped.status}: {stopped.error}")
        with self.active():
            resumed = self._completed(run_training(RunRequest(resume=stopped.run_dir)), "the resumed run")
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


def default_predict_inputs(spec, data: str) -> list[str]:
    """One input of the task's declared kind: a text, or an image file found in the data."""
    if spec.input.kind == "text":
        return ["a short text to classify", "another one"]
    if spec.input.kind == "image":
        root = Path(data)
        images = sorted(p for p in (root.rglob("*") if root.is_dir() else []) if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
        return [str(p) for p in images[:2]]
    return []
