"""Render the TrainLab icon SVGs in resources/trainlab_resources/icons/ into the PNG, ICO and ICNS files beside them.

Run after editing an SVG, then commit the outputs::

    .venv/bin/python scripts/render_icons.py

A developer tool, never imported by TrainLab (so it lives here, not in the
package data under resources/): it uses Qt's own SVG renderer
(PySide6 is a TrainLab dependency, so nothing else needs installing) and
Pillow for the Windows ``.ico`` and macOS ``.icns`` containers.

Sizes up to 32 px come from ``trainlab-small.svg``, a redrawing on a 16 px
grid with thicker strokes; larger ones from ``trainlab.svg``. Desktop icon
themes do the same, because a scaled-down large drawing turns to mush at 16 px.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

ICON_DIR = Path(__file__).resolve().parents[1] / "resources" / "icons"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
SMALL_UP_TO = 32
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)  # 256 is the largest an .ico holds
# The slots an .icns holds (Retina "@2x" slots reuse the doubled sizes).
ICNS_SIZES = (32, 64, 128, 256, 512, 1024)


def png_path(size: int) -> Path:
    return ICON_DIR / f"trainlab-{size}.png"


def render_png(svg: Path, size: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg}: not a valid SVG for QSvgRenderer")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.convertToFormat(QImage.Format.Format_ARGB32).save(buffer, "PNG")
    buffer.close()
    return bytes(data)


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication
    from PIL import Image

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841  (QImage text/fonts need one)
    images: dict[int, Image.Image] = {}
    for size in PNG_SIZES:
        svg = ICON_DIR / ("trainlab-small.svg" if size <= SMALL_UP_TO else "trainlab.svg")
        data = render_png(svg, size)
        png_path(size).write_bytes(data)
        images[size] = Image.open(io.BytesIO(data)).convert("RGBA")
        print(f"wrote {png_path(size).name}")

    # Pillow would otherwise downscale the first image for every size;
    # append_images hands it the hand-tuned small renderings instead.
    largest_ico = images[max(ICO_SIZES)]
    largest_ico.save(
        ICON_DIR / "trainlab.ico",
        sizes=[(s, s) for s in ICO_SIZES],
        append_images=[images[s] for s in ICO_SIZES if s != max(ICO_SIZES)],
    )
    print("wrote trainlab.ico")
    # 1024 px is only needed inside the .icns (512 @2x); not kept as a PNG.
    largest_icns = Image.open(io.BytesIO(render_png(ICON_DIR / "trainlab.svg", max(ICNS_SIZES)))).convert("RGBA")
    largest_icns.save(
        ICON_DIR / "trainlab.icns",
        append_images=[images[s] for s in ICNS_SIZES if s != max(ICNS_SIZES)],
    )
    print("wrote trainlab.icns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
