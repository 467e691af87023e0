"""The window's data-parallel runs, driven like a user would.

NVML is faked at the hardware boundary (tests/fixtures/fake_nvml): ``import
pynvml`` finds the fake, so the window sees two or four GPUs while torch, in
the processes the window starts, sees none.  So a GPU group is checked as
what the window runs (its argument list) and how the launcher's refusal
reaches the user; the group of two CPU processes is real: the CLI's
launcher, torchrun, two gloo ranks with one thread each, followed by the
window to the end, and stopped in the middle by closing the window.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
psutil = pytest.importorskip("psutil")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QMessageBox, QWidget

from fixtures import fake_nvml
from test_gui_window import RUN_TIMEOUT_MS, prepare, write_toy_csv


def four_gpus() -> fake_nvml.FakeNvml:
    cards = [fake_nvml.rtx_4090(uuid=f"GPU-4090-{n}") for n in range(2)] + [fake_nvml.a100(uuid=f"GPU-a100-{n}") for n in range(2)]
    return fake_nvml.FakeNvml(cards)


def open_window(qtbot, monkeypatch, nvml):
    """The real window, on a machine whose NVML is ``nvml`` (None: this machine's own)."""
    if nvml is not None:
        monkeypatch.setitem(sys.modules, "pynvml", nvml)
    from trainlab_desktop.app import make_application
    from trainlab_desktop.main_window import MainWindow

    make_application(language="en", theme="light")
    win = MainWindow(resolved_theme="light")
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    win.finish_setup()
    win.show_page("train")
    return win


@pytest.fixture
def windows(qtbot, monkeypatch, toy_plugin):
    made = []

    def make(nvml=None):
        made.append(open_window(qtbot, monkeypatch, nvml))
        return made[-1]

    yield make
    for win in made:
        if win.running:
            win.worker.request_stop()
            win.worker.wait(120_000)
        win._shutdown()


@pytest.fixture
def toy_csv(tmp_path):
    return write_toy_csv(tmp_path / "toy.csv")


def type_into(win, name: str, text: str) -> None:
    """Edit a parameter as a user does (an edit, not a programmatic set)."""
    editor = win.params_form.field_editor(name)
    editor.setText(text)


def group_processes(win) -> list:
    """The launcher the window started and everything under it (torchrun, the ranks), while it runs."""
    launcher = psutil.Process(win.worker.process.proc.pid)
    return [launcher, *launcher.children(recursive=True)]


def ranks_of(family: list) -> list:
    launcher = family[0]
    return [p for p in family[1:] if "trainlab" in p.cmdline() and "torch.distributed.run" not in p.cmdline() and p != launcher]


# -- the picker ----------------------------------------------------------------------


def test_two_gpus_show_the_picker_and_both_make_a_group_of_two(qtbot, windows, toy_csv, monkeypatch):
    win = windows(fake_nvml.two_gpus())
    # the launcher's torch must see no GPU on a machine that has some too (the window read its NVML already)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    prepare(qtbot, win, toy_csv)
    picker = win.findChild(QWidget, "gpu_picker")
    assert picker is not None and picker.isVisible()
    boxes = [win.findChild(QCheckBox, f"gpu_{n}") for n in (0, 1)]
    assert "RTX 4090" in boxes[0].text() and "A100" in boxes[1].text() and "24 GB" in boxes[0].text()
    summary = win.findChild(QWidget, "launch_summary")
    assert not summary.isVisible()  # one process until two GPUs are checked

    type_into(win, "batch_size", "16")
    type_into(win, "grad_accum", "2")
    win.findChild(QCheckBox, "gpu_all").click()
    assert all(box.isChecked() for box in boxes)
    assert summary.isVisible() and summary.text() == "World size 2 \u00b7 effective batch 64"
    assert "16 per GPU \u00d7 2 processes \u00d7 2 accumulation" in summary.toolTip()
    assert not win.params_form.field_editor("device").isEnabled()  # the checked GPUs are the devices
    type_into(win, "batch_size", "8")
    assert summary.text() == "World size 2 \u00b7 effective batch 32"

    # Start: the window runs the CLI's launcher with the GPUs, as an argument list
    with qtbot.waitSignal(win.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        win.controls.start_action.trigger()
        command = win.worker.process.command
    assert command[:4] == [sys.executable, "-m", "trainlab", "train"]
    assert command[4] == "toy-classification" and command[command.index("--data") + 1] == str(toy_csv)
    assert command[command.index("--gpus") + 1] == "0,1" and command[-1] == "--json"
    settings = [command[i + 1] for i, arg in enumerate(command) if arg == "--set"]
    assert "batch_size=8" in settings and "grad_accum=2" in settings
    assert not any(s.startswith("device=") for s in settings)  # --gpus chooses the devices
    # torch in the launcher sees no GPU (NVML was faked in the window only): its refusal is what the user reads
    outcome = blocker.args[0]
    assert outcome.status == "failed" and outcome.usage_error
    assert "--gpus 0,1" in outcome.error and "no usable CUDA GPU" in outcome.error
    assert "no usable CUDA GPU" in win.controls.line.text()


def test_four_gpus_two_of_them_or_one_as_the_device(qtbot, windows, toy_csv):
    win = windows(four_gpus())
    prepare(qtbot, win, toy_csv)
    boxes = {n: win.findChild(QCheckBox, f"gpu_{n}") for n in range(4)}
    assert all(box is not None and box.isVisible() for box in boxes.values())
    summary = win.findChild(QWidget, "launch_summary")

    boxes[1].click()  # one GPU: an ordinary run on it
    assert win.params_form.values()["device"] == "cuda:1"
    assert not summary.isVisible() and not win.params_form.launch_choice().group

    boxes[1].click()
    boxes[0].click()
    boxes[2].click()
    choice = win.params_form.launch_choice()
    assert choice.launch_args() == ["--gpus", "0,2"] and choice.telemetry_indices == (0, 2)
    assert summary.text() == "World size 2 \u00b7 effective batch 32"  # the toy task's batch size 16, no accumulation
    assert not win.findChild(QCheckBox, "gpu_all").isChecked()

    # the GPU panel draws the run's GPUs: rank 0 samples the whole machine, the window keeps GPUs 0 and 2
    from trainlab.api.events import SystemSample
    from trainlab.engine.plan import RunRequest
    from trainlab.engine.run_process import RunProcess

    group = RunProcess(RunRequest(task="toy-classification", data=str(toy_csv)), launch_args=choice.launch_args(),
                       shown_gpus=choice.telemetry_indices)
    sample = SystemSample(time=1.0, gpus=tuple({"index": n, "name": f"GPU {n}", "uuid": f"u{n}"} for n in range(4)))
    assert [g["index"] for g in group.view(sample).gpus] == [0, 2]
    win.gpu_panel.add_sample(group.view(sample))
    win.gpu_panel.refresh()
    labels = [s.label for s in win.gpu_panel.history.series.values()]
    assert "0: GPU 0" in labels and "2: GPU 2" in labels and "1: GPU 1" not in labels


def test_one_gpu_keeps_the_form_as_it_was(qtbot, windows):
    win = windows(fake_nvml.FakeNvml([fake_nvml.rtx_4090()]))
    assert win.findChild(QWidget, "gpu_picker") is None
    assert win.findChild(QWidget, "cpu_processes").isHidden()  # advanced settings hidden, and a GPU run


# -- a real group of two CPU processes -------------------------------------------------------


def run_events(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.endswith("}")]


@pytest.mark.long
def test_two_cpu_processes_pause_stop_mid_run_then_continue_to_the_end(qtbot, windows, toy_csv):
    win = windows(fake_nvml.no_gpus())
    prepare(qtbot, win, toy_csv, epochs=3, step_delay=0.2, device="cpu", telemetry_every=0.5)  # 6 steps an epoch at 2 x 16
    spin = win.findChild(QWidget, "cpu_processes")
    assert spin.isHidden()  # an advanced setting
    win.params_form.advanced_toggle.setChecked(True)
    assert spin.isVisible()
    spin.setValue(2)
    summary = win.findChild(QWidget, "launch_summary")
    assert summary.text() == "World size 2 \u00b7 effective batch 32"  # 16 per process x 2
    win.controls.start_action.trigger()
    assert win.worker.process.command[-5:] == ["--nproc-per-node", "2", "--device", "cpu", "--json"]
    qtbot.waitUntil(lambda: win.plots.curves.train.n > 0, timeout=RUN_TIMEOUT_MS)  # rank 0's events, live
    family = group_processes(win)
    assert len(ranks_of(family)) == 2, [p.cmdline() for p in family]

    # Pause reaches every rank (the run folder's control file): they hold after the same
    # step while rank 0 goes on sampling (a sample at least 0.5 s after the last)
    run_dir = Path(win.current_run_dir)
    assert win.controls.pause_action.isEnabled()
    win.controls.pause_action.trigger()
    qtbot.waitUntil(lambda: any(e.get("phase") == "paused" for e in run_events(run_dir)), timeout=RUN_TIMEOUT_MS)
    paused_at = next(i for i, e in enumerate(run_events(run_dir)) if e.get("phase") == "paused")
    qtbot.waitUntil(lambda: sum(e["event"] == "system" for e in run_events(run_dir)[paused_at:]) >= 3, timeout=RUN_TIMEOUT_MS)
    assert not [e for e in run_events(run_dir)[paused_at:] if e["event"] == "train"], "a step was reported while paused"
    assert win.worker.paused
    held = win.plots.curves.train.n
    win.controls.pause_action.trigger()  # resume
    qtbot.waitUntil(lambda: win.plots.curves.train.n > held, timeout=RUN_TIMEOUT_MS)

    with qtbot.waitSignal(win.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        win.controls.stop_action.trigger()
    stopped = blocker.args[0]
    assert stopped.status == "cancelled", stopped
    assert psutil.wait_procs(family, timeout=30)[1] == []  # the launcher, torchrun and both ranks ended
    assert (Path(stopped.run_dir) / "checkpoints" / "last.safetensors").is_file()
    assert "Stopped" in win.controls.line.text() and win.continue_action.isEnabled()

    with qtbot.waitSignal(win.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        win.continue_action.trigger()
        command = win.worker.process.command
    assert command[command.index("--resume") + 1] == stopped.run_dir and "--nproc-per-node" in command
    outcome = blocker.args[0]
    assert outcome.status == "completed", f"{outcome.error}\n{outcome.traceback}"
    assert outcome.run_dir == stopped.run_dir and outcome.epochs == 3
    record = json.loads((Path(outcome.run_dir) / "run.json").read_text())
    assert record["world_size"] == 2 and record["effective_batch"] == 32 and record["launch"]["nproc_per_node"] == 2
    assert [e.epoch for e in win.session.evals if e.split == "val"][-1] == 3
    assert "Finished" in win.controls.line.text()


@pytest.mark.long
def test_closing_the_window_mid_run_stops_every_rank_and_keeps_the_checkpoint(qtbot, windows, toy_csv):
    win = windows()
    prepare(qtbot, win, toy_csv, epochs=200, step_delay=0.02, device="cpu")
    win.params_form.advanced_toggle.setChecked(True)
    win.findChild(QWidget, "cpu_processes").setValue(2)
    win.controls.start_action.trigger()
    qtbot.waitUntil(lambda: win.plots.curves.train.n > 0, timeout=RUN_TIMEOUT_MS)
    group = group_processes(win)
    assert len(ranks_of(group)) == 2, [p.cmdline() for p in group]
    run_dir = Path(win.current_run_dir)

    win.close()
    box = win.close_box
    assert isinstance(box, QMessageBox) and box.isVisible()
    stop_and_quit = next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole)
    with qtbot.waitSignal(win.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        stop_and_quit.click()
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=10_000)
    assert blocker.args[0].status == "cancelled", blocker.args[0]
    gone, alive = psutil.wait_procs(group, timeout=30)
    assert alive == [], [p.cmdline() for p in alive]  # launcher, torchrun and both ranks ended
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "cancelled" and record["world_size"] == 2
    assert (run_dir / "checkpoints" / "last.safetensors").is_file()
