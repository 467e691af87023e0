"""Answering prompts with a causal LM: greedy by default, stopping at the end-of-turn or EOS token.

Prompts are rendered with the tokenizer's chat template and the generation
prompt, left-padded into batches; an answer "stops by itself" when the model
wrote a stop token before ``max_new_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from trainlab import Prediction

BATCH = 8


@dataclass(frozen=True)
class GeneratedText(Prediction):
    """A generated answer: its ``text``, whether it ``stopped`` by itself, and its length in tokens."""

    text: str
    stopped: bool = True
    tokens: int = 0
    kind = "generated-text"

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "stopped": self.stopped, "tokens": self.tokens}

    def summary(self) -> str:
        return self.text if self.stopped else self.text + " [cut at max_new_tokens]"

    def display(self) -> Any:
        return self.summary()

    @classmethod
    def csv_header(cls, top_k: int, label_names: Sequence[str]) -> list[str]:
        return ["text", "stopped", "tokens"]

    def csv_row(self, top_k: int, label_names: Sequence[str]) -> list[str]:
        return [self.text, str(self.stopped).lower(), str(self.tokens)]


def prompt_ids(tokenizer: Any, messages: Sequence[dict[str, str]], max_length: int) -> list[int]:
    text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return ids[-max_length:]


def generate_answers(
    lm: Any,
    tokenizer: Any,
    conversations: Sequence[Sequence[dict[str, str]]],
    stop_ids: Sequence[int],
    *,
    max_new_tokens: int = 256,
    max_length: int = 1024,
    temperature: float = 0.0,
    top_p: float = 1.0,
) -> list[GeneratedText]:
    import torch

    device = next(lm.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop_ids[0]
    stops = set(int(s) for s in stop_ids)
    was_training = lm.training
    lm.eval()
    out: list[GeneratedText] = []
    try:
        for start in range(0, len(conversations), BATCH):
            prompts = [prompt_ids(tokenizer, c, max_length) for c in conversations[start : start + BATCH]]
            width = max(len(p) for p in prompts)
            ids = torch.full((len(prompts), width), pad, dtype=torch.long)
            mask = torch.zeros((len(prompts), width), dtype=torch.long)
            for i, p in enumerate(prompts):  # left padding: every prompt ends where generation starts
                ids[i, width - len(p) :] = torch.tensor(p)
                mask[i, width - len(p) :] = 1
            sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p} if temperature > 0 else {"do_sample": False}
            with torch.no_grad():
                result = lm.generate(
                    input_ids=ids.to(device),
                    attention_mask=mask.to(device),
                    max_new_tokens=max_new_tokens,
                    eos_token_id=list(stops),
                    pad_token_id=pad,
                    **sampling,
                )
            for row in result[:, width:].tolist():
                cut = next((j for j, t in enumerate(row) if t in stops), None)
                kept = row if cut is None else row[:cut]
                out.append(GeneratedText(tokenizer.decode(kept, skip_special_tokens=True).strip(), cut is not None, len(kept)))
    finally:
        lm.train(was_training)
    return out
