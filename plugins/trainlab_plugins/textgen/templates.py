"""Chat templates and the loss mask: which tokens of a conversation are trained.

A model folder's own chat template (``chat_template`` in its tokenizer) is
used as it is; a base model without one takes a named template
(``template=chatml|llama3|qwen|mistral|gemma|phi``), whose turn markers are
added to the tokenizer as special tokens when it lacks them.

The assistant's spans are found without ``{% generation %}`` markers: the
conversation is rendered once whole, and for each assistant turn the
conversation up to that turn (with the generation prompt) and up to its end
are rendered and tokenised; the common token prefixes with the whole give
where the answer starts and ends.  So every assistant turn is trained, the
end-of-turn marker (and the EOS the template writes) falls inside the span,
and the model learns to stop.  A template that renders earlier turns
differently once a later turn exists (Qwen3 drops the thinking block of
earlier answers) makes the render up to a turn disagree with the whole; the
span then ends at the first end-of-turn token after its start in the whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from trainlab import DataError, UsageError

# Named templates for base models without one, in the formats of the model
# families that use them (Jinja, as transformers' apply_chat_template reads).
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    + CHATML
)
LLAMA3 = (
    "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{{ message['content'] | trim }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
MISTRAL = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] + '\n\n' %}"
    "{% set loop_messages = messages[1:] %}{% else %}{% set system = '' %}{% set loop_messages = messages %}{% endif %}"
    "{% for message in loop_messages %}{% if message['role'] == 'user' %}"
    "[INST] {% if loop.first %}{{ system }}{% endif %}{{ message['content'] }}[/INST]"
    "{% else %}{{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)
GEMMA = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] + '\n\n' %}"
    "{% set loop_messages = messages[1:] %}{% else %}{% set system = '' %}{% set loop_messages = messages %}{% endif %}"
    "{% for message in loop_messages %}<start_of_turn>{{ 'model' if message['role'] == 'assistant' else 'user' }}\n"
    "{% if loop.first %}{{ system }}{% endif %}{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
PHI = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


@dataclass(frozen=True)
class NamedTemplate:
    name: str
    source: str
    end_of_turn: str  # the token that ends an assistant turn ("" : the tokenizer's EOS)
    markers: tuple[str, ...]  # special tokens the template writes


NAMED_TEMPLATES = {
    "chatml": NamedTemplate("chatml", CHATML, "<|im_end|>", ("<|im_start|>", "<|im_end|>")),
    "qwen": NamedTemplate("qwen", QWEN, "<|im_end|>", ("<|im_start|>", "<|im_end|>")),
    "llama3": NamedTemplate("llama3", LLAMA3, "<|eot_id|>", ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")),
    "mistral": NamedTemplate("mistral", MISTRAL, "", ()),
    "gemma": NamedTemplate("gemma", GEMMA, "<end_of_turn>", ("<start_of_turn>", "<end_of_turn>")),
    "phi": NamedTemplate("phi", PHI, "<|end|>", ("<|system|>", "<|user|>", "<|assistant|>", "<|end|>")),
}
TEMPLATE_CHOICES = ("auto", *NAMED_TEMPLATES)
# End-of-turn markers of the model families' own templates, for a folder's template
KNOWN_END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|eom_id|>")
PAD_TOKEN = "<|pad|>"
RESERVED_PADS = ("<|finetune_right_pad_id|>", "<|pad|>", "<pad>", "[PAD]")


@dataclass
class ChatFormat:
    """How conversations become tokens for one tokenizer: the template and the stop tokens."""

    template: str
    name: str  # "model" (the folder's own) or a named template's name
    stop_ids: tuple[int, ...]  # EOS and the end-of-turn token: generation stops at any of them
    added_tokens: tuple[str, ...] = ()  # tokens added to the tokenizer (new embedding rows)


def setup_tokenizer(tokenizer: Any, template: str, describe: str) -> ChatFormat:
    """Give ``tokenizer`` its chat template and a pad token that hides no real token; what was added.

    ``template``: ``auto`` (the folder's own; an error when it has none) or
    a named template.  The pad token must not be the EOS or end-of-turn
    token: the mask is built from positions, never from pad ids, but a
    model's own generation and other tools read the pad id as "not a token".
    """
    added: list[str] = []
    if template == "auto":
        source = getattr(tokenizer, "chat_template", None)
        if not source:
            raise UsageError(
                f"model {describe} has no chat template (a base model); name one with "
                f"--set template={'|'.join(NAMED_TEMPLATES)}"
            )
        if isinstance(source, dict):  # several named templates: the default one
            source = source.get("default") or next(iter(source.values()))
        name = "model"
        eot_candidates = [t for t in KNOWN_END_OF_TURN if t in source]
    else:
        named = NAMED_TEMPLATES.get(template)
        if named is None:
            raise UsageError(f"template={template!r} is not known; use auto or one of {', '.join(NAMED_TEMPLATES)}")
        vocab = tokenizer.get_vocab()
        missing = [m for m in named.markers if m not in vocab]
        if missing:
            tokenizer.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False)
            added += missing
        source = named.source
        name = named.name
        eot_candidates = [named.end_of_turn] if named.end_of_turn else []
    tokenizer.chat_template = source
    if tokenizer.eos_token is None:
        raise UsageError(f"the tokenizer of model {describe} has no end-of-text (EOS) token")
    stop = [tokenizer.eos_token_id]
    vocab = tokenizer.get_vocab()
    for token in eot_candidates:
        if token in vocab and vocab[token] not in stop:
            stop.append(vocab[token])
    if tokenizer.pad_token is None or tokenizer.pad_token_id in stop:
        # a token the vocabulary reserves for padding (Llama 3's) needs no new embedding row
        reserved = next((t for t in RESERVED_PADS if t in vocab and vocab[t] not in stop), None)
        if reserved is not None:
            tokenizer.pad_token = reserved
        else:
            tokenizer.add_special_tokens({"pad_token": PAD_TOKEN})
            added.append(PAD_TOKEN)
    return ChatFormat(template=source, name=name, stop_ids=tuple(stop), added_tokens=tuple(added))


def render(tokenizer: Any, messages: Sequence[dict[str, str]], *, generation_prompt: bool) -> str:
    try:
        return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=generation_prompt)
    except Exception as exc:  # noqa: BLE001 - a template's own error (raise_exception) is the user's to see
        raise DataError(f"the chat template refused a conversation: {exc}") from None


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """Token ids of a rendered conversation: the template wrote the special tokens (BOS included) itself."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Encoded:
    """A conversation's ids and which of them are trained (``trained[i]``: the loss predicts ``ids[i]``)."""

    ids: list[int]
    trained: list[bool]
    dropped_turns: int = 0  # early turns left out to fit max_length

    def __len__(self) -> int:
        return len(self.ids)


def assistant_spans(tokenizer: Any, messages: Sequence[dict[str, str]], fmt: ChatFormat) -> tuple[list[int], list[tuple[int, int]]]:
    """The whole conversation's ids and the (start, end) token span of each assistant turn."""
    whole = encode_text(tokenizer, render(tokenizer, messages, generation_prompt=False))
    spans: list[tuple[int, int]] = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = encode_text(tokenizer, render(tokenizer, messages[:i], generation_prompt=True))
        start = _common_prefix(before, whole)
        upto = encode_text(tokenizer, render(tokenizer, messages[: i + 1], generation_prompt=False))
        end = _common_prefix(upto, whole)
        if end < len(upto) or end <= start:
            # rendered differently once later turns exist: the turn ends at its end-of-turn token
            end = next((j + 1 for j in range(start, len(whole)) if whole[j] in fmt.stop_ids), len(whole))
        else:
            # the span runs to the last stop token the render up to this turn wrote (text after
            # it, such as a newline, belongs to the next turn's framing)
            last_stop = max((j for j in range(start, end) if whole[j] in fmt.stop_ids), default=end - 1)
            end = last_stop + 1
        spans.append((start, end))
    return whole, spans


def encode_chat(
    tokenizer: Any, messages: Sequence[dict[str, str]], fmt: ChatFormat, max_length: int, *, train_on_prompt: bool = False
) -> Encoded | None:
    """The conversation's ids and loss mask within ``max_length``; None when even its last exchange does not fit.

    Too long, whole early turns are dropped (a system prompt is kept) until
    it fits: the last answer is never cut.
    """
    msgs = list(messages)
    system = msgs[:1] if msgs and msgs[0]["role"] == "system" else []
    body = msgs[len(system):]
    dropped = 0
    while True:
        ids, spans = assistant_spans(tokenizer, system + body, fmt)
        if len(ids) <= max_length:
            break
        # drop the first user turn and its answer
        cut = next((k for k in range(1, len(body)) if body[k]["role"] == "user"), None)
        if cut is None:
            return None
        body = body[cut:]
        dropped += 1
    trained = [False] * len(ids)
    if train_on_prompt:
        trained = [True] * len(ids)
    else:
        for start, end in spans:
            for j in range(start, end):
                trained[j] = True
    return Encoded(ids, trained, dropped)


def encode_plain(tokenizer: Any, text: str, max_length: int) -> list[Encoded]:
    """A plain text for continued pre-training: every token trained, EOS at its end, in chunks of ``max_length``."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    if tokenizer.bos_token_id is not None and getattr(tokenizer, "add_bos_token", False):
        ids = [tokenizer.bos_token_id, *ids]
    ids.append(tokenizer.eos_token_id)
    return [Encoded(ids[i : i + max_length], [True] * len(ids[i : i + max_length])) for i in range(0, len(ids), max_length)]


def marked(tokenizer: Any, encoded: Encoded) -> str:
    """The example as text with its trained parts in ⟦ ⟧, for the data check."""
    out, run, state = [], [], None
    for token, on in zip(encoded.ids, encoded.trained):
        if on != state and run:
            text = tokenizer.decode(run)
            out.append(f"⟦{text}⟧" if state else text)
            run = []
        state = on
        run.append(token)
    if run:
        text = tokenizer.decode(run)
        out.append(f"⟦{text}⟧" if state else text)
    return "".join(out)
