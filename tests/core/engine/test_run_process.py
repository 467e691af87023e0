"""A run in another process (``RunProcess``): one child process, a group, and the one ``--set`` formatter.

The one-process runs are real: ``python -m trainlab.engine.child_main`` training
the toy task.  The group's launcher (``trainlab train ... --gpus``, torchrun,
the ranks) is replaced here by a stand-in at the process boundary that keeps
its side of the protocol (rank 0's metrics.jsonl, the run folder's control
file, the outcome as one JSON line on stdout) and, like a rank on Windows,
never hears SIGTERM; tests/desktop/test_gui_distributed.py runs a real group
of two CPU ranks through the same class.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from pathlib import Path

import pytest
from helpers import FIXTURE_PLUGINS, subprocess_env
from trainlab.api.assignments import format_value, set_arguments
from trainlab.api.callbacks import RunControl
from trainlab.api.descriptors import Param
from trainlab.api.events import EvalResult, Progress, Started, TrainStep
from trainlab.api.params import parse_assignments
from trainlab.engine.outcome import EXIT_INTERRUPTED
from trainlab.engine.plan import RunRequest
from trainlab.engine.run_process import RunProcess, run_command
from trainlab.runfolder.index import RunDir
from trainlab.scheduling.execution import execute_on_gpus

# -- the one formatter ---------------------------------------------------------------------

ROUND_TRIPS = [
    (Param("lr", "float", 1e-3, "x"), 0.30000000000000004),
    (Param("lr", "float", 1e-3, "x"), 1e-05),
    (Param("lr", "float", 1e-3, "x"), 2.0),
    (Param("lr", "float", 1e-3, "x"), 123456789.123),
    (Param("lr", "float", 1e-3, "x"), 6.02e23),
    (Param("epochs", "int", 1, "x"), 12),
    (Param("class_weighting", "bool", False, "x"), True),
    (Param("class_weighting", "bool", False, "x"), False),
    (Param("text_column", "str", "text", "x"), "review text, cleaned"),
    (Param("text_column", "str", "text", "x"), "a=b =c"),
    (Param("model", "choice", "small", "x", choices=("small",), open_choices=True), "/models/my model"),
]


@pytest.mark.parametrize("param, value", ROUND_TRIPS, ids=lambda v: repr(v) if not isinstance(v, Param) else v.type)
def test_a_value_written_for_set_reads_back_as_the_same_value(param, value):
    arguments = set_arguments({param.name: value})
    assert arguments[0] == "--set"
    read = param.coerce(parse_assignments(arguments[1::2])[param.name])
    assert read == value and type(read) is type(value)


def test_the_formatter_writes_exact_floats_plain_whole_numbers_and_lists_as_commas():
    assert format_value(0.1 + 0.2) == "0.30000000000000004"  # never a rounded %g
    assert (format_value(2.0), format_value(1e-3), format_value(1e-05)) == ("2", "0.001", "1e-05")
    assert format_value(["q_proj", "v_proj"]) == "q_proj,v_proj" and format_value((0.5, True)) == "0.5,true"
    text = Param("target_modules", "str", "", "x")
    assert text.coerce(parse_assignments(set_arguments({"target_modules": ["q_proj", "v_proj"]})[1::2])["target_modules"]) == "q_proj,v_proj"
    assert set_arguments({"a": None, "device": "cuda", "b": 1}, skip=("device",)) == ["--set", "b=1"]
    assert math.isinf(float(format_value(math.inf)))


def test_a_groups_command_line_carries_every_value_through_the_formatter(tmp_path):
    request = RunRequest(task="toy-classification", data="/data/my rows.csv", params={"lr": 0.1 + 0.2, "device": "cuda:1", "note": "a, b"},
                         remembered={"epochs": 3, "class_weighting": True})  # fmt: skip
    command = run_command(request, ["--gpus", "0,2"], str(tmp_path / "run"), python="python")
    assert command[:5] == ["python", "-m", "trainlab", "train", "toy-classification"]
    assert command[command.index("--data") + 1] == "/data/my rows.csv" and command[-3:] == ["--gpus", "0,2", "--json"]
    sets = parse_assignments(command[i + 1] for i, arg in enumerate(command) if arg == "--set")
    assert sets == {"epochs": "3", "class_weighting": "true", "lr": "0.30000000000000004", "note": "a, b"}  # no device: --gpus chooses


# -- one process: a real child ------------------------------------------------------------


def toy(tmp_path, toy_csv, name, **params) -> RunProcess:
    params = {"epochs": "2", "step_delay": "0.02", "log_interval": "0", **params}
    request = RunRequest(task="toy-classification", data=str(toy_csv), out=str(tmp_path / name), params=params)
    return RunProcess(request, env=subprocess_env([FIXTURE_PLUGINS]))


def test_one_process_pauses_without_ending_resumes_and_stops_on_request(toy_plugin, toy_csv, tmp_path):
    process = toy(tmp_path, toy_csv, "run")
    process.start()
    seen: list = []
    for event in process.events():
        seen.append(event)
        if isinstance(event, TrainStep) and event.step == 2 and not process.stopping and "paused" not in seen:
            process.pause()
        elif isinstance(event, Progress) and event.phase == "paused" and "paused" not in seen:
            seen.append("paused")
            assert process.returncode is None  # held, not ended
            held_at = event.step
            process.resume()
        elif "paused" in seen and isinstance(event, TrainStep) and event.step == held_at + 2:
            process.stop()  # a word on the child's stdin, which the run reads: no signal
    code = process.wait(60)
    outcome = process.result(code)
    assert "paused" in seen, process.stderr_tail()
    assert [e.step for e in seen if isinstance(e, TrainStep) and e.step > held_at][:1] == [held_at + 1]  # went on from where it held
    assert code == EXIT_INTERRUPTED  # it ended itself (a signal would read -15)
    assert outcome.status == "cancelled" and outcome.error == "stopped by the user", outcome
    assert outcome.run_dir == process.run_dir == str(tmp_path / "run") and outcome.steps < 24
    assert RunDir(outcome.run_dir).last_checkpoint.is_file()


def test_a_pause_asked_before_the_start_holds_the_run_until_resumed(toy_plugin, toy_csv, tmp_path):
    process = toy(tmp_path, toy_csv, "early", epochs="1")
    process.pause()
    control = RunControl()
    events: list = []

    def follow(event):
        events.append(event)
        if isinstance(event, Progress) and event.phase == "paused":
            process.resume()

    outcome = process.run(on_event=follow, control=control)
    assert outcome.status == "completed", outcome
    paused = next(i for i, e in enumerate(events) if isinstance(e, Progress) and e.phase == "paused")
    assert any(isinstance(e, Started) for e in events[:paused])
    assert not [e for e in events[:paused] if isinstance(e, TrainStep) and e.step > 1]  # held at its start


def test_a_stop_before_the_start_starts_nothing(toy_plugin, toy_csv, tmp_path):
    process = toy(tmp_path, toy_csv, "never")
    process.stop()
    outcome = process.run()
    assert process.proc is None and outcome.status == "cancelled" and not (tmp_path / "never").exists()


def test_a_control_is_relayed_to_the_child(toy_plugin, toy_csv, tmp_path):
    process = toy(tmp_path, toy_csv, "relayed")
    control = RunControl()

    def follow(event):
        if isinstance(event, TrainStep) and event.step == 3:
            control.request_stop("cancelled in the queue")

    outcome = process.run(on_event=follow, control=control)
    assert outcome.status == "cancelled" and outcome.steps < 24 and process.returncode == EXIT_INTERRUPTED


# -- a group: its launcher stood in for ------------------------------------------------------

LAUNCHER = """#!{python}
# the launcher's side of the protocol, as rank 0 keeps it; SIGTERM never reaches it (a rank on Windows)
import json, os, signal, sys, time
from trainlab.api.events import EvalResult, Finished, Progress, Started, TrainStep
from trainlab.api.params import parse_assignments
signal.signal(signal.SIGTERM, signal.SIG_IGN)
argv = sys.argv[1:]
out = argv[argv.index("--out") + 1]
os.makedirs(out, exist_ok=True)
sets = parse_assignments(argv[i + 1] for i, a in enumerate(argv) if a == "--set")
with open(os.path.join(out, "argv.json"), "w") as f:
    json.dump({{"argv": argv, "sets": sets}}, f)
