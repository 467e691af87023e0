"""Which transformers decoders become which llama.cpp architectures, tensor by tensor.

The names are llama.cpp's (gguf-py's ``TENSOR_NAMES``): ``token_embd``,
``blk.N.attn_q`` and so on.  llama.cpp rotates Llama-style models'
queries and keys in interleaved pairs (its "normal" rope), where
transformers rotates the two halves of each head (``rotate_half``); the
``llama`` architecture therefore stores ``q_proj`` and ``k_proj`` with the
rows of each head reordered (``permute_rotary``), as llama.cpp's own
converter does.  Qwen2/3, Phi-3 and Gemma run with llama.cpp's "neox" rope,
which is transformers' order: their weights go as they are.  Gemma's
RMSNorm multiplies by ``1 + weight``; llama.cpp's by ``weight``: its norms
are stored plus one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from trainlab.api.errors import UsageError

Transform = Callable[[np.ndarray], np.ndarray]

_NORMS = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
}
_ATTENTION = {
    **{f"self_attn.{p}_proj.{w}": f"attn_{p}.{w}" for p in "qkv" for w in ("weight", "bias")},
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.o_proj.bias": "attn_output.bias",
}
_MLP = {
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
_GLOBAL = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
_IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)


@dataclass(frozen=True)
class Architecture:
    """How one family of transformers causal LMs maps onto one llama.cpp architecture."""

    name: str  # llama.cpp's architecture name (general.architecture)
    title: str  # the families it covers, for people
    layer_tensors: Mapping[str, str]  # name inside model.layers.N. -> name inside blk.N.
    permute_rotary: bool = False  # llama.cpp's "normal" rope: q and k rows reordered per head
    norms_plus_one: bool = False  # Gemma's RMSNorm scales by 1 + weight
    tied_output: bool = False  # always uses the embedding as the output layer (no output.weight)
    rope_scalings: tuple[str, ...] = ("default", "linear", "yarn")


ARCHITECTURES: dict[str, Architecture] = {
    # transformers' model_type -> the llama.cpp architecture it is written as
    "llama": Architecture("llama", "Llama 2/3.x", {**_NORMS, **_ATTENTION, **_MLP}, permute_rotary=True,
                          rope_scalings=("default", "linear", "yarn", "llama3")),
    "mistral": Architecture("llama", "Mistral", {**_NORMS, **_ATTENTION, **_MLP}, permute_rotary=True),
    "qwen2": Architecture("qwen2", "Qwen2/2.5", {**_NORMS, **_ATTENTION, **_MLP}),
    "qwen3": Architecture(
        "qwen3", "Qwen3",
        {**_NORMS, **_ATTENTION, **_MLP, "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight"},
    ),
    "phi3": Architecture(
        "phi3", "Phi-3/Phi-4",
        {**_NORMS, "self_attn.qkv_proj.weight": "attn_qkv.weight", "self_attn.o_proj.weight": "attn_output.weight",
         "mlp.gate_up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"},
    ),
    "gemma": Architecture("gemma", "Gemma (1)", {**_NORMS, **_ATTENTION, **_MLP}, norms_plus_one=True, tied_output=True),
}


def architecture(config: Mapping[str, Any], where: str) -> Architecture:
    """The mapping for a model's ``config.json``; a UsageError names what is supported."""
    model_type = str(config.get("model_type") or "")
    arch = ARCHITECTURES.get(model_type)
    if arch is None:
        known = ", ".join(f"{a.title} ({t})" for t, a in ARCHITECTURES.items())
        raise UsageError(f"{where}: GGUF export does not know model_type {model_type or '(none)'!r}; it writes {known}")
    return arch


