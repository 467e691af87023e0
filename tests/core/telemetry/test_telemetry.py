"""The telemetry sampler, driven by a fake NVML (the hardware boundary)."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading

import pytest
from fixtures import fake_nvml

from trainlab.api.errors import UsageError
from trainlab.api.events import SystemSample, event_from_json
from trainlab.telemetry import GPU_FIELDS, TelemetrySampler, check_interval

GiB = fake_nvml.GiB


def samples(sampler: TelemetrySampler, nvml: fake_nvml.FakeNvml, count: int) -> list[SystemSample]:
    """``count`` samples, the fake's clock advancing one tick between them."""
    taken = []
    for _ in range(count):
        taken.append(sampler.sample())
        nvml.advance()
    return taken


def test_two_gpus_report_every_field_and_change_over_time():
    nvml = fake_nvml.two_gpus()
    with TelemetrySampler(nvml=nvml) as sampler:
        taken = samples(sampler, nvml, 4)
    assert all(s.gpu_status == "ok" for s in taken)
    for k, sample in enumerate(taken):
        rtx, a100 = sample.gpus
        assert set(rtx) == set(GPU_FIELDS)
        assert rtx["name"] == "NVIDIA GeForce RTX 4090" and a100["name"] == "NVIDIA A100-SXM4-40GB"
        gpu = nvml.gpus[0]
        assert rtx["utilization_percent"] == gpu.utilization(k)
        assert rtx["memory_utilization_percent"] == gpu.memory_utilization(k)
        assert rtx["memory_used_bytes"] == gpu.memory_used(k)
        assert rtx["memory_total_bytes"] == 24 * GiB
        assert rtx["temperature_c"] == gpu.temperature(k)
        assert rtx["power_w"] == pytest.approx(gpu.power_mw(k) / 1000)
        assert rtx["power_limit_w"] == pytest.approx(450.0)
        assert rtx["sm_clock_mhz"] == gpu.sm_clock(k)
        assert rtx["fan_percent"] == gpu.fan(k)
        assert a100["utilization_percent"] == nvml.gpus[1].utilization(k)
    # the readings move: a plot of them is not a flat line
    assert len({s.gpus[0]["utilization_percent"] for s in taken}) == 4
    assert [s.gpus[0]["memory_used_bytes"] for s in taken] == sorted(s.gpus[0]["memory_used_bytes"] for s in taken)


def test_not_supported_fields_are_none_and_not_asked_again():
    nvml = fake_nvml.two_gpus()
    with TelemetrySampler(nvml=nvml) as sampler:
        taken = samples(sampler, nvml, 5)
        problems = list(sampler.problems)
    assert all(s.gpus[1]["fan_percent"] is None for s in taken)
    assert all(s.gpus[0]["fan_percent"] is not None for s in taken)
    # asked once for the A100, then remembered; five times for the RTX
    assert nvml.calls["nvmlDeviceGetFanSpeed"] == 5 + 1
    assert not any("Fan" in p for p in problems), "NotSupported is a fact, not a problem"


def test_per_process_memory_names_this_process_and_tolerates_wddm():
    nvml = fake_nvml.two_gpus()
    with TelemetrySampler(nvml=nvml) as sampler:
        sample = sampler.sample()
    rtx_procs = {p["pid"]: p for p in sample.gpus[0]["processes"]}
    import os

    me = rtx_procs[os.getpid()]
    assert me["this_process"] is True and me["used_bytes"] == 1 * GiB and me["name"]
    assert rtx_procs[1717]["used_bytes"] == 300 * fake_nvml.MiB  # a graphics process counts too
    (a100_proc,) = sample.gpus[1]["processes"]
    assert a100_proc == {"pid": 5151, "used_bytes": None, "name": a100_proc["name"], "this_process": False}


