"""text-generation's readers: every format people have, errors naming file, line and field, bounded lines."""

from __future__ import annotations

import json

import pytest

from trainlab import DataError, UsageError
from trainlab_plugins.textgen import data as chat_data

COLUMNS = chat_data.Columns()


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_each_format_reads_as_the_same_conversation(tmp_path):
    expected = (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add 2 and 3"},
        {"role": "assistant", "content": "5"},
    )
    files = {
        "chat.jsonl": [{"messages": [dict(m) for m in expected]}],
        "sharegpt.jsonl": [{"conversations": [{"from": "system", "value": "Be brief."}, {"from": "human", "value": "Add 2 and 3"}, {"from": "gpt", "value": "5"}]}],
        "alpaca.json": None,
        "pr.jsonl": [{"system": "Be brief.", "prompt": "Add 2 and 3", "response": "5"}],
    }
    for name, records in files.items():
        path = tmp_path / name
        if records is None:
            path.write_text(json.dumps([{"system": "Be brief.", "instruction": "Add", "input": "2 and 3", "output": "5"}], indent=2), encoding="utf-8")
        else:
            _jsonl(path, records)
        split = chat_data.read_file(path, COLUMNS)
        (example,) = split.examples
        if name == "alpaca.json":
            assert example.messages[1]["content"] == "Add\n\n2 and 3"
            assert split.formats == {"alpaca": 1}
        else:
            assert example.messages == expected, name
    csv_path = tmp_path / "pairs.tsv"
    csv_path.write_text("prompt\tresponse\nAdd 2 and 3\t5\n", encoding="utf-8")
    (example,) = chat_data.read_file(csv_path, COLUMNS).examples
    assert example.messages[-1] == {"role": "assistant", "content": "5"} and example.where.endswith("line 2")


def test_plain_text_paragraphs_and_text_records(tmp_path):
    txt = tmp_path / "book.txt"
    txt.write_text("First paragraph,\nstill first.\n\nSecond one.\n", encoding="utf-8")
    split = chat_data.read_file(txt, COLUMNS)
    assert [e.text for e in split.examples] == ["First paragraph,\nstill first.", "Second one."]
    assert split.examples[1].where.endswith("line 4")
    records = _jsonl(tmp_path / "t.jsonl", [{"text": "a document"}])
    assert chat_data.read_file(records, COLUMNS).examples[0].text == "a document"


@pytest.mark.parametrize(
    "record, words",
    [
        ({"messages": [{"role": "robot", "content": "x"}]}, ["line 2", "'messages[0].role'", "'robot'"]),
        ({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": ["x"]}]}, ["line 2", "messages[1].content", "must be text"]),
        ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}]}, ["line 2", "messages[1]", "second user turn"]),
        ({"messages": [{"role": "user", "content": "a"}]}, ["line 2", "no assistant turn"]),
        ({"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": " "}]}, ["line 2", "conversations[1]", "empty assistant"]),
        ({"instruction": "do it"}, ["line 2", "'output' is missing"]),
        ({"question": "?", "answer": "!"}, ["line 2", "no field", "'question'"]),
    ],
)
def test_bad_records_name_file_line_and_field(tmp_path, record, words):
    path = tmp_path / "bad.jsonl"
    good = {"prompt": "p", "response": "r"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        chat_data.read_file(path, COLUMNS)
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message


def test_a_huge_line_is_refused_without_reading_it(tmp_path, monkeypatch):
    monkeypatch.setattr(chat_data, "MAX_LINE_BYTES", 1 << 20)
    path = tmp_path / "huge.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"prompt": "p", "response": "r"}) + "\n")
        handle.write('{"prompt": "' + "x" * (3 << 20) + '", "response": "r"}\n')
    with pytest.raises(DataError, match=r"huge\.jsonl, line 2: longer than 1 MB"):
        chat_data.read_file(path, COLUMNS)
    csv_path = tmp_path / "huge.csv"
    csv_path.write_text("prompt,response\n" + "y" * (3 << 20) + ",r\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"huge\.csv, line 2"):
        chat_data.read_file(csv_path, COLUMNS)


def test_a_json_array_streams_and_names_the_line_of_a_bad_record(tmp_path):
    path = tmp_path / "arr.json"
    path.write_text('[\n  {"prompt": "a", "response": "b"},\n  {"prompt": "c", "response": ""}\n]\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"arr\.json, line 3: field 'response' is empty"):
        chat_data.read_file(path, COLUMNS)


def test_a_folder_of_splits_and_a_carved_validation(tmp_path):
    _jsonl(tmp_path / "train.jsonl", [{"prompt": f"p{i}", "response": "r"} for i in range(10)])
    _jsonl(tmp_path / "dev.jsonl", [{"prompt": "q", "response": "r"}])
    data = chat_data.read_data(str(tmp_path), COLUMNS, 0.2, 0)
    assert {k: len(v.examples) for k, v in data.splits.items()} == {"train": 10, "val": 1}
    single = chat_data.read_data(str(tmp_path / "train.jsonl"), COLUMNS, 0.2, 0)
    assert {k: len(v.examples) for k, v in single.splits.items()} == {"train": 8, "val": 2}
    assert single.split_from == "train.jsonl"


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(UsageError, match=r"trainlab\[parquet\]"):
        chat_data.read_file(path, COLUMNS)


def test_prompts_to_answer_may_lack_answers(tmp_path):
    path = _jsonl(
        tmp_path / "prompts.jsonl",
        [{"prompt": "Hi"}, {"messages": [{"role": "user", "content": "Yo"}]}, {"instruction": "Say 1", "output": "1"}],
    )
    prompts = chat_data.read_prompts(path, COLUMNS)
    assert [p.prompt_messages()[-1]["content"] for p in prompts] == ["Hi", "Yo", "Say 1"]
    assert [p.answer() for p in prompts] == ["", "", "1"]
