"""The built-in plugins pass the plugin kit, as a third-party plugin's CI would run it.

Tiny data and few steps: each task trains five tiny runs on the CPU (a
straight one, the same again, one stopped and resumed, and what predict and
the model folder need).
"""

from __future__ import annotations

import csv
from pathlib import Path

from trainlab.testing import PluginConformance


class TestImagePlugin(PluginConformance):
    plugin = "image-classification"
    supports_window = True
    # 16 px images, loaders in this process (the kit watches its writes and sockets)
    run_params = {"image_size": 16, "num_workers": 0, "batch_size": 4, "epochs": 3}

    def make_tiny_data(self, task_id, folder):
        from trainlab.plugins.image.sample import make_shapes_dataset

        return make_shapes_dataset(folder / "shapes", classes=2, per_class=8, size=16)


class TestTextPlugin(PluginConformance):
    plugin = "text-classification"
    run_params = {"max_length": 16, "batch_size": 4, "epochs": 3}

    def make_tiny_data(self, task_id, folder):
        path = Path(folder) / "reviews.csv"
        rows = [("good great fine nice", "pos"), ("bad awful poor sad", "neg")] * 12
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
        return path
