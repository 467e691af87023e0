"""Every rank's figures in rank 0's samples, and the control file, without starting a group (fast).

The sampler reads a fake NVML (the hardware boundary, tests/fixtures/fake_nvml.py);
the ranks' records are what ``RankTelemetry.record()`` sends at a gather.
tests/core/engine/test_distributed_recovery.py checks the same through two real gloo ranks.
"""

from __future__ import annotations

from fixtures import fake_nvml

from trainlab.api.callbacks import RunControl
from trainlab.engine.distributed_control import ControlFileWatcher, request
from trainlab.api.events import event_from_json
from trainlab.telemetry import GPU_FIELDS, RANK_FIELDS, RankTelemetry, TelemetrySampler, with_ranks

GiB = fake_nvml.GiB
RTX, A100 = "4090a1b2-0000-1111-2222-333344445555", "a100c3d4-6666-7777-8888-999900001111"  # torch's bare UUIDs


def _record(rank: int, host: str, uuid: str | None, allocated: int | None, gpu: dict | None = None) -> dict:
    record = dict.fromkeys(RANK_FIELDS)
    record.update(rank=rank, host=host, local_rank=rank % 2, device=f"cuda:{rank % 2}" if uuid else "cpu", uuid=uuid,
                  torch_allocated_bytes=allocated, torch_reserved_bytes=None if allocated is None else 2 * allocated, time=1.0)  # fmt: skip
    if gpu is not None:
        record["gpu"] = gpu
    return record


def test_rank_zeros_sample_names_each_gpus_rank_and_adds_another_machines_gpu():
    nvml = fake_nvml.two_gpus()
    with TelemetrySampler(nvml=nvml) as sampler:
        sample = sampler.sample()
    remote = RankTelemetry(2, 0, "cuda:0", nvml=fake_nvml.FakeNvml([fake_nvml.a100(uuid="GPU-a100ffff-0000-0000-0000-000000000002")]))
    remote_gpu = remote.read_gpu("a100ffff-0000-0000-0000-000000000002")
    remote.close()
    records = [_record(0, "node0", RTX, 1 * GiB), _record(1, "node0", A100, 3 * GiB),
               _record(2, "node1", "a100ffff-0000-0000-0000-000000000002", 5 * GiB, remote_gpu)]  # fmt: skip
    merged = with_ranks(sample, records, "node0")
    rtx, a100, other = merged.gpus
    assert (rtx["host"], rtx["rank"], rtx["torch_device"], rtx["torch_allocated_bytes"]) == ("node0", 0, "cuda:0", 1 * GiB)
    assert (a100["host"], a100["rank"], a100["torch_allocated_bytes"], a100["torch_reserved_bytes"]) == ("node0", 1, 3 * GiB, 6 * GiB)
    assert (other["host"], other["rank"], other["torch_allocated_bytes"]) == ("node1", 2, 5 * GiB)
    assert other["name"] == "NVIDIA A100-SXM4-40GB" and other["memory_total_bytes"] == 40 * GiB  # that rank's NVML reading
    assert set(GPU_FIELDS) <= set(other) and other["processes"] is None  # one schema; a rank does not list processes
    assert [entry["rank"] for entry in merged.ranks] == [0, 1, 2] and all(set(e) == set(RANK_FIELDS) for e in merged.ranks)
    again = event_from_json(merged.to_json())  # what metrics.jsonl keeps and the window reads back
    assert again.ranks == merged.ranks and isinstance(again.ranks, tuple) and again.gpus == merged.gpus


def test_cpu_ranks_are_listed_without_making_up_a_gpu():
    with TelemetrySampler(nvml=fake_nvml.FakeNvml([])) as sampler:  # a machine without GPUs
        sample = sampler.sample()
    merged = with_ranks(sample, [_record(0, "node0", None, None), _record(1, "node0", None, None)], "node0")
    assert merged.gpus == () and [e["device"] for e in merged.ranks] == ["cpu", "cpu"]
    assert with_ranks(sample, [], "node0") is sample  # no gather yet: the sample as it was
    old = event_from_json('{"event": "system", "time": 1.0, "gpus": [], "gpu_status": "ok"}')  # a file from before
    assert old.ranks == ()


def test_a_sampler_for_one_gpu_reads_that_gpu_alone():
    nvml = fake_nvml.two_gpus()
    with TelemetrySampler(nvml=nvml, only_uuids=["GPU-" + A100.upper()]) as sampler:
        (gpu,) = sampler.sample().gpus
    assert gpu["name"] == "NVIDIA A100-SXM4-40GB"


def test_words_in_the_control_file_pause_resume_and_stop_the_run(tmp_path):
    (tmp_path / "control").write_text("pause\n")  # left from an earlier session
    control = RunControl()
    watcher = ControlFileWatcher(tmp_path, control, poll=3600)  # checked by hand below
    watcher.start()
    assert not (tmp_path / "control").exists() and not control.paused
    request(tmp_path, "pause")
    assert watcher.check() == "pause" and control.paused
    assert watcher.check() == ""  # acted on once
    request(tmp_path, "resume")
    assert watcher.check() == "resume" and not control.paused
    (tmp_path / "control").write_text("faster please\n")
    assert watcher.check() == "" and not control.stop_requested
    request(tmp_path, "stop")
    assert watcher.check() == "stop" and control.stop_requested and control.stop_reason == "stopped by the user"
    watcher.close()
    assert not (tmp_path / "control").exists()
