"""Token ids kept on disk between runs, so that resume, eval and the window's data check tokenise nothing.

One entry per split, in TrainLab's ``tokens`` cache (``trainlab.cache_dir``),
keyed by a digest of everything the ids depend on:

* the split's own texts (and text pairs), hashed as read: this is the data's
  fingerprint at the level that matters, so a changed file, another
  ``val_fraction``, seed or column misses, and a copied or touched file with
  the same rows hits;
* the tokenizer: for a fast tokenizer its serialised model (vocabulary,
  normaliser, pre-tokeniser, special-token template), so the copy a finished
  run saved in ``model/`` (``eval``) hits the entry its training wrote; for
  any other, the bytes of its files;
* ``max_length``, whether type ids are kept, and the tokenizers version.

An entry is a folder of ``.npy`` arrays and ``meta.json``, written under a
temporary name (leading ``.``) and renamed into place whole, so a crash
mid-write leaves only a temporary that nothing reads. Reading memory-maps
the arrays and checks them against ``meta.json`` and each other (shapes,
dtypes, offsets that end where the ids end); anything off (a torn or
truncated file, a garbled ``meta.json``) is removed and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

from trainlab import cache_dir, cache_entry_used
from trainlab_plugins.text.data import TextSplit
from trainlab_plugins.text.tokencache import EncodedSplit

CACHE_NAME = "tokens"
FORMAT = 1
ARRAYS = ("ids", "offsets", "full_lengths", "type_ids")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


def tokenizer_digest(tokenizer: Any, folder: Path | None) -> str:
    """What the token ids depend on in the tokenizer, as a hex digest."""
    digest = hashlib.sha256()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        # truncation and padding are call-time state, not the tokenizer (the
        # transformers wrapper sets both again on every call), and
        # save_pretrained writes whatever the last call left: cleared first
        backend.no_truncation()
        backend.no_padding()
        digest.update(b"fast\0" + backend.to_str().encode())
    elif folder is not None:
        for name in TOKENIZER_FILES:
            path = Path(folder) / name
            if path.is_file():
                digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    else:
        digest.update(repr(type(tokenizer)).encode())
    digest.update(f"\0{type(tokenizer).__name__}".encode())
    return digest.hexdigest()


def split_key(split: TextSplit, tokenizer_id: str, max_length: int, with_types: bool) -> str:
    import tokenizers

    digest = hashlib.sha256()
    digest.update(f"format {FORMAT}|tokenizers {tokenizers.__version__}|{tokenizer_id}|{max_length}|{with_types}|{len(split)}\n".encode())
    # rows joined by NUL, and every row's length beside them: a NUL inside
    # a text cannot move a row boundary unnoticed
    for column in (split.texts, split.pairs):
        if column is None:
            continue
        digest.update(np.fromiter(map(len, column), dtype=np.int64, count=len(column)).tobytes())
        digest.update(b"\1" + "\0".join(column).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _write_array(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())


def _store(folder: Path, key: str, encoded: EncodedSplit) -> Path:
    final = folder / key
    tmp = folder / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        arrays = {"ids": encoded.ids, "offsets": encoded.offsets, "full_lengths": encoded.full_lengths, "type_ids": encoded.type_ids}
        meta: dict[str, Any] = {"format": FORMAT, "key": key, "examples": len(encoded.full_lengths), "arrays": {}}
        for name, array in arrays.items():
            if array is None:
                continue
            _write_array(tmp / f"{name}.npy", array)
            meta["arrays"][name] = {"dtype": str(array.dtype), "shape": list(array.shape)}
        # meta.json last: an entry without it was never finished
        with open(tmp / "meta.json", "w", encoding="utf-8") as handle:
            json.dump(meta, handle)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():  # not another process that wrote the same entry first
                raise
            shutil.rmtree(tmp, ignore_errors=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _load(entry: Path, key: str, labels: np.ndarray) -> EncodedSplit | None:
    """The entry's arrays, memory-mapped; None when it is absent, torn or not this key's."""
    try:
        meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("key") != key:
            return None
        arrays: dict[str, np.ndarray | None] = {name: None for name in ARRAYS}
        for name, spec in meta["arrays"].items():
            if name not in arrays:
                return None
            array = np.load(entry / f"{name}.npy", mmap_mode="r", allow_pickle=False)
            if str(array.dtype) != spec["dtype"] or list(array.shape) != spec["shape"]:
                return None
            arrays[name] = array
        ids, offsets, full = arrays["ids"], arrays["offsets"], arrays["full_lengths"]
        n = int(meta["examples"])
        if ids is None or offsets is None or full is None or len(offsets) != n + 1 or len(full) != n or n != len(labels):
            return None
        if int(offsets[0]) != 0 or int(offsets[-1]) != len(ids) or (n and int(np.diff(offsets).min()) < 0):
            return None
        types = arrays["type_ids"]
        if types is not None and len(types) != len(ids):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # a torn .npy raises ValueError from the memory map, a garbled meta.json from json
    return EncodedSplit(ids=ids, offsets=offsets, type_ids=types, labels=np.asarray(labels), full_lengths=full)


def cached_encode(
    split: TextSplit,
    targets: np.ndarray,
    key_parts: tuple[str, int, bool],
    encode: Callable[[], EncodedSplit],
) -> tuple[EncodedSplit, str]:
    """The split's token ids from the cache, or from ``encode()`` (then stored); and ``"hit"`` or ``"built"``.

    ``key_parts``: the tokenizer digest, ``max_length`` and whether type ids are kept.
    A cache that cannot be written (a full or read-only disk) costs the
    next run the tokenising, never this run.
    """
    tokenizer_id, max_length, with_types = key_parts
    key = split_key(split, tokenizer_id, max_length, with_types)
    try:
        folder = cache_dir(CACHE_NAME)
    except OSError:
        return encode(), "built"
    entry = folder / key
    if entry.is_dir():
        found = _load(entry, key, targets)
        if found is not None:
            cache_entry_used(entry)
            return found, "hit"
        shutil.rmtree(entry, ignore_errors=True)
    encoded = encode()
    try:
        cache_entry_used(_store(folder, key, encoded))
    except OSError:
        pass
    return encoded, "built"