def test_a_failing_query_is_reported_once_and_sampling_goes_on(caplog):
    nvml = fake_nvml.two_gpus()
    nvml.gpus[1].fail_at = {"nvmlDeviceGetTemperature": {1, 3}}
    heard = []
    with caplog.at_level(logging.WARNING, logger="trainlab.telemetry"):
        with TelemetrySampler(nvml=nvml) as sampler:
            sampler.on_problem(heard.append)
            taken = samples(sampler, nvml, 5)
    temps = [s.gpus[1]["temperature_c"] for s in taken]
    assert temps[1] is None and temps[3] is None
    assert temps[0] == nvml.gpus[1].temperature(0) and temps[4] == nvml.gpus[1].temperature(4)
    assert len(heard) == 1 and "GPU 1 (NVIDIA A100-SXM4-40GB)" in heard[0] and "Temperature" in heard[0]
    assert len([r for r in caplog.records if "Temperature" in r.getMessage()]) == 1
    assert all(s.gpu_status == "ok" for s in taken)


def test_gpu_lost_mid_run_is_reported_once_and_the_other_gpu_goes_on(caplog):
    nvml = fake_nvml.gpu_lost(at=2)
    with caplog.at_level(logging.WARNING, logger="trainlab.telemetry"):
        with TelemetrySampler(nvml=nvml) as sampler:
            taken = samples(sampler, nvml, 6)
            problems = list(sampler.problems)
    assert [s.gpus[1]["status"] for s in taken] == ["ok", "ok", "lost", "lost", "lost", "lost"]
    lost = taken[3].gpus[1]
    assert lost["error"] == "GPU is lost"
    assert lost["utilization_percent"] is None and lost["memory_used_bytes"] is None
    assert lost["name"] == "NVIDIA A100-SXM4-40GB", "a lost GPU keeps its name so the window can say which"
    assert [s.gpus[0]["utilization_percent"] for s in taken] == [nvml.gpus[0].utilization(k) for k in range(6)]
    assert taken[5].gpu_status == "GPU 1 (NVIDIA A100-SXM4-40GB) lost: GPU is lost"
    assert len([p for p in problems if "lost" in p]) == 1
    assert len([r for r in caplog.records if "lost" in r.getMessage()]) == 1
    # a lost GPU is not queried again
    assert nvml.calls["nvmlDeviceGetUtilizationRates"] == 6 + 3


def test_every_gpu_lost_is_the_no_gpu_state():
    nvml = fake_nvml.FakeNvml([fake_nvml.rtx_4090(lost_at=1)])
    with TelemetrySampler(nvml=nvml) as sampler:
        taken = samples(sampler, nvml, 3)
    assert taken[0].gpu_status == "ok"
    assert taken[2].gpu_status.startswith("no NVIDIA GPU: GPU 0 (NVIDIA GeForce RTX 4090) lost")


@pytest.mark.parametrize(
    ("nvml", "reason"),
    [
        (fake_nvml.library_not_found(), "no NVIDIA GPU: the NVIDIA driver is not installed (NVML library not found)"),
        (fake_nvml.driver_not_loaded(), "no NVIDIA GPU: the NVIDIA driver is not loaded"),
        (fake_nvml.no_gpus(), "no NVIDIA GPU: the NVIDIA driver reports no GPU"),
    ],
    ids=["library-not-found", "driver-not-loaded", "no-gpus"],
)
def test_no_gpu_is_one_clear_state_with_cpu_and_ram_still_sampled(nvml, reason, caplog):
    with caplog.at_level(logging.DEBUG, logger="trainlab.telemetry"):
        with TelemetrySampler(nvml=nvml) as sampler:
            taken = [sampler.sample() for _ in range(5)]
            assert sampler.problems == []
    assert {s.gpu_status for s in taken} == {reason}
    assert all(s.gpus == () for s in taken)
    assert all(s.ram_total_bytes > s.ram_used_bytes > 0 for s in taken)
    assert all(s.disk_free_bytes > 0 for s in taken)
    assert len(caplog.records) == 1, "one line for the state, never one per sample"
    assert nvml.calls["nvmlInit"] == 1


