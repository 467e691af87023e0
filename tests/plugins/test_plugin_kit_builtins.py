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

    def tiny_params(self, task_id):
        # a label set per image learns slower than one class: more steps for the loss to fall
        return {**self.run_params, "epochs": 6} if task_id == "image-multilabel" else dict(self.run_params)

    def make_tiny_data(self, task_id, folder):
        from trainlab_dev.image_samples import make_shapes_dataset

        shapes = make_shapes_dataset(Path(folder) / "shapes", classes=2, per_class=8, size=16)
        if task_id == "image-classification":
            return shapes
        # the other families read tables: a number, or a set of labels, that the shape decides
        images = sorted(shapes.glob("*/*.jpg"))
        names = sorted({image.parent.name for image in images})
        table = Path(folder) / "shapes.csv"
        with open(table, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if task_id == "image-regression":
                writer.writerow(["image", "label"])
                writer.writerows((str(image), float(names.index(image.parent.name))) for image in images)
            else:
                writer.writerow(["image", "labels"])
                writer.writerows((str(image), image.parent.name) for image in images)
        return table


class TestTextPlugin(PluginConformance):
    plugin = "text-classification"
    run_params = {"max_length": 16, "batch_size": 4, "epochs": 3}

    def make_tiny_data(self, task_id, folder):
        path = Path(folder) / "reviews.csv"
        good, bad = "good great fine nice", "bad awful poor sad"
        if task_id == "text-regression":  # a number per text
            header, rows = ["text", "label"], [(good, 1.0), (bad, 0.0)] * 12
        elif task_id == "text-multilabel":  # a set of labels per text
            header, rows = ["text", "labels"], [(good, "pos;kind"), (bad, "neg")] * 12
        else:
            header, rows = ["text", "label"], [(good, "pos"), (bad, "neg")] * 12
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
        return path
