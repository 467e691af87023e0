"""A QObject whose signal carries plain values from a non-Qt thread to the GUI.

The telemetry sampler calls its sink from its own thread; emitting this
signal there queues the call to receivers living in the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class SampleBridge(QObject):
    sample = Signal(object)