def test_nvml_missing_from_the_environment(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    with TelemetrySampler() as sampler:
        sample = sampler.sample()
    assert sample.gpu_status.startswith("no NVIDIA GPU: nvidia-ml-py is not installed")


def test_this_machine_without_a_gpu_samples_without_error():
    with TelemetrySampler() as sampler:
        sample = sampler.sample()
    assert sample.gpu_status == "ok" or sample.gpu_status.startswith("no NVIDIA GPU: ")
    assert sample.ram_total_bytes > 0


def test_nvml_is_initialised_once_and_shut_down_on_close():
    nvml = fake_nvml.two_gpus()
    sampler = TelemetrySampler(nvml=nvml)
    assert nvml.calls["nvmlInit"] == 0, "NVML starts on the first sample, not in the constructor (GUI thread)"
    samples(sampler, nvml, 3)
    assert nvml.calls["nvmlInit"] == 1 and nvml.initialised == 1
    assert nvml.calls["nvmlDeviceGetName"] == 2
    sampler.close()
    assert nvml.initialised == 0


def test_samples_are_json_lines_that_read_back():
    nvml = fake_nvml.gpu_lost(at=1)
    with TelemetrySampler(nvml=nvml) as sampler:
        taken = samples(sampler, nvml, 2)
    for sample in taken:
        back = event_from_json(sample.to_json())
        assert back == sample


def test_disk_free_of_a_run_folder_that_does_not_exist_yet(tmp_path):
    with TelemetrySampler(path=tmp_path / "runs" / "not-yet", nvml=fake_nvml.no_gpus()) as sampler:
        assert sampler.sample().disk_free_bytes > 0


@pytest.mark.parametrize("seconds", [0.5, 1, 5.0])
def test_interval_range_accepted(seconds):
    assert check_interval(seconds) == float(seconds)


@pytest.mark.parametrize("seconds", [0.1, 5.5, "fast"])
def test_a_live_interval_out_of_range_is_a_usage_error(seconds):
    with pytest.raises(UsageError, match="between 0.5 and 5"):
        check_interval(seconds)


@pytest.mark.parametrize("seconds", [0.1, 3601, "fast"])
def test_a_sampler_period_out_of_range_is_a_usage_error(seconds):
    with pytest.raises(UsageError, match="between 0.5 and 3600"):
        TelemetrySampler(seconds)


def test_a_sampler_thread_may_wake_once_an_hour():
    assert TelemetrySampler(3600).interval == 3600.0


def test_the_thread_delivers_samples_until_stopped():
    nvml = fake_nvml.two_gpus()
    got: list[SystemSample] = []
    enough = threading.Event()

    def sink(sample):
        got.append(sample)
        nvml.advance()
        if len(got) >= 2:
            enough.set()

    sampler = TelemetrySampler(0.5, nvml=nvml)
    sampler.start(sink)
    assert enough.wait(10), "two samples at 0.5 s should take about half a second"
    sampler.close()
    assert not sampler.running
    count = len(got)
    assert got[1].time - got[0].time == pytest.approx(0.5, abs=0.35)
    assert got[0].gpus[0]["utilization_percent"] != got[1].gpus[0]["utilization_percent"]
    assert len(got) == count  # stopped means stopped


def test_a_failing_consumer_does_not_stop_sampling():
    nvml = fake_nvml.no_gpus()
    calls = []
    enough = threading.Event()

    def sink(sample):
        calls.append(sample)
        if len(calls) >= 2:
            enough.set()
        raise RuntimeError("consumer bug")

    sampler = TelemetrySampler(0.5, nvml=nvml)
    sampler.start(sink)
    assert enough.wait(10)
    sampler.close()
    assert [p for p in sampler.problems if "consumer bug" in p] == ["telemetry consumer failed: RuntimeError: consumer bug"]


def test_a_short_run_still_gets_its_first_sample():
    got = []
    sampler = TelemetrySampler(5.0, nvml=fake_nvml.two_gpus())
    sampler.start(got.append)
    sampler.close()  # at once
    assert len(got) == 1


def test_sampling_never_imports_torch():
    code = (
        "import sys, trainlab.telemetry as t\n"
        "s = t.TelemetrySampler(); s.sample(); s.sample(); s.close()\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_torch_imported_without_cuda_initialised_reports_no_torch_memory():
    import torch  # noqa: F401 - imported, but CUDA never initialised here

    with TelemetrySampler(nvml=fake_nvml.two_gpus()) as sampler:
        sample = sampler.sample()
    assert sample.torch_allocated_bytes is None and sample.torch_reserved_bytes is None
    assert all(g["torch_device"] is None for g in sample.gpus)
