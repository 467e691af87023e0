"""Many signal emits of the kinds the app uses must not crash Python.

PySide6 6.12.0 aborts Python 3.11 ("Fatal Python error: bool_dealloc") after
one to two thousand ``Signal.emit()`` calls; pyproject pins ``pyside6<6.12``
for that.  This test decides when the pin can be lifted: it emits 20,000
signals of the worker's vocabulary (str, int, float, list and dict payloads,
bool, an event batch object) across threads (queued) and 20,000 in one
thread (direct), and checks that every emit arrived.  It runs in a
subprocess, so an abort fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    r"""
    import json, sys, threading
    from PySide6.QtCore import QCoreApplication, QObject, QThread, QTimer, Signal

    from trainlab_desktop.run.training_thread import EventBatch, TrainingWorker
    from trainlab.api.events import TrainStep

    TOTAL = int(sys.argv[1])
    app = QCoreApplication([])


    class Emitter(QObject):
        # the plain payload kinds, beside the worker's own signals
        text = Signal(str)
        number = Signal(int)
        real = Signal(float)
        flag = Signal(bool)
        items = Signal(list)
        mapping = Signal(dict)
        pair = Signal(str, str)


    class Counter(QObject):
        def __init__(self):
            super().__init__()
            self.count = 0
            self.bad = []

        def check(self, value, kind):
            self.count += 1
            if not isinstance(value, kind):
                self.bad.append(repr(value))


    def wire(emitter, worker, counter):
        emitter.text.connect(lambda v: counter.check(v, str))
        emitter.number.connect(lambda v: counter.check(v, int))
        emitter.real.connect(lambda v: counter.check(v, float))
        emitter.flag.connect(lambda v: counter.check(v, bool))
        emitter.items.connect(lambda v: counter.check(v, list))
        emitter.mapping.connect(lambda v: counter.check(v, dict))
        emitter.pair.connect(lambda a, b: counter.check(a + b, str))
        worker.stateChanged.connect(lambda v: counter.check(v, str))
        worker.eventBatch.connect(lambda v: counter.check(v, EventBatch))
        worker.errored.connect(lambda a, b: counter.check(a + b, str))
        worker.runFinished.connect(lambda v: counter.check(v, dict))


    def emit_all(emitter, worker, n):
        batch = EventBatch(events=(TrainStep(step=1, loss=0.5),), received=1)
        for i in range(n):
            k = i % 11
            if k == 0: emitter.text.emit("running")
            elif k == 1: emitter.number.emit(i)
            elif k == 2: emitter.real.emit(i * 0.5)
            elif k == 3: emitter.flag.emit(i % 2 == 0)
            elif k == 4: emitter.items.emit([i, "x", 1.5, True])
            elif k == 5: emitter.mapping.emit({"step": i, "loss": 0.1, "best": False})
            elif k == 6: emitter.pair.emit("message", "traceback")
            elif k == 7: worker.stateChanged.emit("paused" if i % 2 else "running")
            elif k == 8: worker.eventBatch.emit(batch)
            elif k == 9: worker.errored.emit("boom", "Traceback ...")
            else: worker.runFinished.emit({"status": "completed", "steps": i, "ok": True})


    result = {}
    # 1. across threads: emitted by a QThread, received (queued) in the main thread
    emitter, worker, counter = Emitter(), TrainingWorker(request=None), Counter()
    wire(emitter, worker, counter)


    class Sender(QThread):
        def run(self):
            emit_all(emitter, worker, TOTAL)


    sender = Sender()
    sender.finished.connect(lambda: None)
    sender.start()

    def poll():
        if counter.count >= TOTAL and sender.isFinished():
            app.quit()

    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(5)
    QTimer.singleShot(120_000, app.quit)
    app.exec()
    sender.wait()
    result["threaded"] = counter.count
    result["threaded_bad"] = counter.bad[:5]

    # 2. in one thread: direct calls
    emitter2, worker2, counter2 = Emitter(), TrainingWorker(request=None), Counter()
    wire(emitter2, worker2, counter2)
    emit_all(emitter2, worker2, TOTAL)
    app.processEvents()
    result["direct"] = counter2.count
    result["direct_bad"] = counter2.bad[:5]
    print("RESULT " + json.dumps(result), flush=True)
    """
)


def test_twenty_thousand_emits_survive_and_arrive(tmp_path):
    script = tmp_path / "emit.py"
    script.write_text(SCRIPT, encoding="utf-8")
    total = 20_000
    proc = subprocess.run(
        [sys.executable, str(script), str(total)], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["threaded"] == total, result
    assert result["direct"] == total, result
    assert not result["threaded_bad"] and not result["direct_bad"], result
