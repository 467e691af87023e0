"""Series to train on: seasonal with a trend and a little noise (the sample and the tests)."""

import math
import random
from pathlib import Path


def make_series(path, names=("north", "south", "east"), length=120, seed=0, noise=0.1) -> Path:
    rng = random.Random(seed)
    lines = ["series,value"]
    for k, name in enumerate(names):
        level, period = 20 + 10 * k, 12 + 4 * k
        for t in range(length):
            value = level + 0.05 * t + 3 * math.sin(2 * math.pi * t / period) + rng.gauss(0, noise)
            lines.append(f"{name},{value:.3f}")
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    make_series(Path(__file__).with_name("sample") / "series.csv")
