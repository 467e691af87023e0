"""A transformers tokenizer as llama.cpp's ``tokenizer.*`` metadata.

Two kinds, read from the folder's ``tokenizer.json``:

- byte-level BPE (GPT-2, Qwen, Llama 3, TrainLab's tiny-chat): llama.cpp's
  ``gpt2`` model, the tokens as the vocabulary spells them (``Ġ`` for a
  space), the merges, and ``tokenizer.ggml.pre`` naming the pre-tokenizer's
  split rule as llama.cpp knows it (``gpt-2``, ``qwen2``, ``llama-bpe``);
- SentencePiece-style BPE with byte fallback (Llama 2, Mistral, Gemma as
  transformers saves them): llama.cpp's ``llama`` model, the pieces with
  ``▁``, a score per piece that ranks merges as the vocabulary's order does,
  ``<0xNN>`` byte pieces typed as bytes.

The list is as long as the embedding: ids past the tokenizer's (rows a model
keeps for padding) are ``[PADn]``, unused.  The special tokens (BOS, EOS,
padding, unknown, end of turn) go by id, with whether the tokenizer adds BOS
or EOS itself, and the chat template as text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainlab.api.errors import UsageError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# The pre-tokenizer split patterns llama.cpp recognises, by the name it reads.
_GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
KNOWN_SPLITS = {
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+": "llama-bpe",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+": "qwen2",
    _GPT2_PATTERN: "gpt-2",
}
# End-of-turn markers of the chat-template families (llama.cpp's end-of-generation tokens).
END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|eom_id|>")


@dataclass
class Vocabulary:
    """What goes into the file's ``tokenizer.*`` keys."""

    model: str  # gpt2 | llama
    tokens: list[str]
    types: list[int]
    scores: list[float] | None = None
    merges: list[str] = field(default_factory=list)
    pre: str = ""
    special: dict[str, int] = field(default_factory=dict)  # bos, eos, pad, unk, eot -> id
    add_bos: bool = False
    add_eos: bool = False
    add_space_prefix: bool | None = None
    chat_template: str = ""
    warnings: list[str] = field(default_factory=list)

    def write(self, writer: Any) -> None:
        writer.add_tokenizer_model(self.model)
        if self.pre:
            writer.add_tokenizer_pre(self.pre)
        writer.add_token_list(self.tokens)
        writer.add_token_types(self.types)
        if self.scores is not None:
            writer.add_token_scores(self.scores)
        if self.merges:
            writer.add_token_merges(self.merges)
        adders = {"bos": writer.add_bos_token_id, "eos": writer.add_eos_token_id, "pad": writer.add_pad_token_id,
                  "unk": writer.add_unk_token_id, "eot": writer.add_eot_token_id}
        for role, token_id in self.special.items():
            adders[role](token_id)
        writer.add_add_bos_token(self.add_bos)
        writer.add_add_eos_token(self.add_eos)
        if self.add_space_prefix is not None:
            writer.add_add_space_prefix(self.add_space_prefix)
        if self.chat_template:
            writer.add_chat_template(self.chat_template)


def chat_template_text(tokenizer: Any) -> str:
    template = getattr(tokenizer, "chat_template", None) or ""
    if isinstance(template, dict):  # several named templates: the default one
        template = template.get("default") or next(iter(template.values()), "")
    return str(template)


def end_of_turn_id(tokenizer: Any, template: str, stop_ids: Sequence[int]) -> int | None:
    """The token that ends an assistant turn: a known marker the template writes, else the run's last stop token."""
    vocab = tokenizer.get_vocab()
    for marker in END_OF_TURN:
        if marker in template and marker in vocab:
            return int(vocab[marker])
    return int(stop_ids[-1]) if stop_ids else None


