"""The causal LM the engine trains, with a loss that never holds the whole logits.

``SFTModel`` wraps a transformers causal LM (or its PEFT wrapper) so that
its forward returns the summed cross-entropy over the trained tokens, their
count and how many the model predicts right.  The engine, DDP and the
checkpoints see one module; ``lm`` is the model people get.

The loss takes the last hidden states at the trained positions only and
computes their logits ``loss_chunk`` rows at a time, each chunk
checkpointed (its logits recomputed in the backward): memory for logits is
``loss_chunk x vocabulary``, never ``batch x length x vocabulary``.  It is
the plain cross-entropy of the full logits (``plain_loss``) to float
rounding.

A packed row (several examples, ``position_ids`` restarting at 0 for each)
is given without an attention mask: transformers then attends within each
example only (its packed-sequence mask, for the eager and SDPA paths;
FlashAttention reads the same position ids).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

IGNORE = -100


def base_lm(lm: Any) -> Any:
    """The transformers ``...ForCausalLM`` under a PEFT wrapper (LoRA layers in place)."""
    return lm.get_base_model() if hasattr(lm, "get_base_model") else lm


def _chunk_loss(hidden: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, softcap: float) -> torch.Tensor:
    logits = F.linear(hidden, weight, bias).float()
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    loss = F.cross_entropy(logits, targets, reduction="sum")
    correct = (logits.argmax(-1) == targets).sum()
    return torch.stack([loss, correct.to(loss.dtype)])


class SFTModel(torch.nn.Module):
    def __init__(self, lm: Any, loss_chunk: int = 1024) -> None:
        super().__init__()
        self.lm = lm
        self.loss_chunk = int(loss_chunk)

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, position_ids: torch.Tensor | None) -> torch.Tensor:
        decoder = base_lm(self.lm).get_decoder()
        out = decoder(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False)
        return out.last_hidden_state

    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(summed loss over the trained tokens, their count, how many were predicted right)."""
        hidden = self.hidden_states(input_ids, attention_mask, position_ids)
        targets = labels[:, 1:]
        keep = targets != IGNORE
        h = hidden[:, :-1][keep]
        t = targets[keep]
        head = base_lm(self.lm).get_output_embeddings()
        softcap = float(getattr(base_lm(self.lm).config, "final_logit_softcapping", None) or 0.0)
        total = hidden.new_zeros(2, dtype=torch.float32)
        for start in range(0, h.shape[0], self.loss_chunk):
            piece = (h[start : start + self.loss_chunk], t[start : start + self.loss_chunk], head.weight, head.bias, softcap)
            if torch.is_grad_enabled():
                total = total + checkpoint(_chunk_loss, *piece, use_reentrant=False)
            else:
                total = total + _chunk_loss(*piece)
        if h.shape[0] == 0:
            # no trained token: a zero loss that still reaches every trainable weight (DDP waits for them all)
            total = total + hidden.sum() * 0.0
        return total[0], keep.sum(), total[1]


def plain_loss(lm: Any, input_ids: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None = None, position_ids: torch.Tensor | None = None) -> torch.Tensor:
    """The reference: summed cross-entropy of the full logits (what the chunked loss must equal)."""
    logits = lm(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False).logits.float()
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=IGNORE, reduction="sum")
