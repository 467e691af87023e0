"""Object detection: the time to a model's mAP, TrainLab's defaults against the plain torchvision script a user would write.

Data: generated shapes with COCO boxes (``scripts/trainlab_dev/detection_samples.py``:
``--train`` and ``--val`` images of ``--size`` px, one to four shapes each).

(a) the plain script, written as torchvision's detection tutorial writes
    it: a ``Dataset`` returning an image tensor and a target dict, a
    ``DataLoader`` collating with ``tuple(zip(*batch))``, the same detector
    TrainLab builds (what ``--model`` resolves to on a CPU, from ``trainlab_plugins.detection.networks``,
    random weights), SGD at lr 0.005, momentum 0.9, weight decay 0.0005,
    batch 4, no augmentation, ``--epochs`` epochs; COCO mAP@0.5:0.95
    (torchmetrics) after each epoch.
(b) TrainLab: ``run_training`` on ``object-detection`` with its defaults
    (``device=cpu``, ``model=--model``, default auto, ``image_size`` auto, which is
    ``--size`` up to 320, and ``--set`` values), the same epochs (run to the end: its model folder is what the
    inference figure runs); its time to the target is summed up to the
    epoch whose validation mAP first reached it.

The target is the script's final mAP. Both sides count training time only
(each epoch's start to its evaluation): ``ratio`` = TrainLab's time to the
target over the script's time for all its epochs (goal <= 0.67), median over
``--pairs`` alternating pairs; ``ratio_cpu`` the same in process CPU seconds
(steadier on a shared machine).  ``inference``: images per second of the
trained TrainLab model through ``trainlab predict``'s predictor against the
same network run by hand on the same decoded images (goal >= 0.98x).

    python bench/detection_time_to_map.py [--pairs 1] [--epochs 10] [--model auto] [--set KEY=VALUE ...] [--quick] [--json]

The last line printed is one JSON object.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from pairs import Clock, bench_parser, emit, order, ratio_summary, run_pairs, speaker

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
    # the thresholds TrainLab's evaluation uses (torchvision's FCOS keeps boxes from 0.2): the same model scored the same way
    model = build_detector(model_name, classes, size, score_thresh=0.05, detections_per_img=100)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.005, momentum=0.9, weight_decay=0.0005)
    train = torch.utils.data.DataLoader(Shapes("train"), batch_size=4, shuffle=True, collate_fn=collate)
    val = torch.utils.data.DataLoader(Shapes("val"), batch_size=4, collate_fn=collate)
    out = []
    for _ in range(epochs):
        model.train()
        wall, cpu = time.perf_counter(), time.process_time()
        for images, targets in train:
            loss = sum(model(list(images), list(targets)).values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        train_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
        model.eval()
        metric = MeanAveragePrecision(box_format="xyxy", backend="faster_coco_eval")
        with torch.no_grad():
            for images, targets in val:
                metric.update(model(list(images)), list(targets))
        out.append({"train_s": train_s, "cpu_s": cpu_s, "map": float(metric.compute()["map"])})
    return {"epochs": out}


def trainlab_run(data: Path, out: Path, params: dict) -> dict:
    import trainlab
    from trainlab.engine.scripting import RunRequest, run_training

    epochs: list[dict] = []

    class Probe(trainlab.Callback):
        def on_epoch_start(self, state):
            self._wall, self._cpu = time.perf_counter(), time.process_time()

        def on_eval_start(self, state):
            epochs.append({"train_s": time.perf_counter() - self._wall, "cpu_s": time.process_time() - self._cpu})

        def on_eval_end(self, state, result):
            epochs[-1]["map"] = result.metrics.get("map")

    result = run_training(RunRequest(task="object-detection", data=str(data), params=params, out=str(out)),
                          callbacks=[Probe()])  # fmt: skip
    return {"epochs": epochs, "status": result.status}


def inference(run_dir: Path, images: list[str], repeats: int) -> dict:
    """Images per second: TrainLab's predictor against the same network called by hand on decoded images,
    in alternating rounds (ABBA), each round every image once."""
    from trainlab_plugins.detection.dataset import decode
    from trainlab_plugins.detection.predictor import load_detector, make_predictor

    predict = make_predictor(run_dir / "model", torch.device("cpu"))
    model, _ = load_detector(run_dir / "model", torch.device("cpu"))

    def ours() -> None:
        predict(images, 1)

    def by_hand() -> None:
        with torch.inference_mode():
            for i in range(0, len(images), 8):
                model([decode(p).float() / 255.0 for p in images[i : i + 8]])

    sides = {"trainlab": ours, "by_hand": by_hand}
    for run in sides.values():  # warm-up
        run()
    clocks: dict[str, list[Clock]] = {name: [] for name in sides}
    for round_ in range(2 * repeats):
        for name in order(round_, list(sides)):
            with Clock() as clock:
                sides[name]()
            clocks[name].append(clock)
    rates = {name: [len(images) / c.wall for c in got] for name, got in clocks.items()}
    cpu = {name: [len(images) / c.cpu for c in got] for name, got in clocks.items()}
    return {
        "trainlab_images_per_s": round(statistics.median(rates["trainlab"]), 2),
        "by_hand_images_per_s": round(statistics.median(rates["by_hand"]), 2),
        "ratio": ratio_summary(rates["trainlab"], rates["by_hand"])["median"],
        "ratio_cpu": ratio_summary(cpu["trainlab"], cpu["by_hand"])["median"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "12 train and 4 val images of 48 px, 2 epochs, one pair")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--train", type=int, default=240)
    parser.add_argument("--val", type=int, default=60)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--model", default="auto", help="TrainLab's model; the script builds what it resolves to on the CPU")
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
        # image_size is left at its default (auto: the images' own --size, capped at 320 on a CPU), as the script's
        params = {"device": "cpu", "model": args.model, "epochs": str(args.epochs), **sets}
        state: dict = {"target": None, "runs": 0}

        from trainlab_plugins.detection.task import resolve_architecture

        arch = resolve_architecture(args.model, cuda=False)

        def script() -> dict:
            run = plain_script(data, arch, args.size, args.epochs, len(CLASSES))
            state["target"] = run["epochs"][-1]["map"] if state["target"] is None else state["target"]
            return run

        def ours() -> dict:
            state["runs"] += 1
            return trainlab_run(data, root / f"run{state['runs']}", params)

        runs = run_pairs({"script": script, "trainlab": ours}, args.pairs,
                         after=lambda pair, side, r: say(f"pair {pair} {side}: " + ", ".join(f"{e['map']:.3f}" for e in r["epochs"])))  # fmt: skip
        target = state["target"]
        def time_to_target(clock: str) -> tuple[list, list]:
            script_times = [sum(e[clock] for e in r["epochs"]) for r in runs["script"]]
            reached = []
            for run in runs["trainlab"]:
                total, hit = 0.0, None
                for epoch in run["epochs"]:
                    total += epoch[clock]
                    if epoch["map"] is not None and epoch["map"] >= target:
                        hit = total
                        break
                reached.append(hit)
            return reached, script_times

        reached, script_times = time_to_target("train_s")
        pairs = [(a, b) for a, b in zip(reached, script_times) if a is not None]
        cpu_reached, cpu_script = time_to_target("cpu_s")
        cpu_pairs = [(a, b) for a, b in zip(cpu_reached, cpu_script) if a is not None]
        figures = {
            "target_map": target,
            "ratio": ratio_summary([a for a, _ in pairs], [b for _, b in pairs]),
            "ratio_cpu": ratio_summary([a for a, _ in cpu_pairs], [b for _, b in cpu_pairs]),
            "script_train_s": [round(t, 1) for t in script_times],
            "trainlab_train_s": [round(sum(e["train_s"] for e in r["epochs"]), 1) for r in runs["trainlab"]],
            "trainlab_s_to_target": [None if t is None else round(t, 1) for t in reached],
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
