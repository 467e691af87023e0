"""The training worker: its signals, and how it keeps a fast run from flooding the GUI."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from helpers import FIXTURE_PLUGINS

from trainlab.api.events import Finished, Log, Progress, Started, SystemSample, TrainStep
from trainlab.runfolder.tail import read_events


def write_rows(path: Path, rows: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    lines = ["a,b,label"]
    for _ in range(rows):
        label = rng.choice("pq")
        lines.append(f"{(label == 'p') + rng.gauss(0, 0.3):.3f},{rng.gauss(0, 1):.3f},{label}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def toy_plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))


def test_coalescer_keeps_every_event_and_one_batch_in_flight():
    from trainlab_desktop.run.training_thread import EventCoalescer

    coalescer = EventCoalescer()
    first = coalescer.add(Started(run_dir="r", total_steps=10))
    assert first is not None and first.started is not None and first.received == 1
    # while a batch is in flight, nothing else is handed out
    for step in range(1, 6):
        assert coalescer.add(TrainStep(step=step, loss=1.0 / step)) is None
        assert coalescer.add(Progress(step=step, total_steps=10)) is None
    coalescer.add(Log(message="hello"))
    coalescer.add(SystemSample(cpu_percent=5.0))
    rest = coalescer.take(release=True)
    assert [e.step for e in rest.train] == [1, 2, 3, 4, 5]
    assert rest.progress.step == 5  # only the newest progress survives
    assert len(rest.logs) == 1 and len(rest.system) == 1 and rest.received == 12
    # take() found something, so the batch is still in flight until a take finds nothing
    assert coalescer.add(TrainStep(step=6)) is None
    assert coalescer.take(release=True).train[0].step == 6
    assert coalescer.take(release=True) is None
    assert coalescer.add(Finished()) is not None


def test_a_batch_keeps_the_order_the_events_happened_in():
    """The session reduces a batch in order: only a superseded progress event is left out."""
    from trainlab_desktop.run.training_thread import EventCoalescer
    from trainlab.api.events import EvalResult

    coalescer = EventCoalescer()
    coalescer.add(Started(run_dir="r", total_steps=10))
    happened = [
        TrainStep(step=1, loss=1.0),
        Progress(step=1, total_steps=10, phase="train"),
        EvalResult(step=1, loss=0.5),
        Log(message="evaluated"),
        TrainStep(step=2, loss=0.9),
        Progress(step=2, total_steps=10, phase="save"),
        SystemSample(cpu_percent=3.0),
    ]
    for event in happened:
        coalescer.add(event)
    batch = coalescer.take(release=True)
    assert list(batch.events) == [e for e in happened if e is not happened[1]]
    assert batch.received == len(happened) and batch.progress.phase == "save"


def test_worker_coalesces_a_flood_of_events_from_another_thread(qtbot, make_worker):
    """20,000 step events in a burst (a tiny model's rate): the GUI thread
    gets every one of them, in order, in a handful of batches."""
    import time

    from trainlab_desktop.run.training_thread import DRAIN_INTERVAL_MS

    worker = make_worker(request=None)
    received: list[int] = []
    batches = []

    def on_batch(batch):
        batches.append(batch)
        received.extend(e.step for e in batch.train)

    worker.eventBatch.connect(on_batch)
    total = 20_000
    started = time.perf_counter()

    def flood():
        for step in range(1, total + 1):
            worker._on_event(TrainStep(step=step, loss=0.5))
        worker._on_event(Finished())

    thread = threading.Thread(target=flood)
    thread.start()
    qtbot.waitUntil(lambda: len(received) == total and any(b.finished for b in batches), timeout=60_000)
    elapsed = time.perf_counter() - started
    thread.join()
    assert received == list(range(1, total + 1))
    # at most one batch in flight: about one delivery per drain tick
    assert len(batches) <= 2 * elapsed * 1000 / DRAIN_INTERVAL_MS + 4, (len(batches), elapsed)
    assert len(batches) < total / 100


def test_worker_delivers_a_fast_run_in_few_batches(qtbot, make_worker, toy_plugin, tmp_path):
    """A run logging every step: every train event reaches the GUI, coalesced."""
    from trainlab.engine.scripting import RunRequest

    data = write_rows(tmp_path / "rows.csv", 400)
    request = RunRequest(task="toy-classification", data=str(data),
                         params={"epochs": "2", "batch_size": "4", "log_interval": "0", "hidden": "4"})
    worker = make_worker(request)
    states: list[str] = []
    batches = []
    worker.stateChanged.connect(states.append)
    worker.eventBatch.connect(batches.append)
    import time

    started = time.perf_counter()
    with qtbot.waitSignal(worker.runFinished, timeout=120_000) as finished:
        worker.start()
    elapsed = time.perf_counter() - started
    worker.wait(10_000)
    result = finished.args[0]
    assert result.status == "completed", result
    assert states[0] == "running"
    qtbot.waitUntil(lambda: any(b.finished is not None for b in batches), timeout=10_000)

    written = [e for e in read_events(Path(result.run_dir) / "metrics.jsonl") if isinstance(e, TrainStep)]
    delivered = [e for b in batches for e in b.train]
    assert len(written) == result.steps >= 150  # one train event per step
    assert [e.step for e in delivered] == [e.step for e in written]
    assert sum(1 for b in batches if b.started is not None) == 1
    # coalesced: never more than about one delivery per drain tick, however
    # fast the steps come (this machine's speed decides how many that is)
    from trainlab_desktop.run.training_thread import DRAIN_INTERVAL_MS

    assert len(batches) <= 2 * elapsed * 1000 / DRAIN_INTERVAL_MS + 4, (len(batches), elapsed)


def test_worker_reports_a_usage_error_without_a_run(qtbot, make_worker, toy_plugin, tmp_path):
    from trainlab.engine.scripting import RunRequest

    worker = make_worker(RunRequest(task="toy-classification", data=str(tmp_path / "missing.csv")))
    errors = []
    worker.errored.connect(lambda message, tb: errors.append(message))
    with qtbot.waitSignal(worker.runFinished, timeout=60_000) as finished:
        worker.start()
    worker.wait(10_000)
    assert finished.args[0].status == "failed"
    assert finished.args[0].usage_error is True
    assert errors and "missing.csv" in errors[0]


def test_stop_before_the_run_started_cancels_it(qtbot, make_worker, toy_plugin, tmp_path):
    from trainlab.engine.scripting import RunRequest

    data = write_rows(tmp_path / "rows.csv", 100)
    worker = make_worker(RunRequest(task="toy-classification", data=str(data)))
    worker.request_stop()
    with qtbot.waitSignal(worker.runFinished, timeout=60_000) as finished:
        worker.start()
    worker.wait(10_000)
    assert finished.args[0].status == "cancelled"


def test_a_finished_worker_is_freed_as_soon_as_its_last_reference_goes(qtbot, make_worker, toy_plugin, tmp_path):
    """Not later by the cyclic GC, in whichever thread allocates next (the
    next run's worker thread): a parentless worker freed there destroys its
    QThread and drain timer from a foreign thread while the GUI thread still
    runs them, and the process segfaults (it did, 1 run of the GUI tests in 7)."""
    import gc
    import weakref

    from trainlab_desktop.run.training_thread import TrainingWorker
    from trainlab.engine.scripting import RunRequest

    def run_to_the_end(worker):
        with qtbot.waitSignal(worker.runFinished, timeout=60_000) as finished:
            worker.start()
        assert worker.wait(10_000)
        return finished.args[0]

    request = RunRequest(task="toy-classification", data=str(tmp_path / "missing.csv"))
    # A first run imports torch and the engine in its thread; the import
    # machinery's own cycles may keep that thread's frames a while.
    assert run_to_the_end(make_worker(request)).status == "failed"
    qtbot.wait(0)
    collecting = gc.isenabled()
    gc.disable()
    worker = TrainingWorker(request)
    freed = weakref.ref(worker)
    try:
        assert run_to_the_end(worker).status == "failed"  # through plan_run: the engine had the bridge
        qtbot.wait(0)
        worker = None
        assert freed() is None, "the finished worker is left to the cyclic GC"
    finally:
        if freed() is not None:
            freed().deleteLater()  # in the GUI thread, whatever the outcome
        if collecting:
            gc.enable()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the preload is for Linux's dynamic loader")
def test_torch_libraries_load_without_the_gil_before_torch_is_imported():
    """In a fresh process: the big libraries are mapped first, and torch imports and runs on top of them."""
    script = textwrap.dedent(
        """
        import sys
        from trainlab_desktop.run.training_thread import preload_torch_libraries
        preload_torch_libraries()
        maps = open("/proc/self/maps").read()
        assert "torch" not in sys.modules
        assert "libtorch_cpu.so" in maps, "libtorch_cpu.so was not preloaded"
        import torch
        assert float(torch.ones(3).sum()) == 3.0
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_stop_while_the_data_is_prepared_cancels_the_run(qtbot, make_worker, toy_plugin, tmp_path, monkeypatch):
    import time

    import toy_task

    from trainlab import StopRequested
    from trainlab.engine.scripting import RunRequest

    preparing = threading.Event()

    def endless_scan(self, data_path, ctx, label_names=None):
        preparing.set()
        while not ctx.should_stop():
            time.sleep(0.01)  # a scan of a slow network folder
        raise StopRequested(f"the scan of {data_path} was stopped on request")

    monkeypatch.setattr(toy_task.ToyTask, "prepare", endless_scan)
    data = write_rows(tmp_path / "rows.csv", 100)
    worker = make_worker(RunRequest(task="toy-classification", data=str(data), out=str(tmp_path / "run")))
    errors = []
    worker.errored.connect(lambda message, tb: errors.append(message))
    with qtbot.waitSignal(worker.runFinished, timeout=60_000) as finished:
        worker.start()
        qtbot.waitUntil(preparing.is_set, timeout=30_000)
        worker.request_stop()
    worker.wait(10_000)
    assert finished.args[0].status == "cancelled" and "stopped on request" in finished.args[0].error
    assert errors == [] and not (tmp_path / "run").exists()
