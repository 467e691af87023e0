"""Object detection: the time to a model's mAP, TrainLab's defaults against the plain torchvision script a user would write.

Data: generated shapes with COCO boxes (``scripts/trainlab_dev/detection_samples.py``:
``--train`` and ``--val`` images of ``--size`` px, one to four shapes each).

(a) the plain script, written as torchvision's detection tutorial writes
    it: a ``Dataset`` returning an image tensor and a target dict, a
    ``DataLoader`` collating with ``tuple(zip(*batch))``, the same detector
    TrainLab builds (``--model``, from ``trainlab_plugins.detection.networks``,
    random weights), SGD at lr 0.005, momentum 0.9, weight decay 0.0005,
    batch 4, no augmentation, ``--epochs`` epochs; COCO mAP@0.5:0.95
    (torchmetrics) after each epoch.
(b) TrainLab: ``run_training`` on ``object-detection`` with its defaults
    (``device=cpu``, ``model=--model``, ``image_size=--size`` and ``--set``
    values), the same epochs (run to the end: its model folder is what the
    inference figure runs); its time to the target is summed up to the
    epoch whose validation mAP first reached it.

The target is the script's final mAP. Both sides count training time only
(each epoch's start to its evaluation): ``ratio`` = TrainLab's time to the
target over the script's time for all its epochs (goal <= 0.67), median over
``--pairs`` alternating pairs.  ``inference``: images per second of the
trained TrainLab model through ``trainlab predict``'s predictor against the
same network run by hand on the same decoded images (goal >= 0.98x).

    python bench/detection_time_to_map.py [--pairs 1] [--epochs 10] [--model small-fcos] [--set KEY=VALUE ...] [--quick] [--json]

The last line printed is one JSON object.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch
from pairs import bench_parser, emit, ratio_summary, run_pairs, speaker

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # trainlab_dev, the data generators: not installed


def plain_script(data: Path, model_name: str, size: int, epochs: int, classes: int) -> dict:
    """The tutorial's loop, on the COCO folder: train, then mAP after each epoch."""
    import json

    from PIL import Image
    from torchmetrics.detection import MeanAveragePrecision
    from torchvision.transforms.v2 import functional as F
    from trainlab_plugins.detection.networks import build_detector

    class Shapes(torch.utils.data.Dataset):
        def __init__(self, split):
            coco = json.loads((data / f"{split}.json").read_text())
            ids = {c["id"]: i + 1 for i, c in enumerate(sorted(coco["categories"], key=lambda c: c["id"]))}
            self.images = coco["images"]
            self.boxes = {i["id"]: [] for i in self.images}
            for a in coco["annotations"]:
                x, y, w, h = a["bbox"]
                self.boxes[a["image_id"]].append(([x, y, x + w, y + h], ids[a["category_id"]]))
            self.folder = data / split

        def __len__(self):
            return len(self.images)

        def __getitem__(self, i):
            entry = self.images[i]
            image = F.to_dtype(F.pil_to_tensor(Image.open(self.folder / entry["file_name"]).convert("RGB")), torch.float32, scale=True)
            found = self.boxes[entry["id"]]
            target = {"boxes": torch.tensor([b for b, _ in found], dtype=torch.float32).reshape(-1, 4),
                      "labels": torch.tensor([c for _, c in found], dtype=torch.int64)}  # fmt: skip
            return image, target

    def collate(batch):
        return tuple(zip(*batch))

    torch.manual_seed(0)
    model = build_detector(model_name, classes, size)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.005, momentum=0.9, weight_decay=0.0005)
    train = torch.utils.data.DataLoader(Shapes("train"), batch_size=4, shuffle=True, collate_fn=collate)
    val = torch.utils.data.DataLoader(Shapes("val"), batch_size=4, collate_fn=collate)
    out = []
    for _ in range(epochs):
        model.train()
        wall = time.perf_counter()
        for images, targets in train:
            loss = sum(model(list(images), list(targets)).values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        train_s = time.perf_counter() - wall
        model.eval()
        metric = MeanAveragePrecision(box_format="xyxy", backend="faster_coco_eval")
        with torch.no_grad():
            for images, targets in val:
                metric.update(model(list(images)), list(targets))
        out.append({"train_s": train_s, "map": float(metric.compute()["map"])})
    return {"epochs": out}


def trainlab_run(data: Path, out: Path, params: dict) -> dict:
    import trainlab
    from trainlab.engine.scripting import RunRequest, run_training

    epochs: list[dict] = []

    class Probe(trainlab.Callback):
        def on_epoch_start(self, state):
            self._wall = time.perf_counter()

        def on_eval_start(self, state):
            epochs.append({"train_s": time.perf_counter() - self._wall})

        def on_eval_end(self, state, result):
            epochs[-1]["map"] = result.metrics.get("map")

    result = run_training(RunRequest(task="object-detection", data=str(data), params=params, out=str(out)),
                          callbacks=[Probe()])  # fmt: skip
    return {"epochs": epochs, "status": result.status}


def inference(run_dir: Path, images: list[str], repeats: int) -> dict:
    """Images per second: TrainLab's predictor against the same network called by hand on decoded images."""
    from trainlab_plugins.detection.dataset import decode
    from trainlab_plugins.detection.predictor import load_detector, make_predictor

    predict = make_predictor(run_dir / "model", torch.device("cpu"))
    model, _ = load_detector(run_dir / "model", torch.device("cpu"))
    predict(images[:2], 1)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        predict(images, 1)
    ours = repeats * len(images) / (time.perf_counter() - start)
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(repeats):
            for i in range(0, len(images), 8):
                model([decode(p).float() / 255.0 for p in images[i : i + 8]])
    by_hand = repeats * len(images) / (time.perf_counter() - start)
    return {"trainlab_images_per_s": round(ours, 2), "by_hand_images_per_s": round(by_hand, 2), "ratio": round(ours / by_hand, 4)}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "12 train and 4 val images of 48 px, 2 epochs, one pair")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--train", type=int, default=240)
    parser.add_argument("--val", type=int, default=60)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--model", default="small-fcos")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if args.quick:
        args.train, args.val, args.size, args.epochs, args.pairs = 12, 4, 48, 2, 1
    say = speaker(args)
    from trainlab_dev.detection_samples import CLASSES, write_coco

    sets = dict(item.split("=", 1) for item in args.set)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = write_coco(root / "shapes", {"train": args.train, "val": args.val}, size=args.size, seed=0)
        params = {"device": "cpu", "model": args.model, "image_size": str(args.size), "epochs": str(args.epochs), **sets}
        state: dict = {"target": None, "runs": 0}

        def script() -> dict:
            run = plain_script(data, args.model, args.size, args.epochs, len(CLASSES))
            state["target"] = run["epochs"][-1]["map"] if state["target"] is None else state["target"]
            return run

        def ours() -> dict:
            state["runs"] += 1
            return trainlab_run(data, root / f"run{state['runs']}", params)

        runs = run_pairs({"script": script, "trainlab": ours}, args.pairs,
                         after=lambda pair, side, r: say(f"pair {pair} {side}: " + ", ".join(f"{e['map']:.3f}" for e in r["epochs"])))  # fmt: skip
        target = state["target"]
        script_times = [sum(e["train_s"] for e in r["epochs"]) for r in runs["script"]]
        reached = []
        for run in runs["trainlab"]:
            total, hit = 0.0, None
            for epoch in run["epochs"]:
                total += epoch["train_s"]
                if epoch["map"] is not None and epoch["map"] >= target:
                    hit = total
                    break
            reached.append(hit)
        pairs = [(a, b) for a, b in zip(reached, script_times) if a is not None]
        figures = {
            "target_map": target,
            "ratio": ratio_summary([a for a, _ in pairs], [b for _, b in pairs]),
            "reached_target": f"{len(pairs)} of {len(reached)}",
            "script_final_map": [r["epochs"][-1]["map"] for r in runs["script"]],
            "trainlab_map_by_epoch": [[e["map"] for e in r["epochs"]] for r in runs["trainlab"]],
            "goal_ratio": 0.67,
        }
        images = sorted(str(p) for p in (data / "val").glob("*.jpg"))
        figures["inference"] = {**inference(root / f"run{state['runs']}", images, 1 if args.quick else 3), "goal_ratio": 0.98}
        say(f"ratio {figures['ratio'].get('median')} (goal <= 0.67); inference {figures['inference']['ratio']} (goal >= 0.98)")
    return emit("detection_time_to_map", args, figures)


if __name__ == "__main__":
    sys.exit(main())
