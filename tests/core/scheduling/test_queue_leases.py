"""GPU leases and the scheduler's choice of GPUs, on the fake NVML with two GPUs, one of them busy.

The runs are stood in for by real processes that do what the queue's
runner does before it trains (lease the GPUs it was given, claim its
entry) and then wait for the test: the locks, their holders, a holder's
death and the scheduler's decisions are all real; only the GPUs are fake
(this machine has none).  The multi-GPU run itself (``trainlab train
--gpus k`` through torchrun) is another engineer's work in progress: here the
scheduler's part of it is checked, the k leases and what it launches.
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from fixtures import fake_nvml
from trainlab.api.errors import UsageError
from trainlab.engine.plan import RunRequest
from trainlab.scheduling import queue_actions as actions
from trainlab.engine.run_process import RunProcess
from trainlab.scheduling.execution import visible_devices_env
from trainlab.engine.gpu_leases import LeaseTaken, gpu_states, hold_device_lease, holder_of, read_gpus
from trainlab.scheduling.scheduler import Scheduler
from trainlab.scheduling.queue_store import DONE, QUEUED, RUNNING, QueueStore

MiB, GiB = fake_nvml.MiB, fake_nvml.GiB

# What a runner does before it trains: lease its GPUs, claim its entry; then it
# waits for orders on stdin ("child": start a process that trains on the first
# GPU, as a torchrun rank would; "done": end the entry).
STAND_IN_RUNNER = r"""
import os, subprocess, sys
import psutil
from trainlab.engine.gpu_leases import acquire
from trainlab.scheduling.queue_store import DONE, QueueStore

entry_id, token, devices = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
store = QueueStore()
lease = acquire(devices, f"stand-in runner of entry {entry_id}")
assert store.claim(entry_id, token, os.getpid(), psutil.Process().create_time()) is not None
print("holding", flush=True)
RANK = "import sys; from types import SimpleNamespace; from trainlab.engine.gpu_leases import hold_device_lease; " \
       "hold_device_lease(SimpleNamespace(type='cuda', index=0), uuid_of=lambda i: sys.argv[1]); print('covered')"
for line in sys.stdin:
    if line.strip() == "child":
        out = subprocess.run([sys.executable, "-c", RANK, devices[0]], capture_output=True, text=True)
        print(out.stdout.strip() or out.stderr.strip().splitlines()[-1], flush=True)
    elif line.strip() == "done":
        store.finish(entry_id, token, DONE, "finished by the test")
        break
