"""The text readers fuzzed: labelled text (CSV, TSV, JSONL; classes, numbers, label sets),
texts to predict (and .txt), and text-generation data (Alpaca, chat messages, ShareGPT,
prompt/response CSV/TSV, plain text, JSON arrays, Parquet).

The property (fuzzing.py): a one-line ``DataError`` naming the file, or the data read.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import strategies as st

from fuzzing import DEPTHS, file_bytes, fresh, fuzz, json_scalar, json_value, odd_text, one_line_error, table_bytes, write
from trainlab import DataError
from trainlab_plugins.text import data as text_data
from trainlab_plugins.text.labels import ClassLabel, LabelSetKind, NumberLabel
from trainlab_plugins.textgen import data as chat_data

LABEL_KINDS = {"class": ClassLabel(), "number": NumberLabel(), "labels": LabelSetKind()}
# Cases that failed once, kept: JSON nested past the parser's recursion limit
# (RecursionError), an integer past the largest float as a number label (OverflowError).
DEEP = b'{"text": "a", "label": ' + b"[" * 3000 + b"]" * 3000 + b"}\n"
HUGE_NUMBER = b'{"text": "a", "label": 1' + b"0" * 400 + b'}\n{"text": "b", "label": 2}\n'


# -- labelled text --------------------------------------------------------------------

labelled_row = st.fixed_dictionaries(
    {"text": odd_text, "label": st.one_of(json_scalar, st.lists(odd_text, max_size=3))},
    optional={"pair": odd_text, "extra": json_value},
)


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
@pytest.mark.parametrize("kind", sorted(LABEL_KINDS))
def test_labelled_text_reads_or_names_the_file_in_one_line(tmp_path, depth, suffix, kind):
    def check(case):
        path = write(fresh(tmp_path) / f"train{suffix}", case)
        one_line_error(lambda: text_data.read_data(path, text_data.Columns(), 0.2, 0, label_kind=LABEL_KINDS[kind]))

    fuzz(depth, f"text {kind} {suffix}", table_bytes(labelled_row, suffix), check, examples=(DEEP, HUGE_NUMBER))


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".txt"])
def test_texts_to_predict_read_or_name_the_file_in_one_line(tmp_path, depth, suffix):
    rows = table_bytes(labelled_row, ".csv" if suffix == ".txt" else suffix)

    def check(case):
        path = write(fresh(tmp_path) / f"texts{suffix}", case)
        texts = one_line_error(lambda: text_data.read_texts(path, text_data.Columns(pair="pair")))
        assert isinstance(texts, (list, DataError))

    fuzz(depth, f"text predict {suffix}", rows, check, examples=(DEEP, b"[" * 3000 + b"\n"))


# -- text generation ------------------------------------------------------------------

turn = st.fixed_dictionaries({"role": st.one_of(st.sampled_from(["system", "user", "assistant", "tool"]), json_scalar),
                              "content": st.one_of(odd_text, json_scalar)})  # fmt: skip
share_turn = st.fixed_dictionaries({"from": st.one_of(st.sampled_from(["human", "gpt", "system"]), json_scalar),
                                    "value": st.one_of(odd_text, json_scalar)})  # fmt: skip
chat_record = st.one_of(
    st.fixed_dictionaries({"instruction": odd_text, "output": odd_text}, optional={"input": json_scalar, "system": json_scalar}),
    st.fixed_dictionaries({"messages": st.one_of(st.lists(turn, max_size=5), json_value)}),
    st.fixed_dictionaries({"conversations": st.one_of(st.lists(share_turn, max_size=5), json_value)}),
    st.fixed_dictionaries({"prompt": odd_text, "response": st.one_of(odd_text, json_scalar)}, optional={"system": odd_text}),
    st.fixed_dictionaries({"text": st.one_of(odd_text, json_scalar)}),
    json_value,
)
flat_record = st.one_of(
    st.fixed_dictionaries({"prompt": odd_text, "response": odd_text}, optional={"system": odd_text}),
    st.fixed_dictionaries({"instruction": odd_text, "output": odd_text}, optional={"input": odd_text}),
    st.fixed_dictionaries({"text": odd_text}),
)


def _parquet(records: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.Table.from_pylist([{k: v for k, v in r.items()} for r in records] or [{"text": "x"}])
    except (pa.ArrowException, TypeError, ValueError, OverflowError):  # values Arrow cannot type: the plain case instead
        table = pa.Table.from_pylist([{"prompt": "hi", "response": "hello"}])
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def _damaged_parquet() -> bytes:
    """A Parquet file with one byte of its footer flipped: Arrow's message about it spans two lines."""
    data = bytearray(_parquet([{"text": "x"}]))
    data[len(data) - 9] ^= 0xFF
    return bytes(data)


# Cases that failed once, kept: a message of two lines from Arrow, JSON nested
# past the parser's recursion limit (a line of JSONL, an element of a JSON array).
CHAT_EXAMPLES = (_damaged_parquet(), b"[" * 3000 + b"]" * 3000 + b"\n", b"[" + b"[" * 3000 + b"]" * 3000 + b"]\n")


def _chat_file(suffix: str) -> st.SearchStrategy[bytes]:
    if suffix == ".parquet":
        return file_bytes(st.lists(st.one_of(flat_record, st.fixed_dictionaries({"text": json_scalar})), max_size=6).map(_parquet))
    if suffix == ".txt":
        return file_bytes(st.lists(odd_text, max_size=8).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")))
    return table_bytes(flat_record if suffix in (".csv", ".tsv") else chat_record, suffix)


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("suffix", chat_data.SUFFIXES)
def test_text_generation_data_reads_or_names_the_file_in_one_line(tmp_path, depth, suffix):
    def check(case):
        path = write(fresh(tmp_path) / f"train{suffix}", case)
        one_line_error(lambda: chat_data.read_data(str(path), chat_data.Columns(), 0.2, 0))
        one_line_error(lambda: chat_data.read_prompts(path, chat_data.Columns()))

    fuzz(depth, f"text-generation {suffix}", _chat_file(suffix), check, examples=CHAT_EXAMPLES)
