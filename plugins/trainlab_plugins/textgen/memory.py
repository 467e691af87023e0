"""An analytic memory model of SFT on a decoder: an answer for a model this machine cannot load.

Computed from the model's config alone (its parameters counted on the meta
device), no step run.  What a training step holds at once:

* **weights** by how they are held: fp32 for full fine-tuning (the engine
  trains fp32 weights under autocast), the precision's width for a LoRA
  base, 4-bit NF4 with double-quantised constants (about 0.52 bytes a
  weight) for QLoRA's linear layers, the rest (embeddings, output layer,
  norms) in fp32 as PEFT's k-bit preparation upcasts them, plus one
  projection dequantised to 16 bits while it computes;
* **LoRA adapters** (``r x (in + out)`` per targeted projection) in fp32,
  and the trained copies of the embeddings and output layer when a
  template added tokens;
* **AdamW states**: 8 bytes per trainable parameter;
* what the backward holds on top of those, the largest of three moments:

  1. *the loss's backward*, its first: every activation autograd saved
     (without checkpointing, each layer's; with it, each layer's input),
     the recomputed loss chunk's log-softmax, the gradient the NLL hands
     back and the logits' gradient (three ``loss_chunk x vocabulary`` fp32
     buffers, and the 16-bit logits under autocast), and in full
     fine-tuning the output layer's gradient;
  2. *a checkpointed layer's backward*: the layers' inputs and one layer's
     activations recomputed (its activation gradients take the room its
     saved tensors free), with the gradients made so far (all of them, at
     the first layer);
  3. *the end of the backward*: every gradient (4 bytes per trainable
     parameter), the activations freed;

* **runtime**, on a CPU: the autograd graph's nodes and tensor metadata and
  the heap the C allocator keeps between steps (freed small blocks that it
  returns to the system only from the heap's top), a small amount that
  does not grow with the model.

The fields hold what is live at the peak (``gradients`` only the output
layer's when the loss's backward is the peak), so that their sum is the
estimate.  The engine's estimate before Start measures activations for
real where the model can be loaded; this model is what the data check
states beside it, and the estimate where the model cannot be loaded.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any

GiB = 1 << 30
MiB = 1 << 20
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)  # 4-bit weights, an 8-bit constant per block of 64, an fp32 one per 256 blocks
# The graph's nodes, tensor metadata and the freed-but-kept heap of one step on a CPU (see the module docstring).
CPU_RUNTIME_BYTES = 1 << 20


@dataclass(frozen=True)
class SFTMemory:
    weights: int
    adapters: int
    gradients: int
    optimizer: int
    activations: int
    logits: int
    runtime: int = 0
    peak_at: str = ""  # which moment of the backward the figures are for

    @property
    def total(self) -> int:
        return self.weights + self.adapters + self.gradients + self.optimizer + self.activations + self.logits + self.runtime

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "total": self.total}

    def parts(self) -> dict[str, int]:
        return {k: v for k, v in asdict(self).items() if isinstance(v, int)}

    def line(self, capacity: int = 0) -> str:
        parts = ", ".join(f"{k} {format_size(v)}" for k, v in self.parts().items())
        where = f" of {format_size(capacity)}" if capacity else ""
        return f"SFT memory model: about {format_size(self.total)}{where} ({parts})"

    def fits(self, capacity: int, headroom: float = 0.10) -> bool:
        """Whether the estimate leaves ``headroom`` of ``capacity`` free (what the engine keeps)."""
        return self.total <= capacity * (1 - headroom)


def format_size(n: float) -> str:
    """A size in binary units: a tiny model's "38 MiB" (never "0.0 GiB"), a 7B's "7.52 GiB", a cluster's "160 GiB"."""
    n = max(float(n), 0.0)
    if n >= 100 * GiB:
        return f"{n / GiB:.0f} GiB"
    if n >= 10 * GiB:
        return f"{n / GiB:.1f} GiB"
    if n >= GiB:
        return f"{n / GiB:.2f} GiB"
    if n >= 10 * MiB:
        return f"{n / MiB:.0f} MiB"
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    return f"{n / 1024:.0f} KiB"


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
    return _counts(config.to_json_string())


@functools.lru_cache(maxsize=8)
def _counts(config_json: str) -> tuple[int, int]:
    # a 7B model on the meta device still takes seconds to build; the data check asks several times
    import json

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    data = json.loads(config_json)
    config = AutoConfig.for_model(data.pop("model_type"), **data)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    linear = sum(m.weight.numel() for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".layers." in f".{name}")
    return total, linear