"""


class StandInRunners:
    """The scheduler's ``launch``: one stand-in runner process per launched entry."""

    def __init__(self):
        self.processes: dict[int, subprocess.Popen] = {}
        self.devices: dict[int, list[str]] = {}

    def __call__(self, entry, token, devices):
        proc = subprocess.Popen(
            [sys.executable, "-c", STAND_IN_RUNNER, str(entry.id), token, ",".join(devices)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert proc.stdout.readline().strip() == "holding"
        self.processes[entry.id], self.devices[entry.id] = proc, list(devices)
        return proc.pid

    def tell(self, entry_id: int, order: str) -> str:
        proc = self.processes[entry_id]
        proc.stdin.write(order + "\n")
        proc.stdin.flush()
        if order == "done":
            proc.wait(30)
            return ""
        return proc.stdout.readline().strip()

    def kill(self, entry_id: int) -> None:
        self.processes[entry_id].kill()
        self.processes[entry_id].wait(30)

    def close(self):
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)


@pytest.fixture
def leases(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINLAB_LEASE_DIR", str(tmp_path / "leases"))
    monkeypatch.delenv("TRAINLAB_GPU_BUSY_MIB", raising=False)


@pytest.fixture
def runners():
    launched = StandInRunners()
    yield launched
    launched.close()


def states(store):
    return {e.id: e.state for e in store.entries()}


def test_one_run_per_gpu_a_busy_gpu_skipped_k_gpus_for_a_multi_gpu_run(leases, runners, toy_plugin, toy_csv):
    rtx = fake_nvml.rtx_4090(base_memory=300 * MiB)  # a display server's worth: free
    a100 = fake_nvml.a100(base_memory=10 * GiB)  # someone else's job outside TrainLab: busy
    nvml = fake_nvml.FakeNvml([rtx, a100])
    store = QueueStore()
    said: list[str] = []
    scheduler = Scheduler(store, nvml=nvml, launch=runners, say=said.append)
    first = actions.add_run(store, task="toy-classification", data=str(toy_csv))
    second = actions.add_run(store, task="toy-classification", data=str(toy_csv))

    scheduler.tick()
    assert runners.devices == {first.id: [rtx.uuid]}  # one run per GPU; the busy A100 is skipped
    assert states(store) == {first.id: RUNNING, second.id: QUEUED}
    gpus, _ = read_gpus(nvml)
    rtx_state, a100_state = gpu_states(gpus)
    assert rtx_state.holder.pid == runners.processes[first.id].pid and not a100_state.free
    assert "busy: 10.0 GiB in use outside TrainLab" == a100_state.why_not()

    a100.base_memory = 300 * MiB  # the other job ended
    scheduler.tick()
    assert runners.devices[second.id] == [a100.uuid]
    both = actions.add_run(store, task="toy-classification", data=str(toy_csv), gpus=2)
    scheduler.tick()
    assert states(store)[both.id] == QUEUED  # both GPUs leased

    runners.kill(first.id)  # a runner that dies releases its lease with it
    assert holder_of(rtx.uuid) is None
    scheduler.tick()
    assert any(f"{first.id}: its process died; back in line" in line for line in said)
    assert runners.devices[first.id] == [rtx.uuid] and store.entry(first.id).attempts == 2  # first in line, started again
    assert states(store)[both.id] == QUEUED

    runners.tell(first.id, "done")
    scheduler.tick()
    assert states(store)[both.id] == QUEUED  # one GPU free of the two it needs: it waits, nothing overtakes
    runners.tell(second.id, "done")
    scheduler.tick()
    assert runners.devices[both.id] == [rtx.uuid, a100.uuid]
    assert states(store) == {first.id: DONE, second.id: DONE, both.id: RUNNING}

    # What the runner of a 2-GPU entry starts: train's own torchrun launch, on exactly the leased GPUs.
    request = RunRequest(task="toy-classification", data=str(toy_csv), params={"lr": 0.01}, out="/runs/a")
    argv = RunProcess(request, launch_args=["--gpus", "2"], python="python").command
    assert argv == ["python", "-m", "trainlab", "train", "toy-classification", "--data", str(toy_csv), "--out", "/runs/a",
                    "--set", "lr=0.01", "--gpus", "2", "--json"]
    assert visible_devices_env(runners.devices[both.id], {})["CUDA_VISIBLE_DEVICES"] == f"{rtx.uuid},{a100.uuid}"

    # A run started directly on a leased GPU (Start, trainlab train --device cuda:0) is refused, naming the
    # holder; a process the holder started (a torchrun rank) trains on it under the holder's lease.
    with pytest.raises(LeaseTaken, match=rf"leased by process {runners.processes[both.id].pid} .*trainlab queue add"):
        hold_device_lease(SimpleNamespace(type="cuda", index=0), uuid_of=lambda index: rtx.uuid)
    assert runners.tell(both.id, "child") == "covered"
    runners.tell(both.id, "done")
    direct = hold_device_lease(SimpleNamespace(type="cuda", index=0), uuid_of=lambda index: rtx.uuid)
    assert holder_of(rtx.uuid).pid == os.getpid()  # free again: the direct run holds it now
    direct.on_run_end(None)
    assert holder_of(rtx.uuid) is None


def test_an_entry_asking_more_gpus_than_the_machine_has_fails_naming_both(leases, runners, toy_plugin, toy_csv):
    store = QueueStore()
    entry = actions.add_run(store, task="toy-classification", data=str(toy_csv), gpus=3)
    Scheduler(store, nvml=fake_nvml.two_gpus(), launch=runners, say=lambda text: None).tick()
    assert (store.entry(entry.id).state, store.entry(entry.id).reason) == ("failed", "asks for 3 GPUs; this machine has 2")
    assert not runners.processes


def test_the_queue_chooses_the_gpu(toy_plugin, toy_csv):
    with pytest.raises(UsageError, match="the queue chooses the GPU; give --gpus K"):
        actions.add_run(QueueStore(), task="toy-classification", data=str(toy_csv), params={"device": "cuda:1"})
    assert actions.add_run(QueueStore(), task="toy-classification", data=str(toy_csv), params={"device": "cpu"}).gpus == 0
