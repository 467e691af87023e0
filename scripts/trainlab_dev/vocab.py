"""Build the vocabulary of the ``tiny-bert`` preset (``resources/trainlab_resources/vocab/tiny-bert``).

Run it from the repository root when the recipe changes::

    .venv/bin/python scripts/trainlab_dev/vocab.py

Everything comes from material on every Python installation, so the script
needs no download:

* English word pieces: the most frequent words of the docstrings of the
  Python standard library (plain English prose; PSF licence) and the most
  frequent word-internal ``##`` pieces, plus every letter and ``##letter``,
  so any English word can be spelled out.
* Chinese characters: the 6,763 hanzi of GB 2312 (levels 1 and 2, the
  simplified characters of everyday text) and the 5,401 common characters of
  Big5 (traditional), read off Python's own codecs; plus the CJK punctuation
  and full-width forms of GB 2312 rows 1 and 3.

The output is deterministic for a given Python version.  The vocabulary is
shipped, so users never run this.
"""

from __future__ import annotations

import argparse
import ast
import json
import sysconfig
from pathlib import Path
from typing import Iterator

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "resources" / "trainlab_resources" / "vocab" / "tiny-bert"


def gb2312_rows(rows: range) -> list[str]:
    """Characters of GB 2312 rows (1-based, as in the standard)."""
    chars = []
    for row in rows:
        for cell in range(0xA1, 0xFF):
            try:
                chars.append(bytes([row + 0xA0, cell]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return chars


def big5_common() -> list[str]:
    """Big5's frequently used characters (0xA440-0xC67E)."""
    chars = []
    for high in range(0xA4, 0xC7):
        for low in [*range(0x40, 0x7F), *range(0xA1, 0xFF)]:
            if (high, low) > (0xC6, 0x7E):
                break
            try:
                chars.append(bytes([high, low]).decode("big5"))
            except UnicodeDecodeError:
                pass
    return chars


def is_cjk(text: str) -> bool:
    return any(ord(ch) >= 0x2E80 for ch in text)


def stdlib_docstrings() -> Iterator[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        if any(part in {"test", "tests", "idlelib", "site-packages", "lib2to3"} for part in path.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    yield doc


def english_pieces(whole_words: int, continuations: int) -> list[str]:
    """The most frequent words, then the most frequent word-internal pieces.

    Counted, not trained: ``tokenizers``' WordPiece trainer breaks ties
    between equally frequent merges differently from run to run, and a
    shipped vocabulary should be reproducible.  Ties sort alphabetically.
    WordPiece tokenisation (greedy longest match) works with any such list:
    a known word is one token, an unknown one is spelled from a known prefix
    and ``##`` pieces.
    """
    from collections import Counter

    from tokenizers import normalizers, pre_tokenizers

    normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words: Counter[str] = Counter()
    for doc in stdlib_docstrings():
        for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(doc)):
            if word.isascii() and word.isalpha():
                words[word] += 1
    common = [w for w, n in sorted(words.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 3][:whole_words]
    pieces: Counter[str] = Counter()
    for word, count in words.items():
        for start in range(1, len(word)):
            for length in range(1, 7):
                if start + length <= len(word):
                    pieces["##" + word[start : start + length]] += count
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    digits = [str(d) for d in range(10)]
    ranked = [p for p, _ in sorted(pieces.items(), key=lambda kv: (-kv[1], kv[0]))]
    return [*letters, *("##" + c for c in letters + digits), *common, *ranked[:continuations]]


def build_vocab(whole_words: int, continuations: int) -> list[str]:
    tokens: list[str] = list(SPECIAL_TOKENS)
    seen = set(tokens)

    def add(items):
        for item in items:
            if item.strip() and item not in seen:
                seen.add(item)
                tokens.append(item)

    add(chr(c) for c in range(0x21, 0x7F) if not chr(c).isupper())  # ASCII, lower-cased input
    add(english_pieces(whole_words, continuations))
    add(ch for ch in gb2312_rows(range(1, 2)) + gb2312_rows(range(3, 4)) if not ch.isupper())
    add(gb2312_rows(range(16, 88)))
    add(big5_common())
    return tokens


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--words", type=int, default=5000, help="most frequent English words kept whole")
    parser.add_argument("--pieces", type=int, default=1500, help="most frequent ##continuation pieces")
    args = parser.parse_args(argv)
    tokens = build_vocab(args.words, args.pieces)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": True,
        "tokenize_chinese_chars": True,
        "strip_accents": None,
        "model_max_length": 512,
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    (args.out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    cjk = sum(1 for t in tokens if is_cjk(t))
    print(f"wrote {len(tokens)} tokens ({cjk} CJK) to {args.out}")


if __name__ == "__main__":
    main()
