"""The GPU panel, fed by the real sampler over a fake NVML."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from fixtures import fake_nvml

from trainlab_desktop.run.gpu_panel import CPU_KEY, GB, GpuPanel, TelemetryHistory, status_text
from trainlab.telemetry import TelemetrySampler

T0 = 1_800_000_000.0
RTX = fake_nvml.rtx_4090().uuid
A100 = fake_nvml.a100().uuid


def feed(panel, nvml, count, start=0):
    """``count`` samples from the sampler, one second apart."""
    with TelemetrySampler(nvml=nvml) as sampler:
        for k in range(start, start + count):
            panel.add_sample(replace(sampler.sample(), time=T0 + k))
            nvml.advance()


def curve_data(panel, key, column):
    """What the curve holds now (nothing before the timer has drawn it), before view clipping."""
    curve = panel.curve(key, column)
    x, y = curve.getOriginalDataset() if curve is not None else (None, None)
    return (np.asarray([]), np.asarray([])) if x is None else (x, y)


@pytest.fixture
def panel(qtbot):
    widget = GpuPanel()
    qtbot.addWidget(widget)
    widget.resize(480, 720)
    widget.show()
    return widget


def test_plots_each_gpu_over_time(qtbot, panel):
    nvml = fake_nvml.two_gpus()
    feed(panel, nvml, 6)
    qtbot.waitUntil(lambda: panel.curve(RTX, "utilization_percent") is not None, timeout=2000)
    qtbot.waitUntil(lambda: len(curve_data(panel, A100, "power_w")[0]) == 6, timeout=2000)
    rtx, a100 = nvml.gpus
    x, util = curve_data(panel, RTX, "utilization_percent")
    assert list(x) == [T0 + k for k in range(6)]
    assert list(util) == [rtx.utilization(k) for k in range(6)]
    _, memory = curve_data(panel, A100, "memory_used_bytes")
    assert memory == pytest.approx([a100.memory_used(k) / GB for k in range(6)])
    _, temperature = curve_data(panel, RTX, "temperature_c")
    assert list(temperature) == [rtx.temperature(k) for k in range(6)]
    _, power = curve_data(panel, RTX, "power_w")
    assert power == pytest.approx([rtx.power_mw(k) / 1000 for k in range(6)])
    # the legend names both GPUs; memory is scaled to the largest card
    labels = [label.text for _, label in panel.legend.items]
    assert labels == ["0: NVIDIA GeForce RTX 4090", "1: NVIDIA A100-SXM4-40GB"]
    low, high = panel.plots["memory_used_bytes"].viewRange()[1]
    assert low <= 0 and 40 <= high < 42


def test_a_failed_reading_is_a_gap_not_a_crash(qtbot, panel):
    nvml = fake_nvml.two_gpus()  # the A100's temperature query fails at tick 2
    feed(panel, nvml, 5)
    qtbot.waitUntil(lambda: len(curve_data(panel, A100, "temperature_c")[0]) == 5, timeout=2000)
    _, temperature = curve_data(panel, A100, "temperature_c")
    assert math.isnan(temperature[2]) and not np.isnan(temperature[[0, 1, 3, 4]]).any()
    panel.grab()  # paints with the NaN in place


def test_refresh_is_timer_driven_and_curves_are_created_once(qtbot, panel):
    nvml = fake_nvml.two_gpus()
    feed(panel, nvml, 3)
    qtbot.waitUntil(lambda: len(curve_data(panel, RTX, "utilization_percent")[0]) == 3, timeout=2000)
    items = {name: len(plot.listDataItems()) for name, plot in panel.plots.items()}
    feed(panel, nvml, 50, start=3)
    # nothing drawn per sample: the curve still shows the old data until the timer fires
    assert len(curve_data(panel, RTX, "utilization_percent")[0]) == 3
    qtbot.waitUntil(lambda: len(curve_data(panel, RTX, "utilization_percent")[0]) == 53, timeout=2000)
    assert {name: len(plot.listDataItems()) for name, plot in panel.plots.items()} == items
    # utilisation, memory, temperature: one curve per GPU; power: the draw and the limit
    assert items == {"utilization_percent": 2, "memory_used_bytes": 2, "temperature_c": 2, "power_w": 4}


def test_status_text_names_each_gpu_its_utilisation_and_memory(qtbot, panel):
    nvml = fake_nvml.two_gpus()
    feed(panel, nvml, 2)
    rtx = nvml.gpus[0]
    text = panel.status_text()
    assert text.startswith(f"NVIDIA GeForce RTX 4090: {rtx.utilization(1)}% · {rtx.memory_used(1) / GB:.1f}/24.0 GB")
    assert "NVIDIA A100-SXM4-40GB:" in text and "/40.0 GB" in text
    with qtbot.waitSignal(panel.status_changed, timeout=2000) as signal:
        feed(panel, nvml, 1, start=2)
    assert signal.args == [panel.status_text()]


def test_a_lost_gpu_shows_as_lost(qtbot, panel):
    nvml = fake_nvml.gpu_lost(at=2)
    feed(panel, nvml, 4)
    qtbot.waitUntil(lambda: len(curve_data(panel, A100, "utilization_percent")[0]) == 4, timeout=2000)
    _, util = curve_data(panel, A100, "utilization_percent")
    assert not np.isnan(util[:2]).any() and np.isnan(util[2:]).all()
    assert "NVIDIA A100-SXM4-40GB: lost" in panel.status_text()
    qtbot.waitUntil(lambda: panel.message.isVisible(), timeout=2000)
    assert panel.message.text() == "GPU 1 (NVIDIA A100-SXM4-40GB) lost: GPU is lost"


def test_without_a_gpu_the_panel_says_why_and_plots_cpu_and_ram(qtbot, panel):
    feed(panel, fake_nvml.library_not_found(), 3)
    qtbot.waitUntil(lambda: panel.curve(CPU_KEY, "memory_used_bytes") is not None, timeout=2000)
    qtbot.waitUntil(lambda: panel.message.isVisible(), timeout=2000)
    assert panel.message.text() == "No NVIDIA GPU: the NVIDIA driver is not installed (NVML library not found)"
    assert not panel.plots["temperature_c"].isVisible() and not panel.plots["power_w"].isVisible()
    _, ram = curve_data(panel, CPU_KEY, "memory_used_bytes")
    assert len(ram) == 3 and (ram > 0).all()
    text = panel.status_text()
    assert text.startswith("No NVIDIA GPU: the NVIDIA driver is not installed") and "CPU " in text and "RAM " in text


def test_processes_line_names_who_uses_which_gpu(qtbot, panel):
    import os

    nvml = fake_nvml.two_gpus()
    panel.set_process_labels({4242: "run resnet18-0412"})
    feed(panel, nvml, 1)
    qtbot.waitUntil(lambda: panel.processes.isVisible(), timeout=2000)
    text = panel.processes.text()
    assert f"this process (pid {os.getpid()})" in text
    assert "run resnet18-0412 (pid 4242)" in text
    assert "GPU 1: " in text and "pid 5151" in text


def test_history_is_bounded():
    history = TelemetryHistory(history_seconds=10)
    nvml = fake_nvml.no_gpus()
    with TelemetrySampler(nvml=nvml) as sampler:
        sample = sampler.sample()
    for k in range(5000):
        history.add(replace(sample, time=T0 + k))
    buffer = history.series[CPU_KEY].buffer
    assert buffer.n < 300, "an hour-long window does not grow without end"
    assert buffer.times[-1] == T0 + 4999 and buffer.times[0] <= T0 + 4999 - 10


def test_status_text_before_any_sample_is_empty(panel):
    assert panel.status_text() == "" and status_text(None) == ""


def _scene_rect(item):
    return item.mapRectToScene(item.boundingRect())


def test_a_short_cpu_panel_keeps_its_titles_apart_and_off_the_curves(qtbot, panel):
    panel.resize(700, 150)  # the window's minimum height for the panel
    feed(panel, fake_nvml.library_not_found(), 3)
    qtbot.waitUntil(lambda: panel.curve(CPU_KEY, "memory_used_bytes") is not None, timeout=2000)
    panel.grab()
    assert panel.title("utilization_percent") == "CPU (%)" and panel.title("memory_used_bytes") == "RAM (GB)"
    cpu, ram = (_scene_rect(panel.titles[c]) for c in ("utilization_percent", "memory_used_bytes"))
    assert not cpu.intersects(ram), (cpu, ram)
    views = [_scene_rect(panel.plots[c].getViewBox()) for c in ("utilization_percent", "memory_used_bytes")]
    assert not any(title.intersects(view) for title in (cpu, ram) for view in views)
    # one series, named by the titles: no legend over the start of the CPU line
    assert panel.legend.items == [] and panel.legend.scene() is None


def test_the_gpu_legend_sits_above_the_plots_not_over_a_curve(qtbot, panel):
    feed(panel, fake_nvml.two_gpus(), 3)
    qtbot.waitUntil(lambda: len(panel.legend.items) == 2, timeout=2000)
    panel.grab()
    legend = _scene_rect(panel.legend)
    assert not any(legend.intersects(_scene_rect(p.getViewBox())) for p in panel.plots.values() if p.isVisible())


def test_the_100_percent_line_stays_clear_of_the_top_edge(qtbot, panel):
    from PySide6.QtCore import QPointF

    for height in (150, 720):
        panel.resize(700, height)
        feed(panel, fake_nvml.library_not_found(), 2)
        panel.grab()
        view = panel.plots["utilization_percent"].getViewBox()
        top = view.sceneBoundingRect().top()
        hundred = view.mapViewToScene(QPointF(0, 100)).y()
        assert hundred - top >= 4, f"100 % is {hundred - top:.1f} px under the top at height {height}"


def test_the_time_axis_reads_clock_times_from_the_first_seconds(qtbot, panel):
    import re

    with TelemetrySampler(nvml=fake_nvml.library_not_found()) as sampler:
        for k in range(2):  # 0.6 s apart, as just after Start
            panel.add_sample(replace(sampler.sample(), time=T0 + 51.8 + 0.6 * k))
    qtbot.waitUntil(lambda: len(curve_data(panel, CPU_KEY, "utilization_percent")[0]) == 2, timeout=2000)
    panel.grab()
    axis = panel.plots["memory_used_bytes"].getAxis("bottom")  # the one that shows its values without a GPU
    low, high = panel.plots["memory_used_bytes"].viewRange()[0]
    assert high - low >= 59
    ticks = [v for _spacing, values in axis.tickValues(low, high, axis.width()) for v in values]
    strings = axis.tickStrings(ticks, 1.0, 1.0)
    assert strings and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", s) for s in strings), strings


def test_the_status_bar_leaves_the_no_gpu_reason_to_the_panel(qtbot, panel):
    with qtbot.waitSignal(panel.status_changed, timeout=2000) as signal:
        feed(panel, fake_nvml.library_not_found(), 2)
    qtbot.waitUntil(lambda: panel.message.isVisible(), timeout=2000)
    (shown,) = signal.args
    assert "NVIDIA" not in shown and shown.startswith("CPU ") and "RAM " in shown
    assert panel.message.text().startswith("No NVIDIA GPU")  # said once, on the panel
