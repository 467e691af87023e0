"""Telemetry inside real training runs (the toy task): system events in metrics.jsonl."""

from __future__ import annotations

import threading

import pytest
from fixtures import fake_nvml

from trainlab.api.errors import UsageError
from trainlab.api.callbacks import Callback
from trainlab.engine.scripting import RunRequest, run_training
from trainlab.api.events import Finished, Log, Started, SystemSample
from trainlab.runfolder.tail import read_events
from trainlab.runfolder.index import RunDir
from trainlab.telemetry import TelemetryCallback


class AdvanceOnSample(Callback):
    """Moves the fake GPUs' clock one tick per fake sample the run receives."""

    def __init__(self, nvml: fake_nvml.FakeNvml):
        self.nvml = nvml

    def on_event(self, event):
        if isinstance(event, SystemSample) and len(event.gpus) == 2:
            self.nvml.advance()


def train(toy_csv, tmp_path, callbacks=(), **params):
    params = {k: str(v) for k, v in params.items()}
    request = RunRequest(task="toy-classification", data=str(toy_csv), params=params, out=str(tmp_path / "run"))
    return run_training(request, callbacks=list(callbacks))


def telemetry_threads():
    return [t for t in threading.enumerate() if t.name == "trainlab-telemetry" and t.is_alive()]


def events_of(result):
    return list(read_events(RunDir(result.run_dir).metrics_jsonl))


def test_a_run_keeps_its_gpu_history_in_metrics_jsonl(toy_plugin, toy_csv, tmp_path):
    nvml = fake_nvml.two_gpus()
    result = train(
        toy_csv, tmp_path, callbacks=[TelemetryCallback(0.5, nvml=nvml), AdvanceOnSample(nvml)], epochs=3, step_delay=0.05
    )
    assert result.status == "completed"
    assert telemetry_threads() == [], "the sampler stops with the run"
    events = events_of(result)
    kinds = [type(e) for e in events]
    fake = [e for e in events if isinstance(e, SystemSample) and len(e.gpus) == 2]
    assert len(fake) >= 3, "a run of about two seconds sampled every 0.5 s"
    # between Started and Finished, stamped with the run's position
    assert kinds.index(Started) < events.index(fake[0]) and events.index(fake[-1]) < kinds.index(Finished)
    assert [e.step for e in fake] == sorted(e.step for e in fake) and fake[-1].step > 0
    assert [e.epoch for e in fake] == sorted(e.epoch for e in fake) and fake[-1].epoch >= 1
    for k, sample in enumerate(fake):
        assert sample.gpus[0]["name"] == "NVIDIA GeForce RTX 4090"
        assert sample.gpus[0]["utilization_percent"] == nvml.gpus[0].utilization(k)
        assert sample.gpus[1]["memory_used_bytes"] == nvml.gpus[1].memory_used(k)
    # the fake's temperature query fails at tick 2: one warning in the run, no more
    warnings = [e for e in events if isinstance(e, Log) and e.message.startswith("telemetry:")]
    assert len(warnings) == 1 and "Temperature" in warnings[0].message
    assert fake[2].gpus[1]["temperature_c"] is None


def test_a_gpu_lost_mid_run_is_logged_once_and_the_run_completes(toy_plugin, toy_csv, tmp_path):
    nvml = fake_nvml.gpu_lost(at=1)
    nvml.gpus[1].fail_at = {}
    result = train(
        toy_csv, tmp_path, callbacks=[TelemetryCallback(0.5, nvml=nvml), AdvanceOnSample(nvml)], step_delay=0.06
    )
    assert result.status == "completed"
    events = events_of(result)
    fake = [e for e in events if isinstance(e, SystemSample) and len(e.gpus) == 2]
    assert len(fake) >= 3
    assert fake[0].gpus[1]["status"] == "ok"
    assert all(s.gpus[1]["status"] == "lost" for s in fake[1:])
    assert all(s.gpus[0]["utilization_percent"] is not None for s in fake)
    lost = [e for e in events if isinstance(e, Log) and "lost" in e.message]
    assert len(lost) == 1 and lost[0].level == "warning"
    assert "GPU 1 (NVIDIA A100-SXM4-40GB)" in lost[0].message


def test_every_run_records_the_machine_it_ran_on(toy_plugin, toy_csv, tmp_path):
    result = train(toy_csv, tmp_path, epochs=1)
    assert result.status == "completed"
    system = [e for e in events_of(result) if isinstance(e, SystemSample)]
    assert system, "the default callbacks include telemetry"
    sample = system[0]
    assert sample.ram_total_bytes > 0 and sample.disk_free_bytes > 0
    assert sample.gpu_status == "ok" or sample.gpu_status.startswith("no NVIDIA GPU: ")
    assert telemetry_threads() == []


def test_the_sampler_stops_when_a_run_fails(toy_plugin, toy_csv, tmp_path):
    telemetry = TelemetryCallback(0.5, nvml=fake_nvml.two_gpus())
    result = train(toy_csv, tmp_path, callbacks=[telemetry], fail_at_step=3)
    assert result.status == "failed"
    assert telemetry_threads() == []
    assert telemetry.sampler is not None and not telemetry.sampler.running


def test_every_zero_turns_telemetry_off(toy_plugin, toy_csv, tmp_path):
    telemetry = TelemetryCallback(0, nvml=fake_nvml.two_gpus())
    train(toy_csv, tmp_path, callbacks=[telemetry], epochs=1)
    assert telemetry.sampler is None


def test_every_below_half_a_second_is_refused():
    with pytest.raises(UsageError, match="at least 0.5"):
        TelemetryCallback(0.1)


def test_every_above_an_hour_is_refused():
    with pytest.raises(UsageError, match="at most 3600"):
        TelemetryCallback(3601)


def test_a_long_interval_reads_the_machine_once_per_sample_written(toy_plugin, toy_csv, tmp_path, monkeypatch):
    # Before, every > 5 s sampled every 5 s and wrote every n-th: with every=60
    # a run read /proc and NVML twelve times per sample it kept.
    from trainlab.telemetry.sampler import TelemetrySampler

    taken = []
    real = TelemetrySampler.sample

    def counted(self):
        taken.append(self.interval)
        return real(self)

    monkeypatch.setattr(TelemetrySampler, "sample", counted)
    result = train(toy_csv, tmp_path, epochs=3, step_delay=0.2, telemetry_every=60)  # trains for about 6 s
    assert result.status == "completed"
    assert taken == [60.0], "one sample at the start, none thrown away"
    assert len([e for e in events_of(result) if isinstance(e, SystemSample)]) == 1
