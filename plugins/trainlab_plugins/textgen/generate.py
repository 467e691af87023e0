"""Answering prompts with a causal LM: greedy by default, stopping at the end-of-turn or EOS token.

Prompts are rendered with the tokenizer's chat template and the generation
prompt, left-padded into batches; an answer "stops by itself" when the model
wrote a stop token before ``max_new_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

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


def stream_answer(
    lm: Any,
    tokenizer: Any,
    messages: Sequence[dict[str, str]],
    stop_ids: Sequence[int],
    *,
    max_new_tokens: int = 256,
    max_length: int = 1024,
    temperature: float = 0.0,
    top_p: float = 1.0,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[str]:
    """The answer to one conversation, piece by piece as the model writes it.

    ``generate`` runs in a thread of its own, feeding transformers'
    ``TextIteratorStreamer``, which this generator reads; ``should_stop``
    is asked after every token (a ``StoppingCriteria``), so a Stop button
    ends the answer at the next token.  Closing the generator early stops
    the thread the same way.  An error in ``generate`` is raised here.
    """
    import threading

    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

    closed = threading.Event()

    class _Flag(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = closed.is_set() or bool(should_stop is not None and should_stop())
            return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)

    device = next(lm.parameters()).device
    ids = torch.tensor([prompt_ids(tokenizer, messages, max_length)], dtype=torch.long, device=device)
    stops = [int(s) for s in stop_ids]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
    sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p} if temperature > 0 else {"do_sample": False}
    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with torch.no_grad():
                lm.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    eos_token_id=stops,
                    pad_token_id=pad,
                    streamer=streamer,
                    stopping_criteria=StoppingCriteriaList([_Flag()]),
                    **sampling,
                )
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, which raises it
            errors.append(exc)
            streamer.end()  # the reader must not wait for pieces that never come

    thread = threading.Thread(target=work, name="trainlab-generate", daemon=True)
    thread.start()
    try:
        yield from streamer
    finally:
        closed.set()
        thread.join()
    if errors:
        raise errors[0]


class ChatPredictor:
    """``load_predictor``'s predictor: answers a list of prompts, and streams one conversation (plugin API 2.1).

    ``predictor(inputs, top_k)`` is the plain predictor; ``prompt(messages)``
    is the text the model is given for a conversation (its chat template
    with the generation prompt); ``stream(messages, ...)`` yields the answer
    as it is written.
    """

    def __init__(self, lm: Any, tokenizer: Any, stop_ids: Sequence[int], *, max_new_tokens: int, max_length: int, temperature: float, top_p: float,
                 as_messages: Callable[[Any], list[dict[str, str]]]) -> None:
        self.lm = lm
        self.tokenizer = tokenizer
        self.stop_ids = tuple(stop_ids)
        self.max_new_tokens = max_new_tokens
        self.max_length = max_length
        self.temperature = temperature
        self.top_p = top_p
        self._as_messages = as_messages

    def __call__(self, inputs: list[Any], top_k: int = 1) -> list[Any]:
        conversations = [self._as_messages(x) for x in inputs]
        return list(generate_answers(self.lm, self.tokenizer, conversations, self.stop_ids, max_new_tokens=self.max_new_tokens,
                                     max_length=self.max_length, temperature=self.temperature, top_p=self.top_p))

    def use_chat_template(self, template: str) -> None:
        """Render conversations with ``template`` (a base model without one, compared with its fine-tune)."""
        self.tokenizer.chat_template = template

    def prompt(self, messages: Sequence[dict[str, str]]) -> str:
        return self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        return stream_answer(
            self.lm, self.tokenizer, messages, self.stop_ids,
            max_new_tokens=int(max_new_tokens if max_new_tokens is not None else self.max_new_tokens),
            max_length=self.max_length,
            temperature=float(temperature if temperature is not None else self.temperature),
            top_p=float(top_p if top_p is not None else self.top_p),
            should_stop=should_stop,
        )
