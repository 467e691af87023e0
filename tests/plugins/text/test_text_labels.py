"""Reading numbers and label sets for text-regression and text-multilabel: formats, splits, errors."""

import csv
import json

import pytest

from trainlab import DataError
from trainlab_plugins.text.data import Columns, check_labels, read_data
from trainlab_plugins.text.labels import LabelSetKind, NumberLabel
from trainlab_resources import resource_path

NUMBER = NumberLabel()
TAGS = LabelSetKind(";")
MULTI = Columns(label="labels")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(path, records):
    return write(path, "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")


def all_rows(data):
    return sorted(
        (text, label) for split in data.splits.values() for text, label in zip(split.texts, split.labels)
    )


# -- numbers ---------------------------------------------------------------------


def test_numbers_read_alike_from_csv_tsv_and_jsonl(tmp_path):
    rows = [("great", 4.5), ("awful", -2.0), ("fine", 3.0), ("tiny", 1e-3)]
    csv_file = write(tmp_path / "r.csv", "text,label\n" + "".join(f"{t},{v}\n" for t, v in rows))
    tsv_file = write(tmp_path / "r.tsv", "text\tlabel\n" + "".join(f"{t}\t {v} \n" for t, v in rows))
    jsonl_file = jsonl(tmp_path / "r.jsonl", [{"text": t, "label": v} for t, v in rows])
    for path in (csv_file, tsv_file, jsonl_file):
        data = read_data(path, Columns(), 0.25, seed=0, label_kind=NUMBER)
        assert all_rows(data) == sorted(rows), path.name
        assert all(isinstance(v, float) for _, v in all_rows(data))


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("good", r"bad\.csv: line 3: label 'good' is not a number"),
        ("3,5", r"bad\.csv: line 3: label '3,5' is not a number \(write the decimal separator as a dot"),
        ("nan", r"bad\.csv: line 3: label 'nan' is not a finite number"),
        ("-inf", r"bad\.csv: line 3: label '-inf' is not a finite number"),
    ],
)
def test_a_label_that_is_not_a_finite_number_names_file_and_line(tmp_path, cell, expected):
    path = write(tmp_path / "bad.csv", f'text,label\nfine,1\nodd,"{cell}"\nalso,2\n')
    with pytest.raises(DataError, match=expected):
        read_data(path, Columns(), 0.3, seed=0, label_kind=NUMBER)


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "true", '"many"', "[1, 2]"])
def test_jsonl_numbers_refuse_nan_infinity_booleans_and_others(tmp_path, raw):
    path = write(tmp_path / "bad.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": ' + raw + "}\n")
    with pytest.raises(DataError, match=r"bad\.jsonl: line 2: label .* not a (finite )?number"):
        read_data(path, Columns(), 0.3, seed=0, label_kind=NUMBER)


def test_an_empty_number_is_skipped_and_counted(tmp_path):
    path = write(tmp_path / "gaps.csv", "text,label\na,1\nb,\nc,2\nd,3\ne,  \nf,4\n")
    data = read_data(path, Columns(), 0.25, seed=0, label_kind=NUMBER)
    assert data.skipped.counts == {"no label": 2}
    assert ("gaps.csv:3", "no label") in data.skipped.examples
    assert [t for t, _ in all_rows(data)] == ["a", "c", "d", "f"]


def test_validation_spans_the_targets_range(tmp_path):
    values = [float(i) for i in range(100)]
    path = write(tmp_path / "r.csv", "text,label\n" + "".join(f"text {i},{v}\n" for i, v in enumerate(values)))
    data = read_data(path, Columns(), 0.2, seed=3, label_kind=NUMBER)
    val = sorted(data.splits["val"].labels)
    assert len(val) == 20
    # two of every tenth of the range: none of the low or high values is left out
    assert [sum(1 for v in val if 10 * k <= v < 10 * (k + 1)) for k in range(10)] == [2] * 10
    assert read_data(path, Columns(), 0.2, seed=3, label_kind=NUMBER).splits["val"].labels == data.splits["val"].labels


# -- label sets ------------------------------------------------------------------


def test_label_sets_from_csv_and_jsonl_lists_and_rows_without_labels(tmp_path):
    csv_file = write(tmp_path / "t.csv", "text,labels\nrain and goals,sports;weather\nnothing here,\nchips, sports ; tech ;sports\nplain,food\n")
    jsonl_file = jsonl(
        tmp_path / "t.jsonl",
        [
            {"text": "rain and goals", "labels": ["sports", "weather"]},
            {"text": "nothing here", "labels": []},
            {"text": "chips", "labels": ["sports", " tech", "sports"]},
            {"text": "plain", "labels": "food"},
        ],
    )
    expected = [("chips", ("sports", "tech")), ("nothing here", ()), ("plain", ("food",)), ("rain and goals", ("sports", "weather"))]
    for path in (csv_file, jsonl_file):
        data = read_data(path, MULTI, 0.25, seed=0, whole=True, label_kind=TAGS)
        assert all_rows(data) == expected, path.name
        assert data.skipped.counts == {}  # a text without labels is a row like any other


def test_another_separator_in_a_tsv(tmp_path):
    path = write(tmp_path / "t.tsv", "text\ttags\na\tx|y\nb\ty\nc\t\nd\tx\n")
    data = read_data(path, Columns(label="tags"), 0.25, seed=0, whole=True, label_kind=LabelSetKind("|"))
    assert dict(all_rows(data)) == {"a": ("x", "y"), "b": ("y",), "c": (), "d": ("x",)}


@pytest.mark.parametrize("raw", ['{"name": "x"}', "[[\"x\"]]", "[true]", "1.5"])
def test_labels_that_are_not_names_name_the_line(tmp_path, raw):
    path = write(tmp_path / "bad.jsonl", '{"text": "a", "labels": ["x"]}\n{"text": "b", "labels": ' + raw + "}\n")
    with pytest.raises(DataError, match=r"bad\.jsonl: line 2: label"):
        read_data(path, MULTI, 0.3, seed=0, label_kind=TAGS)


def test_a_missing_labels_column_says_how_to_choose_one(tmp_path):
    path = write(tmp_path / "t.csv", "text,label\na,x\nb,y\n")
    with pytest.raises(DataError, match=r"t\.csv: no column 'labels' \(columns: 'text', 'label'\); choose one with --set label_column=NAME"):
        read_data(path, MULTI, 0.3, seed=0, label_kind=TAGS)


def test_a_val_label_that_training_lacks_names_the_row(tmp_path):
    write(tmp_path / "d" / "train.csv", "text,labels\na,x\nb,x;y\n")
    write(tmp_path / "d" / "val.csv", "text,labels\nc,y\nd,x;z\n")
    data = read_data(tmp_path / "d", MULTI, 0.2, seed=0, label_kind=TAGS)
    with pytest.raises(DataError, match=r"val\.csv: line 3: label 'z' does not occur in training"):
        check_labels(data, ["x", "y"], trained=False)


def test_a_rare_label_still_reaches_validation(tmp_path):
    rows = [f"common {i},a" for i in range(80)] + [f"both {i},a;rare" for i in range(10)]
    path = write(tmp_path / "t.csv", "text,labels\n" + "\n".join(rows) + "\n")
    data = read_data(path, MULTI, 0.2, seed=1, label_kind=TAGS)
    assert sum("rare" in labels for labels in data.splits["val"].labels) == 2
    assert sum("rare" in labels for labels in data.splits["train"].labels) == 8


# -- the bundled samples ---------------------------------------------------------------


def test_the_committed_samples_are_what_the_generator_writes(tmp_path):
    from trainlab_dev import family_samples

    family_samples.main(["--samples", str(tmp_path)])
    for name in ("text-regression", "text-multilabel"):
        committed = resource_path("samples", name)
        for file in ("train.csv", "val.csv", "test.csv", "README.md"):
            assert (tmp_path / name / file).read_bytes() == (committed / file).read_bytes(), f"{name}/{file}"


def test_the_samples_have_what_their_tasks_need():
    ratings = [float(row["label"]) for row in csv.DictReader(open(resource_path("samples", "text-regression", "train.csv"), encoding="utf-8"))]
    assert len(ratings) == 600 and min(ratings) == 1.0 and max(ratings) == 5.0 and len(set(ratings)) > 30
    rows = list(csv.DictReader(open(resource_path("samples", "text-multilabel", "train.csv"), encoding="utf-8")))
    sets = [set(filter(None, row["labels"].split(";"))) for row in rows]
    assert set().union(*sets) == {"food", "sports", "technology", "weather"}
    assert {len(s) for s in sets} == {0, 1, 2, 3}
