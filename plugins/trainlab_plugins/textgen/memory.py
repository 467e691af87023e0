"""An analytic memory model of SFT on a decoder: an answer for a model this machine cannot load.

Computed from the model's config alone (its parameters counted on the meta
device), no step run:

* **weights** by how they are held: fp32 for full fine-tuning (the engine
  trains fp32 weights under autocast), the precision's width for a LoRA
  base, 4-bit NF4 with double-quantised constants (about 0.52 bytes a
  weight) for QLoRA's linear layers, their embeddings and output layer at 2
  bytes;
* **LoRA adapters** (``r x (in + out)`` per targeted projection) in fp32;
* **gradients and AdamW states**: 4 + 8 bytes per trainable parameter;
* **activations** per token and layer, saved for backward: the inputs of the
  two norms, q, k, v, the attention output, the MLP's gate, up and their
  product (SDPA keeps no ``length x length`` scores), and each adapter's
  input; with gradient checkpointing only each layer's input is kept, plus
  one layer's full activations while it is recomputed (without it, the
  backward's working set too: one layer's activation gradients at a time);
* **logits**: the chunked loss holds ``loss_chunk x vocabulary`` logits in
  fp32 (and their gradient) at a time.

The engine's estimate before Start measures activations for real where the
model can be loaded; this model is what the data check states beside it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

GiB = 1 << 30
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)  # 4-bit weights, an 8-bit constant per block of 64, an fp32 one per 256 blocks


@dataclass(frozen=True)
class SFTMemory:
    weights: int
    adapters: int
    gradients: int
    optimizer: int
    activations: int
    logits: int

    @property
    def total(self) -> int:
        return self.weights + self.adapters + self.gradients + self.optimizer + self.activations + self.logits

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "total": self.total}

    def line(self, capacity: int = 0) -> str:
        parts = ", ".join(f"{k} {v / GiB:.2f}" for k, v in asdict(self).items())
        where = f" of {capacity / GiB:.0f} GiB" if capacity else ""
        return f"SFT memory model: about {self.total / GiB:.1f} GiB{where} ({parts} GiB)"


def _dims(config: Any) -> tuple[int, int, int, int, int, int]:
    hidden = int(config.hidden_size)
    heads = int(config.num_attention_heads)
    kv = int(getattr(config, "num_key_value_heads", None) or heads) * int(getattr(config, "head_dim", None) or hidden // heads)
    inter = int(config.intermediate_size)
    layers = int(config.num_hidden_layers)
    vocab = int(config.vocab_size)
    return hidden, kv, inter, layers, vocab, heads


def parameter_counts(config: Any) -> tuple[int, int]:
    """(all parameters, those in the decoder layers' linear projections), counted on the meta device."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    linear = sum(m.weight.numel() for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".layers." in f".{name}")
    return total, linear


def sft_memory(
    config: Any,
    *,
    mode: str,
    precision: str,
    max_length: int,
    micro_batch: int,
    checkpointing: bool,
    lora_rank: int = 16,
    loss_chunk: int = 1024,
    counts: tuple[int, int] | None = None,
) -> SFTMemory:
    hidden, kv, inter, layers, vocab, _ = _dims(config)
    total, linear = counts or parameter_counts(config)
    act_bytes = 4 if precision == "fp32" else 2
    if mode == "full":
        weights = 4 * total
    elif mode == "qlora":
        weights = int(NF4_BYTES * linear) + 2 * (total - linear)
    else:
        weights = act_bytes * total
    # q, k, v, o, gate, up, down: r x (in + out) each
    per_layer_lora = lora_rank * ((hidden + hidden) + 2 * (hidden + kv) + (hidden + hidden) + 2 * (hidden + inter) + (inter + hidden))
    adapters = 4 * layers * per_layer_lora if mode in ("lora", "qlora") else 0
    trainable = total if mode == "full" else adapters // 4
    gradients = 4 * trainable
    optimizer = 8 * trainable
    tokens = max_length * micro_batch
    per_token_layer = act_bytes * (2 * hidden + hidden + 2 * kv + hidden + hidden + 3 * inter + inter)
    if mode in ("lora", "qlora"):
        per_token_layer += act_bytes * (4 * hidden + 2 * hidden + inter)  # the adapters' inputs
    if checkpointing:
        activations = tokens * (layers * act_bytes * hidden + per_token_layer)
    else:
        # every layer's saved activations, and the backward's working set: one layer's activation gradients at a time
        activations = tokens * (layers + 1) * per_token_layer
    activations += tokens * act_bytes * hidden * 2  # the final norm and the hidden states the loss reads
    logits = 2 * 4 * min(loss_chunk, tokens) * vocab
    return SFTMemory(int(weights), int(adapters), int(gradients), int(optimizer), int(activations), int(logits))
