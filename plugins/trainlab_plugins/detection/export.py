"""A detection model folder that runs without TrainLab.

``save_model`` writes ``model.safetensors`` (the weights), ``model.json``
(the architecture, classes, COCO category ids, image size, score
threshold and cross-class overlap) and, from here, ``detector_networks.py`` (the network builders,
torch and torchvision only) and ``predict.py``:

    python predict.py IMAGE [IMAGE ...] [--threshold 0.3] [--cross-class-iou 0.7] [--out boxes.json] [--graph]

prints (or writes) COCO-style results, one entry per box.  ``--graph`` runs
the exported graph instead of the rebuilt network: ``model.pt2``
(torch.export of the backbone and head; decoding and NMS in the program) or
``model.onnx`` (the whole Faster R-CNN, run by onnxruntime).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from trainlab import atomic_write_text

PROGRAM = '''"""Boxes for images with the detector in this folder; needs torch, torchvision, safetensors and Pillow, not TrainLab.

    python predict.py IMAGE [IMAGE ...] [--threshold 0.3] [--cross-class-iou 0.7] [--out boxes.json] [--graph]

--graph runs the exported graph (model.pt2 with torch.export, or model.onnx with onnxruntime) instead of
the network rebuilt from model.safetensors.
"""

import argparse
import json
import sys
from pathlib import Path

import torch
from PIL import Image, ImageOps
from safetensors.torch import load_file
from torchvision.transforms.v2 import functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from detector_networks import (  # noqa: E402
    GRAPH_FILE, ONNX_FILE, build_detector, detect_tiled, detect_with_graph, drop_repeats_across_classes,
)


def load(folder=HERE, device="cpu"):
    """(the detector, ready for inference, and its model.json)."""
    meta = json.loads((Path(folder) / "model.json").read_text(encoding="utf-8"))
    model = build_detector(meta["architecture"], len(meta["classes"]), int(meta["image_size"]),
                           score_thresh=0.05, detections_per_img=100)
    model.load_state_dict(load_file(str(Path(folder) / "model.safetensors")))
    return model.to(device).eval(), meta


def load_graph(folder=HERE):
    """(a callable like the detector, list of images in, their detections out, running the exported graph; model.json)."""
    folder = Path(folder)
    meta = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    # the rebuilt detector's weights are never used here: only its resizing, anchors, box decoding and NMS
    skeleton = build_detector(meta["architecture"], len(meta["classes"]), int(meta["image_size"]),
                              score_thresh=0.05, detections_per_img=100).eval()
    if (folder / GRAPH_FILE).is_file():
        network = torch.export.load(str(folder / GRAPH_FILE)).module()
        return (lambda images: detect_with_graph(network, skeleton, images)), meta
    if (folder / ONNX_FILE).is_file():
        try:
            import onnxruntime
        except ImportError:
            sys.exit("model.onnx needs onnxruntime: pip install onnxruntime")
        session = onnxruntime.InferenceSession(str(folder / ONNX_FILE), providers=["CPUExecutionProvider"])

        def run(images):
            outs = []
            for image in images:
                boxes, labels, scores = session.run(None, {"image": image.numpy()})
                outs.append({"boxes": torch.from_numpy(boxes), "labels": torch.from_numpy(labels), "scores": torch.from_numpy(scores)})
            return outs

        return run, meta
    sys.exit(f"no exported graph in {folder} ({GRAPH_FILE} or {ONNX_FILE}): run without --graph")


def read_image(path):
    """RGB in [0, 1], turned upright as its EXIF orientation says (the boxes are in these pixels)."""
    with Image.open(path) as image:
        return F.pil_to_tensor(ImageOps.exif_transpose(image).convert("RGB")).float() / 255.0


def detect(model, meta, paths, threshold=None, device="cpu", cross_class_iou=None):
    """COCO-style results: image_id (the position in paths, from 1), file_name, category_id, bbox [x, y, w, h], score.

    A box overlapping a higher-scored one of another class by cross_class_iou or more is dropped
    (model.json's value by default; 1 keeps every box)."""
    cutoff = meta.get("score_threshold", 0.3) if threshold is None else threshold
    overlap = meta.get("cross_class_iou", 1.0) if cross_class_iou is None else cross_class_iou
    results = []
    with torch.inference_mode():
        for image_id, path in enumerate(paths, start=1):
            image = read_image(path).to(device)
            # a model trained on tiles sees the image window by window, its detections merged
            out = detect_tiled(model, image, int(meta["tile"])) if meta.get("tile") else model([image])[0]
            out = drop_repeats_across_classes(out, float(overlap))
            for box, score, label in zip(out["boxes"].tolist(), out["scores"].tolist(), out["labels"].tolist()):
                if score < cutoff or not 0 < label <= len(meta["classes"]):
                    continue
                x0, y0, x1, y1 = box
                results.append({"image_id": image_id, "file_name": str(path), "label": meta["classes"][label - 1],
                                "category_id": meta["category_ids"][label - 1],
                                "bbox": [round(x0, 2), round(y0, 2), round(x1 - x0, 2), round(y1 - y0, 2)],
                                "score": round(score, 5)})
    return results


def main():
    parser = argparse.ArgumentParser(description="Boxes for images with this folder's detector.")
    parser.add_argument("images", nargs="+")
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument("--cross-class-iou", type=float, default=None,
                        help="drop a box overlapping a higher-scored one of another class by this IoU (1: keep every box)")
    parser.add_argument("--out", default="")
    parser.add_argument("--graph", action="store_true", help="run the exported graph (model.pt2 or model.onnx)")
    args = parser.parse_args()
    model, meta = load_graph() if args.graph else load()
    results = detect(model, meta, args.images, args.threshold, cross_class_iou=args.cross_class_iou)
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
'''


def write_program(out_dir: Path) -> None:
    shutil.copyfile(Path(__file__).with_name("networks.py"), out_dir / "detector_networks.py")
    atomic_write_text(out_dir / "predict.py", PROGRAM)
