"""Reading labelled text: formats, encodings, splits, and the errors a user sees."""

import json

import pytest

from trainlab import DataError
from trainlab_plugins.text.data import Columns, check_labels, label_order, read_data, read_texts

COLS = Columns()


def write(path, text, encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def rows_csv(n=10, labels=("pos", "neg")):
    lines = ["text,label"] + [f"text number {i},{labels[i % len(labels)]}" for i in range(n)]
    return "\n".join(lines) + "\n"


def test_csv_tsv_and_jsonl_read_the_same_rows(tmp_path):
    csv_file = write(tmp_path / "a.csv", 'text,label\n"Hello, world",pos\n你好世界,neg\nmixed 中文 text,pos\n')
    tsv_file = write(tmp_path / "a.tsv", "text\tlabel\nHello, world\tpos\n你好世界\tneg\nmixed 中文 text\tpos\n")
    records = [{"text": "Hello, world", "label": "pos"}, {"text": "你好世界", "label": "neg"}, {"text": "mixed 中文 text", "label": "pos"}]
    jsonl_file = write(tmp_path / "a.jsonl", "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    for path in (csv_file, tsv_file, jsonl_file):
        data = read_data(path, COLS, 0.34, seed=1)
        texts = sorted(data.splits["train"].texts + data.splits["val"].texts)
        assert texts == sorted(["Hello, world", "你好世界", "mixed 中文 text"]), path.name


def test_utf8_bom_is_accepted(tmp_path):
    path = write(tmp_path / "bom.csv", "\ufefftext,label\nbonjour,fr\nhello,en\nsalut,fr\nhi,en\n")
    data = read_data(path, COLS, 0.5, seed=0)
    assert {*data.splits["train"].labels, *data.splits["val"].labels} == {"fr", "en"}


def test_a_missing_column_names_the_columns_that_exist(tmp_path):
    path = write(tmp_path / "reviews.csv", "review,stars\ngood,5\nbad,1\ngreat,5\nawful,1\n")
    with pytest.raises(DataError) as err:
        read_data(path, COLS, 0.2, seed=0)
    message = str(err.value)
    assert "reviews.csv" in message and "'text'" in message and "'review'" in message and "'stars'" in message
    assert "text_column" in message
    # and naming the columns makes it work
    data = read_data(path, Columns(text="review", label="stars"), 0.5, seed=0)
    assert len(data.splits["train"]) + len(data.splits["val"]) == 4


def test_a_missing_jsonl_key_lists_the_keys(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"sentence": "a", "label": 1}\n')
    with pytest.raises(DataError, match=r"d\.jsonl.*'text'.*'sentence'"):
        read_data(path, COLS, 0.2, seed=0)


def test_undecodable_bytes_name_the_line(tmp_path):
    body = "text,label\nfine,a\nalso fine,b\n".encode() + b"bad \xff\xfe byte,a\n"
    path = write(tmp_path / "latin.csv", body)
    with pytest.raises(DataError, match=r"latin\.csv: line 4: .*not UTF-8"):
        read_data(path, COLS, 0.2, seed=0)


def test_gbk_files_get_a_conversion_hint(tmp_path):
    path = write(tmp_path / "gbk.csv", "text,label\n今天天气很好,天气\n", encoding="gbk")
    with pytest.raises(DataError, match="GB18030"):
        read_data(path, COLS, 0.2, seed=0)


def test_malformed_csv_names_the_line(tmp_path):
    path = write(tmp_path / "bad.csv", 'text,label\nok,a\n"unclosed quote,b\n')
    with pytest.raises(DataError, match=r"bad\.csv: line \d+: malformed CSV"):
        read_data(path, COLS, 0.2, seed=0)


def test_an_unquoted_separator_names_the_line_and_says_to_quote(tmp_path):
    path = write(tmp_path / "commas.csv", "text,label\nfine,a\nhello, world,b\n")
    with pytest.raises(DataError, match=r"commas\.csv: line 3: 3 fields where the header has 2; quote"):
        read_data(path, COLS, 0.2, seed=0)


def test_malformed_jsonl_names_the_line(tmp_path):
    path = write(tmp_path / "bad.jsonl", '{"text": "a", "label": 1}\n\n{"text": "b", "label": 2\n')
    with pytest.raises(DataError, match=r"bad\.jsonl: line 3: not valid JSON"):
        read_data(path, COLS, 0.2, seed=0)


@pytest.mark.parametrize("content", ["", "\n\n", "text,label\n"])
def test_empty_files_are_errors(tmp_path, content):
    path = write(tmp_path / "empty.csv", content)
    with pytest.raises(DataError, match=r"empty\.csv: (the file is empty|no usable rows)"):
        read_data(path, COLS, 0.2, seed=0)


def test_missing_file_and_folder_without_train(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_data(tmp_path / "nope.csv", COLS, 0.2, seed=0)
    write(tmp_path / "folder" / "notes.csv", rows_csv())
    with pytest.raises(DataError, match=r"no train\.csv.*notes\.csv"):
        read_data(tmp_path / "folder", COLS, 0.2, seed=0)


def test_empty_texts_and_missing_labels_are_skipped_and_counted(tmp_path):
    path = write(tmp_path / "gaps.csv", "text,label\na,x\n   ,y\nb,y\nc,\n,x\nd,x\ne,y\n")
    data = read_data(path, COLS, 0.3, seed=0)
    assert data.skipped.counts == {"empty text": 2, "no label": 1}
    assert ("gaps.csv:3", "empty text") in data.skipped.examples
    assert ("gaps.csv:5", "no label") in data.skipped.examples
    assert sorted(data.splits["train"].texts + data.splits["val"].texts) == ["a", "b", "d", "e"]


def test_folder_splits_and_a_val_label_training_lacks(tmp_path):
    write(tmp_path / "d" / "train.csv", rows_csv(8))
    write(tmp_path / "d" / "val.csv", "text,label\nfine,pos\nodd one,maybe\n")
    write(tmp_path / "d" / "test.jsonl", '{"text": "t", "label": "neg"}\n')
    data = read_data(tmp_path / "d", COLS, 0.2, seed=0)
    assert set(data.splits) == {"train", "val", "test"} and len(data.splits["train"]) == 8
    names = label_order(data.splits["train"].labels)
    with pytest.raises(DataError, match=r"val\.csv: line 3: label 'maybe' does not occur in training"):
        check_labels(data, names, trained=False)


def test_a_folder_without_val_holds_out_a_stratified_share(tmp_path):
    write(tmp_path / "d" / "train.csv", rows_csv(40, labels=("a", "b", "c", "d")))
    data = read_data(tmp_path / "d", COLS, 0.3, seed=3)
    val = data.splits["val"]
    # 10 rows per label, 30% of each held out
    assert {label: val.labels.count(label) for label in "abcd"} == {"a": 3, "b": 3, "c": 3, "d": 3}
    assert len(data.splits["train"]) == 28
    assert data.split_from == "train.csv"
    again = read_data(tmp_path / "d", COLS, 0.3, seed=3)
    assert again.splits["val"].texts == val.texts  # reproducible from the seed
    other = read_data(tmp_path / "d", COLS, 0.3, seed=4)
    assert other.splits["val"].texts != val.texts


def test_a_label_with_one_row_stays_in_training(tmp_path):
    path = write(tmp_path / "rare.csv", rows_csv(10) + "the only one,rare\n")
    data = read_data(path, COLS, 0.5, seed=0)
    assert "rare" in data.splits["train"].labels and "rare" not in data.splits["val"].labels


def test_integer_labels_sort_numerically_and_json_ints_equal_csv_strings(tmp_path):
    assert label_order(["10", "2", "1", "2"]) == ["1", "2", "10"]
    assert label_order(["b", "a", "10"]) == ["10", "a", "b"]
    jsonl = write(tmp_path / "ints.jsonl", "".join(json.dumps({"text": f"t{i}", "label": i % 3}) + "\n" for i in range(9)))
    data = read_data(jsonl, COLS, 0.34, seed=0)
    assert set(data.splits["train"].labels) == {"0", "1", "2"}
    bad = write(tmp_path / "float.jsonl", '{"text": "a", "label": 0.5}\n')
    with pytest.raises(DataError, match=r"float\.jsonl: line 1: label 0\.5"):
        read_data(bad, COLS, 0.2, seed=0)


def test_semicolon_csv_from_spreadsheets(tmp_path):
    path = write(tmp_path / "excel.csv", "text;label\nbonjour, le monde;fr\nhello;en\nsalut;fr\nhi;en\n")
    data = read_data(path, COLS, 0.5, seed=0)
    assert "bonjour, le monde" in data.splits["train"].texts + data.splits["val"].texts


def test_text_pairs(tmp_path):
    path = write(tmp_path / "pairs.csv", "q,a,label\nwhat?,that,yes\nwho?,nobody,no\nwhere?,here,yes\nwhen?,never,no\n")
    data = read_data(path, Columns(text="q", label="label", pair="a"), 0.5, seed=0)
    train = data.splits["train"]
    assert train.pairs is not None and len(train.pairs) == len(train.texts)
    with pytest.raises(DataError, match="text_pair_column"):
        read_data(path, Columns(text="q", label="label", pair="answer"), 0.5, seed=0)


def test_line_separators_inside_texts_do_not_split_rows(tmp_path):
    path = write(tmp_path / "odd.csv", 'text,label\n"one\u2028still one",a\n"two\nlines",b\nthree,a\nfour,b\n')
    data = read_data(path, COLS, 0.5, seed=0)
    texts = data.splits["train"].texts + data.splits["val"].texts
    assert "one\u2028still one" in texts and "two\nlines" in texts


def test_evaluating_reads_a_file_whole(tmp_path):
    path = write(tmp_path / "new.csv", rows_csv(10))
    data = read_data(path, COLS, 0.2, seed=0, whole=True)
    assert list(data.splits) == ["val"] and len(data.splits["val"]) == 10


def test_texts_to_predict_from_files(tmp_path):
    csv_file = write(tmp_path / "in.csv", "id,text\n1,first text\n2,\n3,third\n")
    assert read_texts(csv_file, COLS) == ["first text", "third"]
    single = write(tmp_path / "one.csv", "sentence\nalpha\nbeta\n")
    assert read_texts(single, COLS) == ["alpha", "beta"]
    jsonl = write(tmp_path / "in.jsonl", '{"text": "a b"}\n"just a string"\n')
    assert read_texts(jsonl, COLS) == ["a b", "just a string"]
    txt = write(tmp_path / "in.txt", "line one\r\n\nline two\n")
    assert read_texts(txt, COLS) == ["line one", "line two"]
    wide = write(tmp_path / "wide.csv", "a,b\n1,2\n")
    with pytest.raises(DataError, match=r"no column 'text'.*'a', 'b'"):
        read_texts(wide, COLS)


def test_discovery_and_data_reading_do_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys, trainlab_plugins.text as p, trainlab_plugins.text.data, trainlab_plugins.text.batching; "
        "print(p.trainlab_tasks()[0].id, p.trainlab_api_version(), 'torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["text-classification", "2.0", "False", "False"]
