"""The GPU panel: utilisation, memory, temperature and power per GPU over time.

State and view are apart: ``TelemetryHistory`` (plain numpy buffers, no Qt)
keeps the samples; ``GpuPanel`` only draws it.  Following pyqtgraph's
scrolling-plot example, each curve is created once, samples only append to
the buffers, and a QTimer at about 10 Hz pushes what changed into the curves,
never a redraw per sample.  Missing readings (a field the GPU does not
support, a query that failed, a lost GPU) are NaN and show as gaps.

Without an NVIDIA GPU the panel says why (the sampler's ``gpu_status``) and
plots CPU % and RAM instead, so it is never an empty box; the status bar then
shows the CPU and RAM alone (``status_bar_text``), the reason being on the
panel already.

Each plot's title sits beside it, written across (a rotated axis title is
longer than a short plot is high, and two of them ran into each other); the
series' names are a legend above the plots, never over a curve, and only
when there are GPUs to tell apart.  The time axis spans at least a minute, so
that it reads in clock times from the first sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from trainlab.api.events import GPUS_READ, SystemSample
from trainlab_desktop.plots.axes import DateAxis, GridAxis, HeadroomRange, grid_below

GB = 1024**3  # binary, as GPU makers count: a "24 GB" card shows 24.0, not 25.8
CPU_KEY = "cpu"

# (column, scale applied to the sampled value); the plots in this order
METRICS = (
    ("utilization_percent", 1.0),
    ("memory_used_bytes", 1 / GB),
    ("temperature_c", 1.0),
    ("power_w", 1.0),
)
EXTRA = (("power_limit_w", 1.0), ("memory_total_bytes", 1 / GB))
COLUMNS = tuple(m[0] for m in METRICS) + tuple(e[0] for e in EXTRA)
MIN_TIME_SPAN = 60.0  # seconds: a shorter span has pyqtgraph write ticks as "51.800"
GPU_COLORS = ("#1a66c2", "#d9480f", "#2b8a3e", "#7048e8", "#0c8599", "#c2255c", "#e67700", "#5c940d")


def _number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class _Buffer:
    """Times and one row of values per sample, grown by doubling, trimmed to a window."""

    def __init__(self, columns: int, capacity: int = 256):
        self.t = np.empty(capacity)
        self.values = np.full((capacity, columns), np.nan)
        self.n = 0

    def append(self, t: float, row: list[float], keep_after: float) -> None:
        if self.n == len(self.t):
            start = int(np.searchsorted(self.t[: self.n], keep_after))
            if start > self.n // 4:  # drop the expired head in one move
                self.t[: self.n - start] = self.t[start : self.n]
                self.values[: self.n - start] = self.values[start : self.n]
                self.n -= start
            else:
                self.t = np.concatenate([self.t, np.empty(len(self.t))])
                self.values = np.concatenate([self.values, np.full(self.values.shape, np.nan)])
        self.t[self.n] = t
        self.values[self.n] = row
        self.n += 1

    def column(self, index: int) -> np.ndarray:
        return self.values[: self.n, index]

    @property
    def times(self) -> np.ndarray:
        return self.t[: self.n]


@dataclass
class Series:
    key: str  # GPU uuid (or index), or "cpu"
    label: str
    color: str
    buffer: _Buffer
    version: int = 0  # bumped on each append, so the view knows what changed


@dataclass
class TelemetryHistory:
    """Every GPU's readings over the last ``history_seconds``; no Qt here."""

    history_seconds: float = 3600.0
    series: dict[str, Series] = field(default_factory=dict)
    latest: SystemSample | None = None

    def add(self, sample: SystemSample) -> None:
        self.latest = sample
        keep_after = sample.time - self.history_seconds
        if sample.gpus:
            for gpu in sample.gpus:
                series = self._series(_gpu_key(gpu), _gpu_label(gpu, len(sample.gpus)))
                series.buffer.append(sample.time, [_number(gpu.get(c)) for c in COLUMNS], keep_after)
                series.version += 1
        else:
            # No GPU: utilisation and memory plots show the CPU and RAM.
            row = [math.nan] * len(COLUMNS)
            row[0] = _number(sample.cpu_percent)
            row[1] = _number(sample.ram_used_bytes)
            row[COLUMNS.index("memory_total_bytes")] = _number(sample.ram_total_bytes)
            series = self._series(CPU_KEY, QCoreApplication.translate("GpuPanel", "CPU / RAM"))
            series.buffer.append(sample.time, row, keep_after)
            series.version += 1

    def _series(self, key: str, label: str) -> Series:
        series = self.series.get(key)
        if series is None:
            color = GPU_COLORS[len(self.series) % len(GPU_COLORS)] if key != CPU_KEY else "#5f6b7a"
            series = self.series[key] = Series(key, label, color, _Buffer(len(COLUMNS)))
        return series

    def clear(self) -> None:
        self.series.clear()
        self.latest = None


