"""What a detector says about one image: its boxes, as a typed prediction (no torch).

JSON: ``{"image", "width", "height", "boxes": [{"label", "category_id",
"score", "box": [x0, y0, x1, y1]}]}`` in the image's pixels (upright).  CSV:
``boxes`` (how many) and ``detections`` (``label score x0 y0 x1 y1`` joined by
``;``).  ``predict --out boxes.json`` writes ``coco_results``: COCO's
results format (``bbox`` as ``[x, y, width, height]``, the data's category ids).  Try-it draws ``display()``,
the image with its boxes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainlab import Box, BoxedImage, Prediction


@dataclass(frozen=True)
class Detection:
    label: str
    score: float
    box: tuple[float, float, float, float]
    category_id: int = 0


@dataclass(frozen=True)
class DetectedBoxes(Prediction):
    image: str
    width: int
    height: int
    boxes: tuple[Detection, ...] = ()

    kind = "boxes"

    def to_json(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "width": self.width,
            "height": self.height,
            "boxes": [
                {"label": d.label, "category_id": d.category_id, "score": round(d.score, 5), "box": [round(v, 2) for v in d.box]}
                for d in self.boxes
            ],
        }

    def summary(self) -> str:
        if not self.boxes:
            return "no boxes"
        shown = ", ".join(f"{d.label} {d.score:.2f}" for d in self.boxes[:6])
        more = f", ... ({len(self.boxes)} in all)" if len(self.boxes) > 6 else ""
        return f"{len(self.boxes)} box{'es' if len(self.boxes) != 1 else ''}: {shown}{more}"

    def display(self) -> Any:
        return BoxedImage(self.image, tuple(Box(*d.box, label=d.label, score=d.score, role="predicted") for d in self.boxes))

    @classmethod
    def csv_header(cls, top_k: int, label_names: Sequence[str]) -> list[str]:
        return ["boxes", "detections"]

    def csv_row(self, top_k: int, label_names: Sequence[str]) -> list[str]:
        cells = ";".join(f"{d.label} {d.score:.4f} " + " ".join(f"{v:.1f}" for v in d.box) for d in self.boxes)
        return [str(len(self.boxes)), cells]


    @classmethod
    def json_document(cls, inputs: Sequence[str], predictions: Sequence[Any]) -> list[dict[str, Any]]:
        """``predict --out boxes.json``: COCO's results list (an image that could not be read has no entry)."""
        return coco_results(predictions)


def coco_results(predictions: Sequence[DetectedBoxes | None]) -> list[dict[str, Any]]:
    """COCO's detection results: one entry per box, ``image_id`` the image's position in the call (from 1)."""
    out = []
    for image_id, prediction in enumerate(predictions, start=1):
        if not isinstance(prediction, DetectedBoxes):
            continue
        for d in prediction.boxes:
            x0, y0, x1, y1 = d.box
            out.append({"image_id": image_id, "file_name": prediction.image, "category_id": d.category_id, "label": d.label,
                        "bbox": [round(x0, 2), round(y0, 2), round(x1 - x0, 2), round(y1 - y0, 2)],
                        "score": round(d.score, 5)})  # fmt: skip
    return out