control = os.path.join(out, "control")
def emit(event):
    with open(os.path.join(out, "metrics.jsonl"), "a") as f:
        f.write(event.to_json() + "\\n")
emit(Started(run_dir=out, task="toy-classification", total_steps=10_000))
step, paused = 0, False
while True:
    word = open(control).read().strip() if os.path.exists(control) else ""
    if word == "stop":
        emit(Finished(step=step, status="cancelled", error="stopped by the user", run_dir=out, task="toy-classification"))
        print(json.dumps({{"run_dir": out, "status": "cancelled", "task": "toy-classification", "steps": step,
                          "error": "stopped by the user"}}))
        sys.exit(130)
    if word == "pause" and not paused:
        paused = True
        emit(Progress(step=step, phase="paused"))
    elif word == "resume":
        paused = False
    if not paused:
        step += 1
        emit(TrainStep(step=step, loss=1.0))
        if step % 5 == 0:
            emit(EvalResult(step=step, split="val", metrics={{"accuracy": 0.5}}))
    time.sleep(0.02)
"""


@pytest.fixture
def stand_in_launcher(tmp_path):
    path = tmp_path / "launcher"
    path.write_text(LAUNCHER.format(python=sys.executable), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


pytestmark_posix = pytest.mark.skipif(os.name != "posix", reason="the stand-in launcher is a script with a #! line")


@pytestmark_posix
def test_a_group_pauses_and_stops_through_its_control_file_without_a_signal(stand_in_launcher, tmp_path):
    request = RunRequest(task="toy-classification", data="rows.csv", out=str(tmp_path / "group"), params={"lr": 0.25, "note": "x, y"})
    process = RunProcess(request, launch_args=["--gpus", "0,1"], python=stand_in_launcher, grace=60)
    process.start()
    stage, held_at, stopped_at = "running", None, None
    for event in process.events():  # read in batches from metrics.jsonl: the stages go by what the run said
        if stage == "running" and isinstance(event, TrainStep) and event.step >= 3:
            stage = "pausing"
            process.pause()
        elif stage == "pausing" and isinstance(event, Progress) and event.phase == "paused":
            stage, held_at = "paused", event.step
            assert process.returncode is None  # held, not ended
            process.resume()
        elif stage == "paused" and isinstance(event, TrainStep):
            assert event.step == held_at + 1  # went on from where it held
            stage, stopped_at = "stopping", event.step
            process.stop()  # the control file: SIGTERM would be ignored, so only the file can end it
    code = process.wait(30)
    outcome = process.result(code)
    assert code == EXIT_INTERRUPTED and outcome.status == "cancelled" and outcome.error == "stopped by the user", process.stderr_tail()
    assert stage == "stopping" and outcome.run_dir == str(tmp_path / "group") and outcome.steps >= stopped_at
    said = json.loads(Path(tmp_path / "group" / "argv.json").read_text())
    assert said["sets"] == {"lr": "0.25", "note": "x, y"} and said["argv"][-3:] == ["--gpus", "0,1", "--json"]


@pytestmark_posix
def test_the_queue_runs_a_multi_gpu_entry_through_the_group_runner(stand_in_launcher, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", stand_in_launcher)  # what RunProcess starts: the launcher stand-in
    control = RunControl()
    evals: list = []

    def on_eval(event: EvalResult) -> None:
        evals.append(event)
        control.request_stop("cancelled in the queue")

    request = RunRequest(task="toy-classification", data="rows.csv", out=str(tmp_path / "queued"), params={"device": "cuda"})
    outcome = execute_on_gpus(request, 2, control=control, on_eval=on_eval, record_extra={"study": {"name": "s", "trial": 1}},
                              env={"PATH": os.environ.get("PATH", "")})  # fmt: skip
    assert evals and evals[0].step == 5
    assert outcome.status == "cancelled" and outcome.error == "cancelled in the queue"
    said = json.loads(Path(tmp_path / "queued" / "argv.json").read_text())
    assert said["argv"][-3:] == ["--gpus", "2", "--json"] and "device" not in said["sets"]
