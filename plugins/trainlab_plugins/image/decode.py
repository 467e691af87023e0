"""Turning any image file PIL can read into an 8-bit RGB image.

Lab images come as grayscale, 16-bit, palette, RGBA and CMYK files with
EXIF orientation tags; the model always sees RGB the right way up.
"""

from __future__ import annotations

from PIL import Image, UnidentifiedImageError

EXIF_ORIENTATION = 0x0112
TRANSPARENT_BACKGROUND = (255, 255, 255)
# The EXIF orientation values and the transposition that makes each upright
# (the table ImageOps.exif_transpose uses).
_ORIENTATION_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


class UnreadableImage(Exception):
    """A file that passed the header scan but cannot be decoded."""


def load_rgb(path: str, min_side: int | None = None) -> Image.Image:
    """Decode ``path`` as an upright 8-bit RGB image.

    ``min_side``: the smallest shorter side the caller needs; large JPEGs are
    then decoded at a reduced scale (libjpeg's DCT scaling), which is several
    times faster than decoding in full and resizing.
    """
    try:
        with Image.open(path) as image:
            if min_side and image.format == "JPEG":
                image.draft("RGB", (min_side, min_side))
            orientation = image.getexif().get(EXIF_ORIENTATION, 1)
            image.load()
            rgb = to_rgb(image)
    # the data check's words for the two common cases (folder.read_header), not PIL's
    # "UnidentifiedImageError: cannot identify image file '...'" that repeated the path
    except UnidentifiedImageError:
        raise UnreadableImage("not a readable image") from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        if isinstance(exc, OSError) and "truncated" in str(exc):
            raise UnreadableImage("truncated image") from None
        raise UnreadableImage(f"{type(exc).__name__}: {exc}") from None
    method = _ORIENTATION_TRANSPOSE.get(orientation)
    return rgb.transpose(method) if method is not None else rgb


def to_rgb(image: Image.Image) -> Image.Image:
    """8-bit RGB from any PIL mode; transparency is laid over white."""
    mode = image.mode
    if mode == "RGB":
        return image
    if mode.startswith("I") or mode == "F":
        return _wide_gray_to_rgb(image)
    if mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
        mode = "RGBA"
    if mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, TRANSPARENT_BACKGROUND + (255,))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def _wide_gray_to_rgb(image: Image.Image) -> Image.Image:
    """16-bit and 32-bit grayscale to 8 bits without clipping at 255.

    PIL's own convert() clips 16-bit values to 255, which turns most
    microscopy and medical images white.  16-bit modes are scaled by 1/257;
    32-bit integer images are scaled the same when their values exceed 8 bits;
    float images are stretched to their own min..max.
    """
    import numpy as np

    array = np.asarray(image)
    if image.mode == "F":
        low, high = float(np.nanmin(array)), float(np.nanmax(array))
        scaled = (array - low) / (high - low) * 255.0 if high > low else np.zeros_like(array)
        gray = np.nan_to_num(scaled).clip(0, 255).astype(np.uint8)
    elif image.mode.startswith("I;16") or int(array.max(initial=0)) > 255:
        gray = (array.astype(np.float32) / 257.0).round().clip(0, 255).astype(np.uint8)
    else:
        gray = array.clip(0, 255).astype(np.uint8)
    return Image.fromarray(gray, mode="L").convert("RGB")
