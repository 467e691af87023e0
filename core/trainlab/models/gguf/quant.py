"""Q8_0 in NumPy: ggml's 8-bit blocks, what ``--quant q8_0`` writes.

A row is cut into blocks of 32 weights; each block is stored as its scale
(an IEEE half, little-endian) followed by 32 signed bytes, 34 bytes in all,
and a weight reads back as ``scale * q``.  The scale is the block's largest
magnitude over 127, rounded *up* to the next half: dividing by the stored
scale (not by the exact one) keeps every ``|q| <= 127`` without clipping,
so each weight is within half a scale of what it was.
"""

from __future__ import annotations

import numpy as np

BLOCK = 32
BLOCK_BYTES = 2 + BLOCK  # fp16 scale + 32 int8


def quantizable(shape: tuple[int, ...]) -> bool:
    """Whether a tensor's rows cut into whole blocks (ggml quantises along the last axis)."""
    return len(shape) >= 2 and shape[-1] % BLOCK == 0


def q8_0_scales(blocks: np.ndarray) -> np.ndarray:
    """The stored (fp16) scale of each block of ``blocks`` (``(..., 32)`` float32)."""
    exact = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)
    half = exact.astype(np.float16)
    low = half.astype(np.float32) < exact
    half[low] = np.nextafter(half[low], np.float16(np.inf))
    return half


def quantize_q8_0(weights: np.ndarray) -> np.ndarray:
    """``weights`` (float, last axis a multiple of 32) as Q8_0 bytes: shape ``(..., n / 32 * 34)`` uint8."""
    weights = np.ascontiguousarray(weights, dtype=np.float32)
    if not quantizable(weights.shape):
        raise ValueError(f"q8_0 needs rows of a multiple of {BLOCK} weights, not shape {weights.shape}")
    blocks = weights.reshape(-1, BLOCK)
    scales = q8_0_scales(blocks)
    wide = scales.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(wide == 0, 0.0, blocks / wide)
    # round half away from zero, as ggml's roundf
    q = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int8)
    out = np.empty((blocks.shape[0], BLOCK_BYTES), dtype=np.uint8)
    out[:, :2] = scales.astype("<f2").view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.reshape(*weights.shape[:-1], weights.shape[-1] // BLOCK * BLOCK_BYTES)


def dequantize_q8_0(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q8_0 bytes back to float32 weights (``(..., n)``), and each block's scale (``(..., n / 32)``)."""
    data = np.ascontiguousarray(data, dtype=np.uint8)
    blocks = data.reshape(-1, BLOCK_BYTES)
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    n = data.shape[-1] // BLOCK_BYTES * BLOCK
    weights = (scales * q).reshape(*data.shape[:-1], n)
    return weights, scales.reshape(*data.shape[:-1], n // BLOCK)
