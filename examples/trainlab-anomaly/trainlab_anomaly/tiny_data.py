"""Rows on a plane in four dimensions (normal) and rows off it (anomalies): learnable by a 2-wide code."""

import csv
import random
from pathlib import Path


def make_rows(path, rows: int = 96, anomaly_share: float = 0.15, seed: int = 0) -> Path:
    rng = random.Random(seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["x0", "x1", "x2", "x3", "anomaly"])
        for _ in range(rows):
            a, b = rng.gauss(0, 1), rng.gauss(0, 1)
            if rng.random() < anomaly_share:
                values, flag = [rng.uniform(-3, 3) for _ in range(4)], 1
            else:
                values, flag = [a, b, a + b + rng.gauss(0, 0.05), a - b + rng.gauss(0, 0.05)], 0
            writer.writerow([f"{v:.4f}" for v in values] + [flag])
    return path


if __name__ == "__main__":  # writes the bundled sample
    print(make_rows(Path(__file__).parent / "sample" / "rows.csv", rows=400, seed=1))
