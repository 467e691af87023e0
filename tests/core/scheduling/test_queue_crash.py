"""A sweep handed to the queue survives its scheduler killed (SIGKILL) and restarted, and a trial's
runner killed: no trial lost, none repeated, the killed run resumed from its checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.waiting import wait_until
from helpers import FIXTURE_PLUGINS, subprocess_env
from test_queue_cli import wait_for_line
from trainlab.scheduling.queue_store import QueueStore
from trainlab.scheduling.sweep_study import SweepStudy


def scheduler() -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "trainlab", "queue", "run"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )


def starts(run_dir: Path) -> list[bool]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["resumed"] for line in lines if '"started"' in line]


@pytest.mark.long
def test_scheduler_and_runner_killed_mid_sweep_lose_and_repeat_nothing(cli, toy_plugin, toy_csv, tmp_home):
    queued = cli(
        "sweep", "toy-classification", "--data", toy_csv, "--space", "lr=1e-3:0.3:log", "--trials", "2",
        "--sampler", "random", "--study", "night", "--epochs", "1", "--set", "step_delay=0.1",
        "--set", "checkpoint_every_steps=2", "--queue", "--no-start", "--json", extra_path=[FIXTURE_PLUGINS],
    )
    assert queued.returncode == 0, queued.stderr
    sweep = json.loads(queued.stdout)["entry"]["id"]
    store = QueueStore()

    first = scheduler()
    try:
        wait_for_line(first, "(trial 0 of night)")  # launched: its runner is starting on its own
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)

    second = scheduler()
    try:
        line = wait_for_line(second, "(trial 1 of night)")
        trial_1 = int(line.split("started ", 1)[1].split()[0])
        wait_until(lambda: store.entry(trial_1).run_dir and Path(store.entry(trial_1).run_dir, "checkpoints", "last.safetensors").is_file(),
                   "a checkpoint of trial 1")
        os.kill(store.entry(trial_1).runner_pid, signal.SIGKILL)
        wait_for_line(second, f"{trial_1}: its process died; back in line to resume")
        second.wait(180)  # it stops once nothing is queued or running
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(30)

    study = SweepStudy.load("night").summary()
    assert [t["number"] for t in study["trials"]] == [0, 1]
    assert all(t["state"] in ("completed", "pruned") for t in study["trials"]), study["trials"]
    entries = {e.id: e for e in store.entries()}
    assert entries[sweep].state == "done"
    trials = sorted((e for e in entries.values() if e.parent == sweep), key=lambda e: e.trial)
    assert [(e.trial, e.state in ("done", "cancelled")) for e in trials] == [(0, True), (1, True)]
    assert [e.attempts for e in trials] == [1, 2]  # trial 0 ran on through the scheduler's death
    runs = sorted((tmp_home / "runs").iterdir())
    assert len(runs) == 2  # one run per trial
    for entry in trials:
        run_dir = Path(entry.run_dir)
        record = json.loads((run_dir / "run.json").read_text())
        assert record["study"] == {"name": "night", "trial": entry.trial}
        assert starts(run_dir) == ([False, True] if entry.id == trial_1 else [False])
        assert Path(study["trials"][entry.trial]["run_dir"]) == run_dir


def test_a_trial_asked_just_before_the_scheduler_died_is_queued_not_lost(toy_plugin, toy_csv, tmp_path, monkeypatch):
    from test_queue_leases import StandInRunners

    from fixtures import fake_nvml
    from trainlab.scheduling import queue_actions as actions
    from trainlab.scheduling.scheduler import Scheduler
    from trainlab.scheduling.sweep_study import SweepSpec

    monkeypatch.setenv("TRAINLAB_LEASE_DIR", str(tmp_path / "leases"))
    spec = SweepSpec(task="toy-classification", data=str(toy_csv), space=("lr=0.001:0.1:log",), sampler="random", monitor="accuracy")
    study = SweepStudy.open("orphan", spec)
    store = QueueStore()
    sweep = actions.add_sweep(store, study="orphan", spec=spec, trials=2)
    number, params = study.ask()  # what a scheduler does just before it queues the trial, and then it was killed
    runners = StandInRunners()
    try:
        nvml = fake_nvml.FakeNvml([fake_nvml.rtx_4090(base_memory=0), fake_nvml.a100(base_memory=0)])
        Scheduler(store, nvml=nvml, launch=runners, say=lambda text: None).tick()
        trials = store.trials_of(sweep.id)
        assert [(t.trial, t.request["params"], t.state) for t in trials[:1]] == [(number, params, "running")]
        assert len(trials) == 2 and trials[1].trial == number + 1  # the second GPU: the next trial, asked now
        assert len(SweepStudy.load("orphan").trials()) == 2
    finally:
        runners.close()