def _gpu_key(gpu: Mapping[str, Any]) -> str:
    return str(gpu.get("uuid") or f"index-{gpu.get('index')}")


def _gpu_label(gpu: Mapping[str, Any], count: int) -> str:
    name = str(gpu.get("name") or "GPU")
    return name if count == 1 else f"{gpu.get('index')}: {name}"


def _fmt(value: Any, pattern: str, missing: str = "n/a") -> str:
    number = _number(value)
    return missing if math.isnan(number) else pattern.format(number)


def _gb(used: Any, total: Any) -> str:
    return f"{_fmt(_number(used) / GB, '{:.1f}')}/{_fmt(_number(total) / GB, '{:.1f}')} GB"


def _known_reasons() -> dict[str, str]:
    # the reasons trainlab.telemetry.init_failure_reason writes (its exact words)
    translate = QCoreApplication.translate
    return {
        "the NVIDIA driver is not installed (NVML library not found)":
            translate("GpuPanel", "the NVIDIA driver is not installed (NVML library not found)"),
        "the NVIDIA driver is not loaded": translate("GpuPanel", "the NVIDIA driver is not loaded"),
        "no permission to query the NVIDIA driver": translate("GpuPanel", "no permission to query the NVIDIA driver"),
        "the NVIDIA driver library and kernel module differ in version (reboot after the driver update)":
            translate("GpuPanel", "the NVIDIA driver library and kernel module differ in version (reboot after the driver update)"),
    }


def localized_gpu_status(status: str) -> str:
    """The sampler's "no NVIDIA GPU: <reason>" translated; a reason TrainLab did
    not write itself (an error from the driver) stays as it came."""
    prefix = "no NVIDIA GPU"
    if not status.startswith(prefix):
        return status
    reason = status[len(prefix) :].lstrip(": ")
    reason = _known_reasons().get(reason, reason)
    words = QCoreApplication.translate("GpuPanel", "No NVIDIA GPU")
    return f"{words}: {reason}" if reason else words


def status_text(sample: SystemSample | None) -> str:
    """One line for the status bar: name, utilisation, memory (per GPU)."""
    if sample is None:
        return ""
    if not sample.gpus or sample.gpu_status.startswith("no NVIDIA GPU"):
        reason = localized_gpu_status(sample.gpu_status or "no NVIDIA GPU")
        cpu = _fmt(sample.cpu_percent, "{:.0f}%")
        ram = _gb(sample.ram_used_bytes, sample.ram_total_bytes)
        return QCoreApplication.translate("GpuPanel", "{reason} · CPU {cpu} · RAM {ram}").format(reason=reason, cpu=cpu, ram=ram)
    parts = []
    short = len(sample.gpus) > 2
    for gpu in sample.gpus:
        name = f"GPU {gpu.get('index')}" if short else str(gpu.get("name") or f"GPU {gpu.get('index')}")
        if gpu.get("status") == "lost":
            parts.append(QCoreApplication.translate("GpuPanel", "{name}: lost").format(name=name))
            continue
        memory = _gb(gpu.get("memory_used_bytes"), gpu.get("memory_total_bytes"))
        text = f"{name}: {_fmt(gpu.get('utilization_percent'), '{:.0f}%')} · {memory}"
        if not short and gpu.get("temperature_c") is not None:
            text += f" · {_fmt(gpu.get('temperature_c'), '{:.0f}')} °C"
        parts.append(text)
    return " | ".join(parts)


def status_bar_text(sample: SystemSample | None) -> str:
    """What the status bar shows: ``status_text`` without the reason there is
    no GPU, which the panel itself says (the reason twice read as two faults)."""
    if sample is None:
        return ""
    if not sample.gpus or sample.gpu_status.startswith("no NVIDIA GPU"):
        cpu = _fmt(sample.cpu_percent, "{:.0f}%")
        ram = _gb(sample.ram_used_bytes, sample.ram_total_bytes)
        return QCoreApplication.translate("GpuPanel", "CPU {cpu} · RAM {ram}").format(cpu=cpu, ram=ram)
    return status_text(sample)


def processes_text(sample: SystemSample | None, labels: Mapping[int, str] | None = None) -> str:
    """Which process (and, given ``labels`` pid -> run name, which run) uses which GPU."""
    if sample is None:
        return ""
    labels = labels or {}
    lines = []
    for gpu in sample.gpus:
        procs = gpu.get("processes")
        if not procs:
            continue
        items = []
        for proc in procs:
            pid = proc.get("pid")
            this = QCoreApplication.translate("GpuPanel", "this process")
            who = labels.get(pid) or (this if proc.get("this_process") else proc.get("name"))
            used = proc.get("used_bytes")
            memory = f" {used / GB:.1f} GB" if used is not None else ""
            items.append(f"{who} (pid {pid}){memory}" if who else f"pid {pid}{memory}")
        lines.append(f"GPU {gpu.get('index')}: " + ", ".join(items))
    return "\n".join(lines)


