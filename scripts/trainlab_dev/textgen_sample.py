"""Generate text-generation's bundled sample and its tiny decoder (config and tokenizer, no weights).

Run it from the repository root when the recipe changes::

    .venv/bin/python scripts/trainlab_dev/textgen_sample.py

Writes ``resources/trainlab_resources/samples/text-generation/`` (``train.jsonl``
and ``val.jsonl``: short chats in English and Chinese, in the chat-messages
format) and ``resources/trainlab_resources/vocab/tiny-chat/`` (a Qwen2-style
config of a 2-layer decoder, and a byte-level BPE tokenizer trained on the
sample's texts with the ChatML template and its turn markers).  The
``tiny-chat`` preset builds that decoder with random weights and trains it
from scratch: it learns the sample's kinds of question (colours, opposites,
capitals) in about a minute of CPU time.

The facts and phrasings are written for this project, so the set is free of
third-party rights.  Questions are asked in several phrasings; validation
asks about the same facts in phrasings training does not use, so a model
that learned the answers (not the wording) scores well.  Deterministic: the
same seed gives the same files.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "resources" / "trainlab_resources"
SAMPLE = ROOT / "samples" / "text-generation"
VOCAB = ROOT / "vocab" / "tiny-chat"

COLOURS = [  # (English subject, its colour, Chinese subject, its colour)
    ("a banana", "yellow", "香蕉", "黄色"), ("an apple", "red", "苹果", "红色"), ("grass", "green", "草", "绿色"),
    ("the sky", "blue", "天空", "蓝色"), ("snow", "white", "雪", "白色"), ("coal", "black", "煤", "黑色"),
    ("an orange", "orange", "橙子", "橙色"), ("a lemon", "yellow", "柠檬", "黄色"), ("a cherry", "red", "樱桃", "红色"),
    ("a leaf", "green", "叶子", "绿色"), ("milk", "white", "牛奶", "白色"), ("a crow", "black", "乌鸦", "黑色"),
]
OPPOSITES = [
    ("hot", "cold", "热", "冷"), ("big", "small", "大", "小"), ("up", "down", "上", "下"), ("fast", "slow", "快", "慢"),
    ("old", "new", "旧", "新"), ("long", "short", "长", "短"), ("early", "late", "早", "晚"), ("open", "closed", "开", "关"),
    ("high", "low", "高", "低"), ("light", "dark", "明亮", "黑暗"), ("left", "right", "左", "右"), ("full", "empty", "满", "空"),
]
CAPITALS = [
    ("France", "Paris", "法国", "巴黎"), ("Japan", "Tokyo", "日本", "东京"), ("China", "Beijing", "中国", "北京"),
    ("Italy", "Rome", "意大利", "罗马"), ("Germany", "Berlin", "德国", "柏林"), ("Spain", "Madrid", "西班牙", "马德里"),
    ("Egypt", "Cairo", "埃及", "开罗"), ("Canada", "Ottawa", "加拿大", "渥太华"), ("Russia", "Moscow", "俄罗斯", "莫斯科"),
    ("Kenya", "Nairobi", "肯尼亚", "内罗毕"), ("Peru", "Lima", "秘鲁", "利马"), ("Greece", "Athens", "希腊", "雅典"),
]

# (train phrasings, val phrasings) per kind and language; {x} is the subject.  Training
# asks each fact in five phrasings, validation in a sixth it never saw.
ASK = {
    ("colour", "en"): (
        ["What color is {x}?", "Tell me the color of {x}.", "Which color does {x} have?", "What colour is {x}?", "Color of {x}?"],
        ["What is the color of {x}?"],
    ),
    ("colour", "zh"): (["{x}是什么颜色？", "告诉我{x}的颜色。", "{x}有什么颜色？", "{x}是哪种颜色？", "{x}的颜色？"], ["{x}的颜色是什么？"]),
    ("opposite", "en"): (
        ["What is the opposite of {x}?", "Give the opposite of {x}.", "Name the opposite of {x}.", "Opposite of {x}?", "Tell me the opposite of {x}."],
        ["What word means the opposite of {x}?"],
    ),
    ("opposite", "zh"): (["{x}的反义词是什么？", "说出{x}的反义词。", "请给出{x}的反义词。", "{x}的反义词？", "告诉我{x}的反义词。"], ["{x}的反义词是哪个字？"]),
    ("capital", "en"): (
        ["What is the capital of {x}?", "Name the capital of {x}.", "Which city is the capital of {x}?", "Capital of {x}?", "What city is the capital of {x}?"],
        ["Tell me the capital of {x}."],
    ),
    ("capital", "zh"): (["{x}的首都是哪里？", "告诉我{x}的首都。", "{x}的首都是哪座城市？", "{x}的首都？", "说出{x}的首都。"], ["请问{x}的首都是什么？"]),
}
SYSTEMS = {"en": "You are a helpful assistant. Answer in one short sentence.", "zh": "你是一个乐于助人的助手。请用一句话简短回答。"}


def _answer(kind: str, lang: str, row: tuple[str, str, str, str]) -> tuple[str, str]:
    """(the subject as the question names it, the answer) for one fact in one language.

    The answer is the fact alone ("Lima.", "利马。"): a 2-layer decoder trained from
    scratch learns to look a fact up from the question's subject in a few hundred
    steps, where copying the subject into a sentence takes it far longer.
    """
    en_x, en_y, zh_x, zh_y = row
    if lang == "zh":
        return zh_x, f"{zh_y}。"
    return en_x, f"{en_y[0].upper()}{en_y[1:]}."


def examples(seed: int = 0) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    train, val = [], []
    for kind, rows in (("colour", COLOURS), ("opposite", OPPOSITES), ("capital", CAPITALS)):
        for row in rows:
            for lang in ("en", "zh"):
                subject, answer = _answer(kind, lang, row)
                train_asks, val_asks = ASK[(kind, lang)]
                for ask in train_asks:
                    messages = [{"role": "user", "content": ask.format(x=subject)}, {"role": "assistant", "content": answer}]
                    if rng.random() < 0.3:
                        messages.insert(0, {"role": "system", "content": SYSTEMS[lang]})
                    train.append({"messages": messages})
                for ask in val_asks:
                    val.append({"messages": [{"role": "user", "content": ask.format(x=subject)}, {"role": "assistant", "content": answer}]})
    rng.shuffle(train)
    rng.shuffle(val)
    return train, val[:48]


def write_tokenizer(texts: list[str], out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from trainlab_plugins.textgen.templates import CHATML

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=1200, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>", model_input_names=["input_ids", "attention_mask"],
        additional_special_tokens=["<|endoftext|>", "<|im_start|>"],
    )
    tokenizer.chat_template = CHATML
    tokenizer.model_max_length = 256
    tokenizer.save_pretrained(str(out))


def write_config(vocab_size: int, eos: int, pad: int, out: Path) -> None:
    from transformers import Qwen2Config

    config = Qwen2Config(
        vocab_size=vocab_size, hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, eos_token_id=eos, pad_token_id=pad, tie_word_embeddings=True,
    )
    config.save_pretrained(str(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train, val = examples(args.seed)
    SAMPLE.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("val", val)):
        (SAMPLE / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (SAMPLE / "README.md").write_text(
        "# text-generation sample\n\nShort chats in English and Chinese about colours, opposites and capital cities, "
        "written for TrainLab (free of third-party rights) by `scripts/trainlab_dev/textgen_sample.py`. "
        "Validation asks about the same facts in phrasings training does not use.\n",
        encoding="utf-8",
    )
    VOCAB.mkdir(parents=True, exist_ok=True)
    texts = [m["content"] for r in train + val for m in r["messages"]] + list(SYSTEMS.values())
    write_tokenizer(texts, VOCAB)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(VOCAB))
    write_config(len(tok), tok.eos_token_id, tok.pad_token_id, VOCAB)
    print(f"wrote {len(train)} train and {len(val)} val chats to {SAMPLE}; tokenizer of {len(tok)} tokens and config to {VOCAB}")


if __name__ == "__main__":
    main()