def _layer_activations(hidden: int, kv: int, inter: int, heads: int, *, mode: str, act: int) -> int:
    """Bytes one decoder layer saves for its backward, per token."""
    # the residual stream is at the embeddings' width: fp32 in full fine-tuning and QLoRA
    residual = 4 if mode in ("full", "qlora") else act
    # each RMSNorm: its input upcast to fp32, and the scaled output the next projections read; with
    # a trained norm weight also the normalised hidden state its gradient needs
    norm = hidden * (4 + residual + (residual if mode == "full" else 0))
    # SDPA keeps q and k after the rotary embedding, v, its output (no length x length scores) and a
    # log-sum-exp per head; the output projection reads that output as it is
    attention = act * (2 * hidden + 2 * kv) + 4 * heads
    # the MLP: gate's output (for SiLU's backward), SiLU's, up's, and their product (the down projection's input)
    mlp = act * 4 * inter
    # each adapter's dropped-out input, in fp32: PEFT casts the input to the adapters' own dtype
    adapters = 4 * (6 * hidden + inter) if mode in ("lora", "qlora") else 0
    return 2 * norm + attention + mlp + adapters


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
    device: str = "cpu",
    trained_embeddings: bool = False,
) -> SFTMemory:
    hidden, kv, inter, layers, vocab, heads = _dims(config)
    total, linear = counts or parameter_counts(config)
    act = 4 if precision == "fp32" else 2
    residual = 4 if mode in ("full", "qlora") else act
    if mode == "full":
        weights = 4 * total
    elif mode == "qlora":
        # one projection at a time dequantised to 16 bits for its matmul
        weights = int(NF4_BYTES * linear) + 4 * (total - linear) + 2 * max(hidden, inter) * max(hidden, kv, inter)
    else:
        weights = act * total
    # q, k, v, o, gate, up, down: r x (in + out) each
    per_layer_lora = lora_rank * ((hidden + hidden) + 2 * (hidden + kv) + (hidden + hidden) + 2 * (hidden + inter) + (inter + hidden))
    adapters = 4 * layers * per_layer_lora if mode in ("lora", "qlora") else 0
    trainable = total if mode == "full" else adapters // 4
    gradients = 4 * trainable
    optimizer = 8 * trainable
    if trained_embeddings and mode in ("lora", "qlora"):
        # tokens a template added have new rows: PEFT trains a copy of the embeddings and the output
        # layer in full (at the base's width), with its gradient and two AdamW moments at that width
        full_rows = hidden * vocab * (1 if getattr(config, "tie_word_embeddings", False) else 2)
        adapters += act * full_rows
        gradients += act * full_rows
        optimizer += 2 * act * full_rows
    tokens = max_length * micro_batch
    layer = tokens * _layer_activations(hidden, kv, inter, heads, mode=mode, act=act)
    # the final norm (its output is not saved: the loss reads a copy of the trained positions' hidden
    # states, which its chunks keep)
    top = tokens * (hidden * (4 + (residual if mode == "full" else 0)) + act * hidden)
    saved = top + (tokens * layers * residual * hidden if checkpointing else layers * layer)
    if mode == "full" and act == 2 and not checkpointing:
        # autocast's 16-bit copy of each projection's fp32 weight, which the backward keeps (with
        # checkpointing a layer's copies go with its activations and come back with its recompute)
        saved += 2 * linear
    chunk = min(loss_chunk, tokens)
    # the loss's backward: the log-softmax saved, the NLL's gradient, the logits' gradient (fp32), and
    # under autocast the 16-bit logits the recomputed chunk made before upcasting them
    logits = chunk * vocab * (12 + (2 if act == 2 else 0))
    head = 4 * hidden * vocab if mode == "full" else 0
    moments = {
        "loss backward": (head, saved, logits),
        "end of backward": (gradients, 0, 0),
    }
    if checkpointing:
        # a layer recomputed in the backward (its activation gradients take the room its saved
        # tensors free as the backward walks back through it)
        moments["layer backward"] = (gradients, saved + layer, 0)
    peak_at, (grads, activations, logit_bytes) = max(moments.items(), key=lambda kv: sum(kv[1]))
    runtime = CPU_RUNTIME_BYTES if device == "cpu" else 0
    return SFTMemory(int(weights), int(adapters), int(grads), int(optimizer), int(activations), int(logit_bytes), runtime, peak_at)