class GpuPanel(QWidget):
    """Live GPU plots; feed it ``add_sample``, read ``status_text()`` for the status bar."""

    status_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, history_seconds: float = 3600.0, refresh_hz: float = 10.0):
        super().__init__(parent)
        self.history = TelemetryHistory(history_seconds)
        self._drawn: dict[str, int] = {}  # series key -> version last pushed to its curves
        self._curves: dict[tuple[str, str], pg.PlotDataItem] = {}
        self._process_labels: dict[int, str] = {}
        self._last_status = ""
        self._cpu_mode: bool | None = None
        self._memory_top: float | None = None
        self._short_time_span = False  # the time axis held at MIN_TIME_SPAN

        self.message = QLabel(self)
        self.message.setWordWrap(True)
        self.message.hide()
        self.graphics = pg.GraphicsLayoutWidget(self)
        self.graphics.setBackground(None)  # the window's palette shows through
        self.processes = QLabel(self)
        self.processes.setWordWrap(True)
        self.processes.setStyleSheet("font-size: small")
        self.processes.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.message)
        layout.addWidget(self.graphics, 1)
        layout.addWidget(self.processes)

        self.plots: dict[str, pg.PlotItem] = {}
        self._titles = {
            "utilization_percent": self.tr("Utilisation (%)"),
            "memory_used_bytes": self.tr("Memory (GB)"),
            "temperature_c": self.tr("Temperature (°C)"),
            "power_w": self.tr("Power (W)"),
        }
        self.titles: dict[str, pg.LabelItem] = {}
        for row, (column, _scale) in enumerate(METRICS, start=1):  # row 0: the legend, once there are GPUs
            plot = self.graphics.addPlot(row=row, col=0, axisItems={"left": GridAxis("left"), "bottom": DateAxis("bottom")})
            title = self.titles[column] = pg.LabelItem(self._titles[column], justify="left", size="9pt")
            self.graphics.addItem(title, row=row, col=1)
            plot.getAxis("left").setWidth(36)  # one width: the plots line up under each other
            plot.setClipToView(True)
            plot.setDownsampling(auto=True, mode="peak")
            plot.setMouseEnabled(x=True, y=False)
            if row > 1:
                plot.setXLink(self.plots[METRICS[0][0]])
            if row < len(METRICS):
                plot.getAxis("bottom").setStyle(showValues=False)
            self.plots[column] = plot
        # 100 % a few pixels below the top, where its grid line does not read as the frame
        self._percent_range = HeadroomRange(self.plots["utilization_percent"], 0, 100, top_px=6, bottom_px=2)
        self.legend = pg.LegendItem(colCount=4, frame=False)
        self._legend_shown = False
        self.apply_palette()

        self._timer = QTimer(self)
        self._timer.setInterval(max(16, int(1000 / refresh_hz)))
        self._timer.timeout.connect(self.refresh)
        self._timer.start()

    def apply_palette(self) -> None:
        """Axes, grid and legend in the colours of the current palette (the theme)."""
        palette = self.palette()
        text = QColor(palette.color(QPalette.ColorRole.WindowText))
        window = QColor(palette.color(QPalette.ColorRole.Window))  # shows through the plots
        for plot in self.plots.values():
            for axis in ("left", "bottom"):
                plot.getAxis(axis).setPen(text)
                plot.getAxis(axis).setTextPen(text)
            grid_below(plot, window, 0.2)
        for column, title in self.titles.items():
            title.setText(title.text, color=text.name())
        self.legend.setLabelTextColor(text)

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self.apply_palette()

    # -- input -------------------------------------------------------------------------------
    def add_sample(self, sample: SystemSample) -> None:
        """Buffer one sample; the timer draws it."""
        self.history.add(sample)

    def set_process_labels(self, labels: Mapping[int, str]) -> None:
        """Name processes by pid (a run's child process -> the run's name)."""
        self._process_labels = dict(labels)

    def clear(self) -> None:
        self.history.clear()
        for curve in self._curves.values():
            curve.setData([], [])
        self._drawn.clear()
        self._memory_top = None

    # -- output ------------------------------------------------------------------------------
    def status_text(self) -> str:
        return status_text(self.history.latest)

    def status_bar_text(self) -> str:
        """What ``status_changed`` carries: ``status_text`` less what the panel shows itself."""
        return status_bar_text(self.history.latest)

    def curve(self, key: str, column: str) -> pg.PlotDataItem | None:
        return self._curves.get((key, column))

    def refresh(self) -> None:
        """Push what changed since the last refresh into the curves (the timer calls this)."""
        latest = self.history.latest
        if latest is None:
            return
        changed = False
        for key, series in self.history.series.items():
            if self._drawn.get(key) == series.version:
                continue
            changed = True
            self._ensure_curves(series)
            times = series.buffer.times
            for index, (column, scale) in enumerate(METRICS):
                curve = self._curves.get((key, column))
                if curve is not None:
                    curve.setData(times, series.buffer.column(index) * scale, connect="finite")
            limit = self._curves.get((key, "power_limit_w"))
            if limit is not None:
                limit.setData(times, series.buffer.column(COLUMNS.index("power_limit_w")), connect="finite")
            self._drawn[key] = series.version
        if changed:
            self._update_ranges()
            self._update_texts(latest)

    def _ensure_curves(self, series: Series) -> None:
        if (series.key, "utilization_percent") in self._curves:
            return
        cpu = series.key == CPU_KEY
        pen = pg.mkPen(series.color, width=2)
        for column, _scale in METRICS:
            if cpu and column in ("temperature_c", "power_w"):
                continue
            curve = self._curves[(series.key, column)] = self.plots[column].plot(pen=pen)
            if column == "utilization_percent" and not cpu:  # "CPU / RAM" needs no legend: the titles say it
                self.legend.addItem(curve, series.label)
                self._show_legend()
        if not cpu:
            dashed = pg.mkPen(series.color, width=1, style=pg.QtCore.Qt.PenStyle.DashLine)
            self._curves[(series.key, "power_limit_w")] = self.plots["power_w"].plot(pen=dashed)

    def _show_legend(self) -> None:
        if not self._legend_shown:
            self._legend_shown = True
            self.graphics.addItem(self.legend, row=0, col=0, colspan=2)

    def _update_ranges(self) -> None:
        self._update_time_range()
        # Memory from 0 to the largest total, so "how full" reads at a glance.
        totals = [
            np.nanmax(s.buffer.column(COLUMNS.index("memory_total_bytes")))
            for s in self.history.series.values()
            if s.buffer.n and not np.all(np.isnan(s.buffer.column(COLUMNS.index("memory_total_bytes"))))
        ]
        top = max(totals) / GB if totals else None
        if top is not None and top != self._memory_top:
            self._memory_top = top
            self.plots["memory_used_bytes"].setYRange(0, top, padding=0.02)

    def _update_time_range(self) -> None:
        # Under a minute of samples, pyqtgraph's date axis writes seconds with
        # milliseconds ("51.800 ... 52.399"): hold a minute from the first sample.
        spans = [(s.buffer.times[0], s.buffer.times[-1]) for s in self.history.series.values() if s.buffer.n]
        if not spans:
            return
        first, last = min(a for a, _ in spans), max(b for _, b in spans)
        plot = self.plots[METRICS[0][0]]
        if last - first < MIN_TIME_SPAN:
            self._short_time_span = True
            plot.setXRange(first, first + MIN_TIME_SPAN, padding=0)
        elif self._short_time_span:
            self._short_time_span = False
            plot.enableAutoRange(x=True)

    def title(self, column: str) -> str:
        """The title shown beside the plot of ``column`` (what tests read)."""
        return str(self.titles[column].text)

    def _update_texts(self, latest: SystemSample) -> None:
        cpu_mode = not latest.gpus
        if cpu_mode != self._cpu_mode:
            self._cpu_mode = cpu_mode
            for column in ("temperature_c", "power_w"):
                self.plots[column].setVisible(not cpu_mode)
                self.titles[column].setVisible(not cpu_mode)
            color = QColor(self.palette().color(QPalette.ColorRole.WindowText)).name()
            self.titles["utilization_percent"].setText(
                self.tr("CPU (%)") if cpu_mode else self._titles["utilization_percent"], color=color)
            self.titles["memory_used_bytes"].setText(
                self.tr("RAM (GB)") if cpu_mode else self._titles["memory_used_bytes"], color=color)
            # the last visible plot carries the time axis
            last = "memory_used_bytes" if cpu_mode else "power_w"
            for column, plot in self.plots.items():
                plot.getAxis("bottom").setStyle(showValues=column == last)
        notes = localized_gpu_status(latest.gpu_status) if latest.gpu_status not in ("", GPUS_READ) else ""
        self.message.setText(notes)
        self.message.setVisible(bool(notes))
        procs = processes_text(latest, self._process_labels)
        self.processes.setText(procs)
        self.processes.setVisible(bool(procs))
        text = status_bar_text(latest)
        if text != self._last_status:
            self._last_status = text
            self.status_changed.emit(text)
