"""bench/scale.py's own arithmetic and data: the growth exponent it prints, and what it generates."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from helpers import ROOT

BENCH = ROOT / "bench"


@pytest.fixture(scope="module")
def scale():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("scale_bench", BENCH / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_growth_exponent_reads_linear_quadratic_and_flat(scale):
    sizes = [10_000, 100_000, 1_000_000]
    assert scale.exponent(sizes, [0.5 * s for s in sizes]) == pytest.approx(1.0)
    assert scale.exponent(sizes, [s**2 for s in sizes]) == pytest.approx(2.0)
    assert scale.exponent(sizes, [1100.0, 1100.0, 1100.0]) == pytest.approx(0.0)
    assert scale.exponent(sizes[:1], [3.0]) is None  # one point has no slope


def test_sizes_on_the_command_line(scale):
    assert scale.parse_sizes([]) == scale.DEFAULT_SIZES
    assert scale.parse_sizes(["text=1000,2_000"]) == {"text": [1000, 2000]}
    with pytest.raises(SystemExit, match="--sizes"):
        scale.parse_sizes(["audio=5"])


def test_the_generated_text_and_images_are_data_the_tasks_read(scale, tmp_path):
    from trainlab.engine.prepare import prepare_task

    text = scale.make_text(tmp_path / "rows.csv", 400)
    prepared = prepare_task("text-classification", str(text), {"device": "cpu"})
    assert sum(prepared.summary.counts["train"].values()) + sum(prepared.summary.counts["val"].values()) == 400
    assert sorted(prepared.summary.label_names) == sorted(scale.LABELS)

    images = scale.make_images(tmp_path / "images", 200)
    files = list(images.rglob("*.png"))
    assert len(files) == 200 and {f.stat().st_ino for f in files} <= {f.stat().st_ino for f in (tmp_path / "images-originals").iterdir()}
    prepared = prepare_task("image-classification", str(images), {"device": "cpu"})
    assert sorted(prepared.summary.label_names) == sorted(scale.LABELS)
