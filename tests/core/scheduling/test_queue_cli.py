"""trainlab queue through the real CLI in subprocesses: add, list, move, cancel, pause, continue, and a
paused run resumed from its checkpoint by the real scheduler (on this machine's CPU, one run at a time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.waiting import wait_until
from helpers import FIXTURE_PLUGINS, one_json_line, subprocess_env
from trainlab.scheduling.scheduler import scheduler_holder
from trainlab.scheduling.queue_store import QueueStore


def queue(cli, *args):
    return cli("queue", *args, "--json", extra_path=[FIXTURE_PLUGINS])


def listed(cli) -> list[tuple[int, str]]:
    return [(e["id"], e["state"]) for e in one_json_line(queue(cli, "list"))["entries"]]


def test_add_list_move_pause_continue_cancel(cli, toy_csv):
    ids = [one_json_line(queue(cli, "add", "toy-classification", "--data", toy_csv, "--epochs", "1", "--no-start"))["entry"]["id"] for _ in range(2)]
    cpu = one_json_line(queue(cli, "add", "toy-classification", "--data", toy_csv, "--device", "cpu", "--set", "hidden=8", "--no-start"))["entry"]
    first, second, third = ids + [cpu["id"]]
    assert cpu["gpus"] == 0 and cpu["request"]["params"] == {"hidden": "8"}
    assert cpu["request"]["data"] == str(Path(toy_csv).resolve())
    assert listed(cli) == [(first, "queued"), (second, "queued"), (third, "queued")]

    moved = one_json_line(queue(cli, "move", str(third), "1"))
    assert moved["waiting"] == [third, first, second]
    assert [e for e, _ in listed(cli)] == [third, first, second]

    assert one_json_line(queue(cli, "pause", str(first)))["entry"]["state"] == "paused"
    assert one_json_line(queue(cli, "cancel", str(second)))["entry"]["state"] == "cancelled"
    assert listed(cli) == [(third, "queued"), (first, "paused"), (second, "cancelled")]
    assert one_json_line(queue(cli, "continue", str(first), "--no-start"))["entry"]["state"] == "queued"
    assert queue(cli, "list").returncode == 0 and "the queue is empty" not in cli("queue", "list", extra_path=[FIXTURE_PLUGINS]).stdout

    for args, message in (
        (("move", str(second), "1"), f"queue move {second}: only a queued or paused entry can move (this one is cancelled)"),
        (("continue", str(third), "--no-start"), f"queue continue {third}: only a paused entry continues (this one is queued)"),
        (("cancel", "99"), "queue: no entry 99 (see `trainlab queue list`)"),
        (("add", "toy-classification", "--data", str(toy_csv), "--set", "hiden=8", "--no-start"), "unknown parameter 'hiden'"),
        (("add", "toy-classification", "--data", str(toy_csv), "--device", "cuda:1", "--no-start"), "the queue chooses the GPU"),
        (("add", "toy-classification", "--data", "missing.csv", "--no-start"), "--data missing.csv: no such file or folder"),
    ):
        result = queue(cli, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in one_json_line(result)["error"]
    assert len(listed(cli)) == 3  # nothing added by the refused ones


@pytest.mark.long
def test_pause_checkpoints_frees_the_cpu_and_continue_resumes(cli, toy_csv, tmp_home):
    slow = one_json_line(queue(cli, "add", "toy-classification", "--data", toy_csv, "--epochs", "2",
                    "--set", "step_delay=0.1", "--set", "checkpoint_every_steps=1", "--no-start"))["entry"]["id"]
    quick = one_json_line(queue(cli, "add", "toy-classification", "--data", toy_csv, "--epochs", "1", "--no-start"))["entry"]["id"]
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "trainlab", "queue", "run"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )
    store = QueueStore()
    try:
        assert f"started {slow} (toy-classification) on the CPU" in wait_for_line(scheduler, f"started {slow} ")
        checkpoint = wait_until(lambda: _checkpoint(store, slow), "the slow run's first checkpoint")
        assert store.entry(quick).state == "queued"  # one CPU run at a time
        answer = one_json_line(queue(cli, "pause", str(slow)))
        assert answer["entry"]["requested"] == "pause"
        assert f"started {quick} " in wait_for_line(scheduler, f"started {quick} ")  # the pause freed the CPU
        paused = store.entry(slow)
        assert (paused.state, paused.reason) == ("paused", "paused")
        record = json.loads((checkpoint.parent.parent / "run.json").read_text())
        assert (record["status"], record["error"]) == ("cancelled", "paused") and checkpoint.is_file()

        assert one_json_line(queue(cli, "continue", str(slow)))["entry"]["state"] == "queued"
        wait_until(lambda: store.entry(slow).state == "done", "the paused run to resume and finish", timeout=120)
        scheduler.wait(120)
        wait_until(lambda: scheduler_holder() is None, "the scheduler to stop once the queue is empty")
    finally:
        if scheduler.poll() is None:
            scheduler.kill()
            scheduler.wait(30)
    run_dir = Path(store.entry(slow).run_dir)
    assert run_dir == checkpoint.parent.parent
    starts = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if '"started"' in line]
    assert [s["resumed"] for s in starts] == [False, True]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    assert store.entry(quick).state == "done"
    best = json.loads((run_dir / "run.json").read_text())["best"]
    listing = cli("queue", "list", extra_path=[FIXTURE_PLUGINS]).stdout  # as `train` and `runs` print the metric
    assert f"best accuracy {best['value']:.1%}" in listing and f"{best['value']:.4g}  " not in listing
    header = listing.splitlines()[0]
    assert header.split()[:6] == ["ID", "STATE", "WHAT", "ON", "DEVICES", "ADDED"]
    assert listing.splitlines()[1].index(" done ") == header.index(" STATE ")  # the columns under their names


def test_a_machine_without_a_gpu_is_said_to_run_the_queue_on_the_cpu(cli, toy_csv, tmp_path):
    fake = tmp_path / "no_gpu"
    fake.mkdir()  # an NVML that finds no GPU, whatever this machine has
    (fake / "pynvml.py").write_text(
        "class NVMLError(Exception):\n    value = 0\n"
        "def nvmlInit():\n    pass\n"
        "def nvmlShutdown():\n    pass\n"
        "def nvmlDeviceGetCount():\n    return 0\n"
    )
    added = cli("queue", "add", "toy-classification", "--data", toy_csv, "--no-start", extra_path=[fake, FIXTURE_PLUGINS])
    assert added.returncode == 0, added.stderr
    assert "(the CPU: no GPU on this machine)" in added.stdout and "GPU)" not in added.stdout
    row = next(line for line in cli("queue", "list", extra_path=[fake, FIXTURE_PLUGINS]).stdout.splitlines() if "toy-classification" in line)
    assert " cpu " in row and "GPU" not in row, row


def test_a_run_on_the_cpu_says_cpu_once_in_the_list():
    from trainlab.cli.queue_commands import _line
    from trainlab.scheduling.queue_store import QueueEntry

    running = QueueEntry(id=1, kind="run", state="running", position=1, request={"task": "text-classification"},
                         gpus=1, run_dir="/tmp/q1", added=1.0)  # fmt: skip
    assert _line(running, machine_gpus=0).split().count("cpu") == 1  # no GPU here: the CPU runs it
    assert _line(running, machine_gpus=2).split().count("cpu") == 1  # given no GPU yet: the device column
    assert "1 GPU" in _line(running, machine_gpus=2)


def _checkpoint(store: QueueStore, entry_id: int) -> Path | None:
    run_dir = store.entry(entry_id).run_dir
    path = Path(run_dir, "checkpoints", "last.safetensors") if run_dir else None
    return path if path is not None and path.is_file() else None


def wait_for_line(proc: subprocess.Popen, text: str) -> str:
    """The scheduler's next stderr line holding ``text`` (its log, read as it is written)."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if text in line:
            return line
    raise AssertionError(f"the scheduler ended without saying {text!r}: {''.join(seen)}")
