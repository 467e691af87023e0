"""Does the default augmentation cost accuracy on small datasets of small images?

Generated data of a small kind: 10 shape classes, 1,400 JPEG images of
32 px (1,120 for training, 280 held out).  The small-cnn preset at
image_size 32 is trained through the engine with augmentation none, light,
standard (ImageNet-style random-resized crop + flip) and the default auto,
for 3, 5 and 10 epochs; the validation accuracy of each is printed.

    python bench/image_augmentation.py [--epochs 3 5 10] [--seeds 1] [--augmentations ...] [--quick] [--json]

The claim checked: for every epoch count, auto's accuracy >= none's
(``default_matches_none``).  The last line is a JSON object.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # trainlab_dev, the data generators: not installed
from pairs import bench_parser, emit, speaker  # noqa: E402
from trainlab_dev.image_samples import make_shapes_dataset  # noqa: E402

AUGMENTATIONS = ("none", "light", "standard", "auto")


def run(data: Path, out: Path, augmentation: str, epochs: int, seed: int) -> float:
    from trainlab.engine.scripting import RunRequest, run_training

    # Default checkpointing: the reported accuracy is that of the best epoch, as a user gets it.
    params = {"model": "small-cnn", "augmentation": augmentation, "epochs": epochs, "seed": seed, "image_size": 32,
              "device": "cpu", "val_fraction": 0.2}  # fmt: skip
    result = run_training(RunRequest(task="image-classification", data=str(data), params=params, out=str(out)))
    if not result.ok:
        raise SystemExit(f"run failed: {result.error}")
    return float(result.metrics["accuracy"])


def main() -> int:
    parser = bench_parser(__doc__, "1 epoch, augmentations none and auto, 40 images a class")
    parser.add_argument("--epochs", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--seeds", type=int, default=1, help="training seeds per setting (the data stay the same)")
    parser.add_argument("--augmentations", nargs="+", default=list(AUGMENTATIONS), choices=AUGMENTATIONS)
    args = parser.parse_args()
    per_class = 140
    if args.quick:
        args.epochs, args.seeds, args.augmentations, per_class = [1], 1, ["none", "auto"], 40
    say = speaker(args)
    from trainlab_plugins.image.transforms import resolve_augmentation

    results: dict[str, dict[str, list[float]]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["TRAINLAB_HOME"] = str(tmp / "home")
        data = make_shapes_dataset(tmp / "data", classes=10, per_class=per_class, size=32, seed=3)
        for epochs in args.epochs:
            results[str(epochs)] = {}
            for augmentation in args.augmentations:
                scores = []
                for seed in range(args.seeds):
                    out = tmp / f"run-{epochs}-{augmentation}-{seed}"
                    scores.append(run(data, out, augmentation, epochs, seed))
                results[str(epochs)][augmentation] = scores
                label = augmentation
                if augmentation == "auto":
                    label += f" (= {resolve_augmentation('auto', 'auto', epochs).name})"
                say(f"{epochs:>2} epochs  {label:<14} val accuracy {statistics.mean(scores):.4f}  {scores}")
    means = {e: {a: statistics.mean(s) for a, s in r.items()} for e, r in results.items()}
    summary = {
        "benchmark": "image_augmentation",
        "data": f"10 classes x {per_class} generated shapes, 32 px JPEG; {8 * per_class} train / {2 * per_class} val",
        "model": "small-cnn, image_size 32, batch 64, lr 0.003",
        "mean_val_accuracy": means,
        "default_matches_none": all(m["auto"] >= m["none"] for m in means.values() if "auto" in m and "none" in m),
        "runs": results,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
    }
    return emit("image_augmentation", args, summary)


if __name__ == "__main__":
    raise SystemExit(main())
