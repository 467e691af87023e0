"""object-detection passes the plugin kit, as a third-party plugin's CI would run it (exact resume included)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from trainlab.testing import PluginConformance


@pytest.mark.slow
class TestDetectionPlugin(PluginConformance):
    plugin = "object-detection"
    supports_window = True
    run_params: ClassVar[dict] = {"image_size": 48, "batch_size": 4, "epochs": 3, "model": "small-fcos", "num_workers": "0", "export": "off"}

    def make_tiny_data(self, task_id, folder):
        from trainlab_dev.detection_samples import write_coco

        return write_coco(Path(folder) / "shapes", {"train": 12, "val": 4}, size=48, seed=4)