def read_vocabulary(model_dir: Path, tokenizer: Any, rows: int, stop_ids: Sequence[int]) -> Vocabulary:
    """The vocabulary of ``model_dir``'s tokenizer (``tokenizer``: the same, loaded) for an embedding of ``rows`` rows."""
    path = Path(model_dir) / "tokenizer.json"
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: GGUF export reads the fast tokenizer's tokenizer.json ({exc})") from None
    model = spec.get("model") or {}
    kind = model.get("type")
    if kind != "BPE":
        raise UsageError(f"{path}: GGUF export writes BPE tokenizers (byte-level or SentencePiece-style), not {kind or 'this one'}")
    by_id = {int(i): t for t, i in tokenizer.get_vocab().items()}
    if by_id and max(by_id) >= rows:
        raise UsageError(f"{model_dir}: the tokenizer has ids up to {max(by_id)} but the embedding only {rows} rows")
    added = {int(a["id"]): a for a in spec.get("added_tokens", [])}
    if _byte_level(spec):
        vocab = _gpt2(spec, by_id, added, rows)
    elif model.get("byte_fallback"):
        vocab = _sentencepiece(spec, by_id, added, rows)
    else:
        raise UsageError(f"{path}: a BPE tokenizer that is neither byte-level nor SentencePiece-style (byte fallback); GGUF export cannot write it")
    template = chat_template_text(tokenizer)
    vocab.chat_template = template
    for role in ("bos", "eos", "pad", "unk"):
        token_id = getattr(tokenizer, f"{role}_token_id", None)
        if token_id is not None:
            vocab.special[role] = int(token_id)
    eot = end_of_turn_id(tokenizer, template, stop_ids)
    if eot is not None:
        vocab.special["eot"] = eot
    probe = list(tokenizer("a", add_special_tokens=True)["input_ids"])
    vocab.add_bos = bool(probe) and tokenizer.bos_token_id is not None and probe[0] == tokenizer.bos_token_id
    vocab.add_eos = bool(probe) and tokenizer.eos_token_id is not None and probe[-1] == tokenizer.eos_token_id
    return vocab


def _byte_level(spec: dict[str, Any]) -> bool:
    return any(p.get("type") == "ByteLevel" for p in _steps(spec.get("pre_tokenizer")))


def _steps(part: Any) -> list[dict[str, Any]]:
    if not isinstance(part, dict):
        return []
    if part.get("type") == "Sequence":
        inner = part.get("pretokenizers") or part.get("normalizers") or []
        return [step for p in inner for step in _steps(p)]
    return [part]


def _types(by_id: dict[int, str], added: dict[int, Any], rows: int, base: Any) -> tuple[list[str], list[int]]:
    tokens, types = [], []
    for i in range(rows):
        token = by_id.get(i)
        if token is None:
            tokens.append(f"[PAD{i}]")
            types.append(UNUSED)
        else:
            tokens.append(token)
            kind = base(token)  # what the token is (unknown, a byte) goes before how it was added
            if kind == NORMAL and i in added:
                kind = CONTROL if added[i].get("special") else USER_DEFINED
            types.append(kind)
    return tokens, types


def _merges(model: dict[str, Any]) -> list[str]:
    return [m if isinstance(m, str) else " ".join(m) for m in model.get("merges") or []]


def _gpt2(spec: dict[str, Any], by_id: dict[int, str], added: dict[int, Any], rows: int) -> Vocabulary:
    tokens, types = _types(by_id, added, rows, lambda token: NORMAL)
    pre, warnings = _pre_tokenizer(spec)
    return Vocabulary("gpt2", tokens, types, merges=_merges(spec["model"]), pre=pre, warnings=warnings)


def _pre_tokenizer(spec: dict[str, Any]) -> tuple[str, list[str]]:
    """llama.cpp's name for the split rule before the byte-level BPE."""
    steps = _steps(spec.get("pre_tokenizer"))
    for step in steps:
        if step.get("type") == "Split":
            pattern = (step.get("pattern") or {}).get("Regex") or (step.get("pattern") or {}).get("String")
            if pattern in KNOWN_SPLITS:
                return KNOWN_SPLITS[pattern], []
            warning = (
                "the tokenizer splits text by a pattern llama.cpp does not name; written as its default pre-tokenizer, "
                "so llama.cpp may cut some texts into other tokens than transformers"
            )
            return "default", [warning]
    if any(s.get("type") == "ByteLevel" and s.get("use_regex", True) for s in steps):
        return "gpt-2", []
    return "default", ["the tokenizer's pre-tokenizer is not one llama.cpp names; written as its default"]


def _sentencepiece(spec: dict[str, Any], by_id: dict[int, str], added: dict[int, Any], rows: int) -> Vocabulary:
    model = spec["model"]
    unk = model.get("unk_token")

    def base(token: str) -> int:
        if token == unk:
            return UNKNOWN
        if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            return BYTE
        return NORMAL

    tokens, types = _types(by_id, added, rows, base)
    # SentencePiece BPE merges the pair whose result scores highest; its vocabulary is
    # in merge order, so a falling score by id ranks merges as the tokenizer does
    scores = [-float(i) if t == NORMAL else 0.0 for i, t in enumerate(types)]
    steps = _steps(spec.get("normalizer")) + _steps(spec.get("pre_tokenizer"))
    prefix = any(s.get("type") == "Prepend" and s.get("prepend") == "\u2581" for s in steps) or any(
        s.get("type") == "Metaspace" and (s.get("prepend_scheme") in ("always", "first") or s.get("add_prefix_space")) for s in steps
    )
    return Vocabulary("llama", tokens, types, scores=scores, add_space_prefix=prefix)
