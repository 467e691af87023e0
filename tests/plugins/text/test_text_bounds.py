"""Extreme rows in text data: every reader bounds a row, tokenising reads a bounded prefix, and
preparing a run with the longest rows allowed stays within the memory its plan shows."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from helpers import ONE_THREAD, subprocess_env
from trainlab import DataError
from trainlab_plugins.text.data import MAX_FIELD_CHARS, MAX_JSON_LINE_CHARS, Columns, TextSplit, read_data, read_texts
from trainlab_plugins.text.tokencache import encode_split, prefix_chars

COLS = Columns()
ROWS = [{"text": f"an ordinary text number {i}", "label": "ab"[i % 2]} for i in range(20)]


def jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_every_reader_refuses_a_text_over_the_csv_readers_bound_naming_file_and_line(tmp_path):
    assert MAX_FIELD_CHARS == csv.field_size_limit()  # the CSV reader's bound, the same for all
    long_text = "word " * (MAX_FIELD_CHARS // 5 + 1)
    over_line = jsonl(tmp_path / "line.jsonl", [*ROWS[:3], {"text": "x" * (MAX_JSON_LINE_CHARS + 1), "label": "a"}, *ROWS])
    over_field = jsonl(tmp_path / "field.jsonl", [*ROWS[:5], {"text": long_text, "label": "b"}, *ROWS])
    tsv = tmp_path / "field.tsv"
    tsv.write_text("text\tlabel\n" + "".join(f"{r['text']}\t{r['label']}\n" for r in ROWS[:2]) + f"{long_text}\ta\n", encoding="utf-8")
    txt = tmp_path / "predict.txt"
    txt.write_text("short\n" + long_text + "\n", encoding="utf-8")
    cases = [
        (over_line, "line 4: a line longer than", f"{MAX_JSON_LINE_CHARS:,}"),
        (over_field, "line 6: field 'text' longer than", f"{MAX_FIELD_CHARS:,}"),
        (tsv, "line 4 (row 3): a field longer than", f"{MAX_FIELD_CHARS:,}"),
    ]
    for path, where, limit in cases:
        for read in (lambda: read_data(path, COLS, 0.2, 0), lambda: read_texts(path, COLS)):
            with pytest.raises(DataError) as err:
                read()
            message = str(err.value)
            assert str(path) in message and where in message and f"{limit} characters" in message and "reader's limit" in message
    with pytest.raises(DataError, match=rf"predict\.txt: line 2: a line longer than {MAX_FIELD_CHARS:,} characters"):
        read_texts(txt, COLS)
    # at the bound is fine
    ok = jsonl(tmp_path / "ok.jsonl", [*ROWS, {"text": "y" * MAX_FIELD_CHARS, "label": "a"}])
    assert max(map(len, read_data(ok, COLS, 0.2, 0, whole=True).splits["val"].texts)) == MAX_FIELD_CHARS


def test_tokenising_reads_a_bounded_prefix_and_gives_the_whole_texts_truncated_ids():
    from transformers import AutoTokenizer

    from trainlab_plugins.text.models import tiny_bert_vocab_dir

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()))
    max_length = 16
    texts = [
        "short text",
        "hello world, " * 5_000,  # far past the prefix
        " " * 50_000 + "words after a long run of spaces " * 10,  # a prefix of spaces yields no tokens
        "x" * 30_000 + " then some words",  # one giant unknown word
        "a sentence of ordinary length that runs a little past sixteen tokens for sure, yes",
    ]
    # a truncated text pair costs the tokenizer time and memory in the product of the two
    # lengths (every overflowing window of one with every window of the other): the
    # reference ids of pairs are made on shorter ones
    pairs = ["p", "q " * 1_500, "r", "s " * 3, "t"]
    seen: list[int] = []

    def spy(*args, **kwargs):
        seen.extend(len(t) for batch in args[:2] if batch for t in batch)
        return tokenizer(*args, **kwargs)

    for with_pairs in (False, True):
        rows = [text[:4_000] for text in texts] if with_pairs else texts
        split = TextSplit("train", path=None, texts=rows, pairs=pairs if with_pairs else None, labels=[0] * 5, lines=list(range(5)))
        seen.clear()
        encoded = encode_split(spy, split, np.zeros(5), max_length, use_type_ids=with_pairs)
        for i, text in enumerate(rows):
            pair = pairs[i] if with_pairs else None
            whole = tokenizer(text, pair, truncation=True, max_length=max_length)
            assert list(encoded[i][0]) == whole["input_ids"], (i, with_pairs)
            if with_pairs:
                assert list(encoded[i][1]) == whole["token_type_ids"]
            assert (encoded.full_lengths[i] > max_length) == (len(tokenizer(text, pair)["input_ids"]) > max_length)
        # the long texts are read in bounded prefixes, widened only where the first was not enough
        assert max(seen) < 60_000 < len(texts[1])
        assert sorted(seen)[len(seen) // 2] <= prefix_chars(max_length)


# What the memory probe does before it measures the "other" of a plan's figure (the
# process's resident memory once the run is planned and its data prepared), and the
# peak the process reached on the way there.
PREPARE_AND_MEASURE = """
import json, sys
import psutil
import transformers
from trainlab.engine.plan import RunRequest, plan_run
from trainlab.pluginhost.host import registry
registry()  # what a first start in a new home does (finding the plugins) is no part of preparing
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # the peak (VmHWM) counts from here
plan = plan_run(RunRequest(task="text-classification", data=sys.argv[1], params={"max_length": 32, "device": "cpu"}))
status = open("/proc/self/status").read()
peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
lengths = plan.task.encoded["train"].full_lengths.tolist()
print(json.dumps({"peak": peak, "after": psutil.Process().memory_info().rss, "lengths": lengths, "cache": plan.task.token_cache}))
"""
SLACK = 64 << 20  # allocator noise between two processes' resident memory


@pytest.mark.long
@pytest.mark.skipif(sys.platform != "linux", reason="the peak resident memory is reset and read through /proc")
def test_preparing_the_longest_rows_allowed_stays_within_the_plans_memory(tmp_path):
    # 10 MB of text in rows at the bound, beside ordinary ones
    records = [{"text": f"an ordinary review number {i}", "label": "ab"[i % 2]} for i in range(200)]
    records += [{"text": ("hello world " * (MAX_FIELD_CHARS // 12 + 1))[:MAX_FIELD_CHARS], "label": "ab"[i % 2]} for i in range(80)]
    data = jsonl(tmp_path / "data.jsonl", records)
    assert data.stat().st_size > 10e6

    def prepare() -> dict:
        run = [sys.executable, "-c", PREPARE_AND_MEASURE, str(data)]
        env = subprocess_env(PYTHONPATH="", **ONE_THREAD)  # the built-in plugins alone, as a user has them
        result = subprocess.run(run, capture_output=True, text=True, timeout=240, env=env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    # the run tokenises; the memory probe, after it, finds the token ids cached and
    # measures the plan's "other" without tokenising
    run, probe = prepare(), prepare()
    assert run["cache"]["train"] == "built" and probe["cache"]["train"] == "hit"
    assert sum(n > 32 for n in run["lengths"]) >= 60  # the long rows are there, and cut
    assert run["peak"] <= probe["after"] + SLACK, (run["peak"] / 1e9, probe["after"] / 1e9)


def test_prediction_cuts_a_long_text_pair_to_prefixes_with_the_same_truncated_ids():
    from transformers import AutoTokenizer

    from trainlab_plugins.text.models import tiny_bert_vocab_dir
    from trainlab_plugins.text.tokencache import cut_for_truncation

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()))
    max_length = 16
    for text, pair in [("hello world, " * 400, "q " * 2_000), ("short", "also short"), (" " * 9_000 + "late words", "x")]:
        first, second = cut_for_truncation(tokenizer, text, pair, max_length)
        assert len(first) + len(second) <= len(text) + len(pair)
        cut = tokenizer(first, second, truncation=True, max_length=max_length)["input_ids"]
        assert cut == tokenizer(text, pair, truncation=True, max_length=max_length)["input_ids"]
    first, second = cut_for_truncation(tokenizer, "hello world, " * 10_000, "q " * 50_000, max_length)
    assert len(first) <= prefix_chars(max_length) and len(second) <= prefix_chars(max_length)
