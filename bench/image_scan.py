"""The header scan on many files: how long preparing a 100,000-image folder takes.

Builds ``--files`` image files in 10 class folders as hard links to 50
distinct generated JPEG and PNG images (so the folder costs no disk space),
then times ``read_dataset`` (directory walk + PIL header reads + stratified
split).  The files are in the page cache after they are made, so this
measures the scan's own cost, not a cold disk.

    python bench/image_scan.py [--files 100000] [--quick] [--json]

The last line is a JSON object.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from pairs import bench_parser, emit, speaker
from trainlab_plugins.image.folder import read_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # trainlab_dev, the data generators: not installed
from trainlab_dev.image_samples import make_shapes_dataset


def main() -> int:
    parser = bench_parser(__doc__, "10,000 files")
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args()
    if args.quick:
        args.files = 10_000
    say = speaker(args)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        originals = sorted(make_shapes_dataset(tmp / "originals", classes=5, per_class=5, size=96).rglob("*.jpg"))
        for path in list(originals):
            png = path.with_suffix(".png")
            from PIL import Image

            Image.open(path).save(png)
            originals.append(png)
        root = tmp / "data"
        classes = 10
        for c in range(classes):
            (root / f"class_{c:02d}").mkdir(parents=True)
        for i in range(args.files):
            source = originals[i % len(originals)]
            os.link(source, root / f"class_{i % classes:02d}" / f"img_{i:06d}{source.suffix}")
        start = time.perf_counter()
        found = read_dataset(str(root), val_fraction=0.2, seed=0)
        seconds = time.perf_counter() - start
    images = sum(len(v) for v in found.items.values())
    say(f"{images} images scanned in {seconds:.2f} s ({images / seconds:.0f} files/s)")
    return emit("image_scan", args, {"benchmark": "image_scan", "files": args.files, "images": images, "seconds": round(seconds, 2),
                                     "files_per_second": round(images / seconds), "cpu_count": os.cpu_count(),
                                     "load_average_1min_at_end": round(os.getloadavg()[0], 2)})  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
