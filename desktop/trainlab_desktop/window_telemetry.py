"""The window's own telemetry: one sampler for the window's life, so the GPU
panel is live between runs too.

A run samples the machine itself (its ``TelemetryCallback``, with the
training process's torch memory); while one goes, the window's sampler
pauses and the panel shows the run's samples (``SessionView``).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject

from trainlab.telemetry import TelemetrySampler
from trainlab_desktop.common.sample_bridge import SampleBridge


class WindowTelemetry(QObject):
    """Feeds ``gpu_panel`` from a ``TelemetrySampler`` while no run does."""

    def __init__(self, gpu_panel: Any, parent: QObject | None = None):
        super().__init__(parent)

        self._bridge = SampleBridge(self)
        self._bridge.sample.connect(gpu_panel.add_sample)
        self.sampler = TelemetrySampler(1.0)
        self.resume()

    def pause(self) -> None:
        if self.sampler is not None and self.sampler.running:
            self.sampler.stop(timeout=2.0)

    def resume(self) -> None:
        if self.sampler is not None and not self.sampler.running:
            self.sampler.start(self._bridge.sample.emit)

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.close()
            self.sampler = None
