"""The text tasks' token ids on disk: a second preparation of the same data tokenises nothing.

Driven through the real preparation (``prepare_task``, what train, resume,
eval and the window's data check call) on a small copy of the bundled text
sample; the tokenizer's own ``__call__`` is counted, so a hit is a run that
never asked the tokenizer for ids.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from trainlab.system import cache
from trainlab.engine.prepare import prepare_task
from helpers import sample_head

TASK = "text-classification"
PARAMS = {"epochs": "1", "device": "cpu", "batch_size": "16"}


@pytest.fixture
def tokenizer_calls(monkeypatch):
    from transformers import PreTrainedTokenizerBase

    calls = []
    real = PreTrainedTokenizerBase.__call__

    def counting(self, *args, **kwargs):
        calls.append(len(args[0]) if args and isinstance(args[0], list) else 1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PreTrainedTokenizerBase, "__call__", counting)
    return calls


def token_entries() -> list:
    return [entry for entry in cache.report().entries if entry.cache == "tokens"]


def ids_of(prepared, split="train"):
    encoded = prepared.task.dataset(split)
    return [list(encoded[i][0]) for i in range(len(encoded))]


def test_a_second_preparation_reads_the_ids_from_the_cache(tmp_path, tokenizer_calls):
    data = sample_head(tmp_path)
    first = prepare_task(TASK, str(data), PARAMS)
    assert tokenizer_calls, "the first preparation tokenises"
    assert first.summary.extra["token_cache"] == {"train": "built", "val": "built"}
    assert len(token_entries()) == 2

    tokenizer_calls.clear()
    heard = []
    second = prepare_task(TASK, str(data), PARAMS, log=heard.append)
    assert tokenizer_calls == []  # no tokenizer call at all
    assert second.summary.extra["token_cache"] == {"train": "hit", "val": "hit"}
    assert any("read from the cache" in e.message for e in heard)
    assert ids_of(second) == ids_of(first)
    assert second.summary.extra["tokens"] == first.summary.extra["tokens"]  # the length statistics too
    assert isinstance(second.task.dataset("train").ids, np.memmap)


def test_another_max_length_or_a_changed_file_misses(tmp_path, tokenizer_calls):
    data = sample_head(tmp_path)
    prepare_task(TASK, str(data), PARAMS)
    shorter = prepare_task(TASK, str(data), {**PARAMS, "max_length": "16"})
    assert shorter.summary.extra["token_cache"] == {"train": "built", "val": "built"}
    assert max(len(ids) for ids in ids_of(shorter)) <= 16

    train = data / "train.csv"
    lines = train.read_text(encoding="utf-8").splitlines(keepends=True)
    header, first_row = lines[0], lines[1]
    label = first_row.rstrip("\n").rsplit(",", 1)[1]
    train.write_text(header + f"an entirely new sentence about kettles,{label}\n" + "".join(lines[2:]), encoding="utf-8")
    tokenizer_calls.clear()
    changed = prepare_task(TASK, str(data), PARAMS)
    assert changed.summary.extra["token_cache"] == {"train": "built", "val": "hit"}  # val.csv is as it was
    assert tokenizer_calls
    assert changed.task.tokenizer.decode(changed.task.dataset("train")[0][0][1:-1]) == "an entirely new sentence about kettles"


@pytest.mark.parametrize("damage", ["truncate ids", "garble meta", "drop offsets"])
def test_a_torn_entry_is_ignored_and_rebuilt(tmp_path, tokenizer_calls, damage):
    data = sample_head(tmp_path)
    first = prepare_task(TASK, str(data), PARAMS)
    expected = ids_of(first)
    for entry in token_entries():
        folder = cache.caches_root() / "tokens" / entry.name
        if damage == "truncate ids":
            path = folder / "ids.npy"
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        elif damage == "garble meta":
            (folder / "meta.json").write_text('{"format": 1, "key"', encoding="utf-8")
        else:
            (folder / "offsets.npy").unlink()
    again = prepare_task(TASK, str(data), PARAMS)
    assert again.summary.extra["token_cache"] == {"train": "built", "val": "built"}
    assert ids_of(again) == expected
    third = prepare_task(TASK, str(data), PARAMS)  # the rebuilt entries are whole again
    assert third.summary.extra["token_cache"] == {"train": "hit", "val": "hit"}


def test_a_crash_mid_write_leaves_nothing_that_reads_as_an_entry(tmp_path, tokenizer_calls):
    """A temporary left by a killed writer is not an entry: the next run tokenises and `cache clear` removes it."""
    data = sample_head(tmp_path)
    folder = cache.cache_dir("tokens")
    torn = folder / ".deadbeef.12345.abcd"
    torn.mkdir()
    (torn / "ids.npy").write_bytes(b"\x93NUMPY half")
    prepared = prepare_task(TASK, str(data), PARAMS)
    assert prepared.summary.extra["token_cache"] == {"train": "built", "val": "built"}
    assert len(token_entries()) == 2  # the temporary is not listed
    cache.clear()
    assert list(folder.iterdir()) == []


def test_the_cap_evicts_the_least_recently_used_entries(tmp_path, tokenizer_calls):
    data = sample_head(tmp_path)
    prepare_task(TASK, str(data), {**PARAMS, "max_length": "16"})
    old = {entry.path for entry in token_entries()}
    one_pair = sum(entry.bytes for entry in token_entries())
    cache.set_limit_gb(1.5 * one_pair / 1e9)  # room for one preparation's entries, not two
    prepare_task(TASK, str(data), PARAMS)
    left = {entry.path for entry in token_entries()}
    assert left and not (left & old), "the older entries went, the new ones stayed"
    assert cache.report().total_bytes <= cache.limit_bytes()


def test_the_command_line_lists_and_clears_the_cache(tmp_path):
    data = sample_head(tmp_path)
    prepare_task(TASK, str(data), PARAMS)

    def trainlab(*args):
        done = subprocess.run([sys.executable, "-m", "trainlab", "cache", *args, "--json"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    listed = trainlab("list")
    assert listed["caches"]["tokens"]["entries"] == 2 and listed["total_bytes"] > 0
    assert listed["limit_bytes"] == 5_000_000_000
    assert trainlab("--limit-gb", "2")["limit_bytes"] == 2_000_000_000
    cleared = trainlab("clear")
    assert cleared["cleared_bytes"] == listed["total_bytes"] and cleared["entries"] == []
    human = subprocess.run([sys.executable, "-m", "trainlab", "cache"], capture_output=True, text=True, timeout=60)
    assert human.returncode == 0 and "of a 2.0 GB limit" in human.stdout
    bad = subprocess.run([sys.executable, "-m", "trainlab", "cache", "--limit-gb", "-1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cache limit" in bad.stderr


@pytest.mark.long
def test_eval_of_a_finished_run_reads_the_ids_its_training_wrote(tmp_path):
    """eval loads the tokenizer the run saved in model/, not the preset's: the same tokenizer, so the same entries."""
    data = sample_head(tmp_path, rows=24)
    run = tmp_path / "run"
    base = [sys.executable, "-m", "trainlab"]
    trained = subprocess.run([*base, "train", TASK, "--data", str(data), "--epochs", "1", "--out", str(run), "--json"],
                             capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stderr
    assert "read from the cache" not in trained.stderr
    evaluated = subprocess.run([*base, "eval", str(run), "--json"], capture_output=True, text=True, timeout=300)
    assert evaluated.returncode == 0, evaluated.stderr
    assert "token ids of train, val read from the cache" in evaluated.stderr


def test_rows_that_join_alike_key_apart(tmp_path):
    """Texts are hashed joined: a NUL inside a text must not make two different splits one entry."""
    from trainlab_plugins.text.data import TextSplit
    from trainlab_plugins.text.token_cache import split_key

    one = TextSplit("train", tmp_path / "a.csv", texts=["a\0b", "c"])
    other = TextSplit("train", tmp_path / "a.csv", texts=["a", "b\0c"])
    assert split_key(one, "tok", 32, False) != split_key(other, "tok", 32, False)
    assert split_key(one, "tok", 32, False) == split_key(TextSplit("val", tmp_path / "b.csv", texts=["a\0b", "c"]), "tok", 32, False)