def permute_rotary(weights: np.ndarray, heads: int) -> np.ndarray:
    """Rows of each head from transformers' half-split rotary order to llama.cpp's interleaved pairs."""
    rows = weights.shape[0]
    return weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def unpermute_rotary(weights: np.ndarray, heads: int) -> np.ndarray:
    """``permute_rotary`` undone (what a reader compares with the model's own weights)."""
    rows = weights.shape[0]
    return weights.reshape(heads, rows // heads // 2, 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


@dataclass(frozen=True)
class Hyper:
    """The hyper-parameters llama.cpp reads, from a ``config.json``."""

    context_length: int
    embedding_length: int
    block_count: int
    feed_forward_length: int
    head_count: int
    head_count_kv: int
    head_dim: int
    rope_dimensions: int
    rope_theta: float
    rms_eps: float
    vocab_size: int
    rope: dict[str, Any] = field(default_factory=dict)  # the scaling: rope_type, factor, ...
    sliding_window: int = 0


def rope_settings(config: Mapping[str, Any]) -> tuple[float, dict[str, Any]]:
    """(rope theta, scaling) from a config of transformers 4 (``rope_theta``, ``rope_scaling``) or 5 (``rope_parameters``)."""
    params = config.get("rope_parameters") if isinstance(config.get("rope_parameters"), dict) else {}
    scaling = config.get("rope_scaling") if isinstance(config.get("rope_scaling"), dict) else {}
    merged = {**params, **scaling}
    theta = float(config.get("rope_theta") or merged.get("rope_theta") or 10000.0)
    kind = str(merged.get("rope_type") or merged.get("type") or "default")
    return theta, {**merged, "rope_type": kind}


def hyperparameters(config: Mapping[str, Any], arch: Architecture, where: str) -> Hyper:
    try:
        hidden = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        layers = int(config["num_hidden_layers"])
        ffn = int(config["intermediate_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{where}: config.json lacks {exc} (needed for GGUF)") from None
    head_dim = int(config.get("head_dim") or hidden // heads)
    rotary = int(head_dim * float(config.get("partial_rotary_factor") or 1.0))
    theta, rope = rope_settings(config)
    if rope["rope_type"] not in arch.rope_scalings:
        raise UsageError(
            f"{where}: GGUF export does not write rope scaling {rope['rope_type']!r} for {arch.title} "
            f"(it writes {', '.join(arch.rope_scalings)})"
        )
    eps = config.get("rms_norm_eps") or config.get("layer_norm_eps") or 1e-6
    return Hyper(
        context_length=int(config.get("max_position_embeddings") or 2048),
        embedding_length=hidden,
        block_count=layers,
        feed_forward_length=ffn,
        head_count=heads,
        head_count_kv=int(config.get("num_key_value_heads") or heads),
        head_dim=head_dim,
        rope_dimensions=rotary,
        rope_theta=theta,
        rms_eps=float(eps),
        vocab_size=int(config.get("vocab_size") or 0),
        rope=rope,
        sliding_window=int(config.get("sliding_window") or 0) if arch.name == "phi3" else 0,
    )


def llama3_rope_factors(hyper: Hyper) -> np.ndarray:
    """Llama 3.1's frequency-dependent rope scaling as llama.cpp's ``rope_freqs`` tensor (one factor per pair)."""
    rope = hyper.rope
    factor = float(rope.get("factor", 8.0))
    low = float(rope.get("low_freq_factor", 1.0))
    high = float(rope.get("high_freq_factor", 4.0))
    original = float(rope.get("original_max_position_embeddings", 8192))
    dim = hyper.rope_dimensions
    freqs = 1.0 / (hyper.rope_theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    out = []
    for freq in freqs:
        wavelength = 2 * math.pi / freq
        if wavelength < original / high:
            out.append(1.0)
        elif wavelength > original / low:
            out.append(factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


@dataclass(frozen=True)
class PlannedTensor:
    """One tensor of the GGUF file: its name, where it comes from, how it is changed on the way."""

    name: str
    source: str  # the transformers tensor's name ("" for one made here)
    shape: tuple[int, ...]  # in PyTorch's order (rows, columns)
    transform: Transform | None = None
    made: Callable[[], np.ndarray] | None = None  # a tensor made here, not read (rope_freqs)


def plan_tensors(shapes: Mapping[str, tuple[int, ...]], arch: Architecture, hyper: Hyper, where: str) -> list[PlannedTensor]:
    """The GGUF tensors of a model whose transformers tensors have ``shapes``; a UsageError names one it cannot place."""
    planned: list[PlannedTensor] = []
    unknown: list[str] = []
    if hyper.rope["rope_type"] == "llama3":
        planned.append(PlannedTensor("rope_freqs.weight", "", (hyper.rope_dimensions // 2,), made=lambda: llama3_rope_factors(hyper)))
    for name, shape in shapes.items():
        if name.endswith(_IGNORED_SUFFIXES):
            continue
        transform: Transform | None = None
        if name in _GLOBAL:
            target = _GLOBAL[name]
            if target == "output.weight" and arch.tied_output:
                continue
        elif name.startswith("model.layers."):
            block, _, suffix = name[len("model.layers."):].partition(".")
            inner = arch.layer_tensors.get(suffix)
            if inner is None or not block.isdigit():
                unknown.append(name)
                continue
            target = f"blk.{int(block)}.{inner}"
            if arch.permute_rotary and suffix.startswith("self_attn.q_proj."):
                transform = _permuter(hyper.head_count)
            elif arch.permute_rotary and suffix.startswith("self_attn.k_proj."):
                transform = _permuter(hyper.head_count_kv)
        else:
            unknown.append(name)
            continue
        if arch.norms_plus_one and target.endswith("norm.weight"):
            transform = _plus_one
        planned.append(PlannedTensor(target, name, tuple(shape), transform))
    if unknown:
        more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
        raise UsageError(f"{where}: GGUF export cannot place tensor {unknown[0]}{more} in llama.cpp's {arch.name} layout")
    if not any(t.name == "token_embd.weight" for t in planned):
        raise UsageError(f"{where}: no model.embed_tokens.weight among the weights; not a {arch.title} model folder?")
    return planned


def _permuter(heads: int) -> Transform:
    return lambda weights: permute_rotary(weights, heads)


def _plus_one(weights: np.ndarray) -> np.ndarray:
    return weights + np.float32(1.0)
