"""Images listed in tables: the three image tasks read them, split them and say what is wrong."""

from __future__ import annotations

import pytest

from fixtures.images.imagedata import cells, corrupt, cpu_ctx, make_task, scenes, shapes, shapes_table, solid, write_table
from trainlab import DataError, UsageError


def prepare(task_id, data, label_names=None, purpose="train", **overrides):
    task, params = make_task(task_id, image_size="16", **overrides)
    ctx = cpu_ctx(params, seed=int(params["seed"]))
    ctx.purpose = purpose
    summary = task.prepare(str(data), ctx, label_names=label_names)
    return task, summary


def paths(task, split):
    return {p for p, _ in task._items[split]}


# -- image-classification from a table ------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_classification_reads_a_table_and_splits_it_per_class(tmp_path, suffix):
    table = shapes_table(tmp_path, table=f"images{suffix}", classes=3, per_class=10)
    task, summary = prepare("image-classification", table)
    assert summary.label_names == ["circle", "square", "triangle"]
    assert summary.counts == {"train": {"circle": 8, "square": 8, "triangle": 8}, "val": {"circle": 2, "square": 2, "triangle": 2}}
    assert not paths(task, "train") & paths(task, "val")
    # the paths were relative to the table's folder
    assert all(p.startswith(str(tmp_path / "img")) for p in paths(task, "train"))
    again, _ = prepare("image-classification", table)
    other, _ = prepare("image-classification", table, seed="7")
    assert paths(again, "val") == paths(task, "val") != paths(other, "val")


def test_absolute_paths_and_a_folder_of_train_and_val_tables(tmp_path):
    folder = shapes(tmp_path / "img", classes=2, per_class=6)
    files = sorted(folder.rglob("*.jpg"))
    rows = [[str(p), p.parent.name] for p in files]
    write_table(tmp_path / "t" / "train.csv", ["image", "label"], rows[:4] + rows[6:10])
    write_table(tmp_path / "t" / "val.jsonl", ["image", "label"], rows[4:6] + rows[10:])
    write_table(tmp_path / "t" / "test.tsv", ["image", "label"], rows[:2])
    task, summary = prepare("image-classification", tmp_path / "t")
    assert task.splits() == ["train", "val", "test"]
    assert summary.counts["val"] == {"circle": 2, "square": 2} and summary.extra["splits_from"] == "tables"


def test_missing_and_unreadable_images_are_skipped_counted_and_named_with_their_row(tmp_path):
    table = shapes_table(tmp_path, classes=2, per_class=5)
    corrupt(tmp_path / "img" / "broken.jpg")
    with open(table, "a", encoding="utf-8") as handle:
        handle.write("img/gone.jpg,circle\nimg/broken.jpg,square\n,circle\n")
    _, summary = prepare("image-classification", table)
    assert summary.skipped == {"listed image does not exist": 1, "not a readable image": 1, "row without an image path": 1}
    named = dict((reason, where) for where, reason in summary.skipped_examples)
    assert named["listed image does not exist"] == f"images.csv line 12: {tmp_path / 'img' / 'gone.jpg'}"
    assert named["not a readable image"].startswith("images.csv line 13: ")
    assert any("skipped" in w and "images.csv line 12" in w for w in summary.warnings)
    assert sum(sum(c.values()) for c in summary.counts.values()) == 10


@pytest.mark.parametrize(
    "rows, header, message",
    [
        ([["a.png", "x"]], ["path", "label"], "no column 'image' (columns: 'path', 'label'); choose one with --set image_column=NAME"),
        ([["a.png", "x"]], ["image", "class"], "no column 'label'"),
        ([["nowhere.png", "x"], ["gone.png", "y"]], ["image", "label"], "images.csv: no usable image (2 listed image does not exist); first: images.csv line 2"),
        ([], ["image", "label"], "lists no images"),
    ],
)
def test_unusable_tables_are_a_data_error_naming_file_and_row(tmp_path, rows, header, message):
    table = write_table(tmp_path / "images.csv", header, rows)
    with pytest.raises(DataError) as info:
        prepare("image-classification", table)
    assert message in str(info.value) and info.value.exit_code == 2


def test_classification_tables_keep_the_folder_checks(tmp_path):
    one = shapes_table(tmp_path / "one", classes=1, per_class=4)
    with pytest.raises(DataError, match="at least two classes"):
        prepare("image-classification", one)
    folder = shapes(tmp_path / "img", classes=3, per_class=4)
    rows = [[str(p), p.parent.name] for p in sorted(folder.rglob("*.jpg"))]
    write_table(tmp_path / "t" / "train.csv", ["image", "label"], [r for r in rows if r[1] != "triangle"])
    write_table(tmp_path / "t" / "val.csv", ["image", "label"], rows)
    with pytest.raises(DataError, match="holds classes that training lacks: triangle"):
        prepare("image-classification", tmp_path / "t")
    with pytest.raises(DataError, match="is a file"):
        prepare("image-classification", solid(tmp_path / "x.png"))


def test_columns_are_parameters(tmp_path):
    folder = shapes(tmp_path / "img", classes=2, per_class=4)
    rows = [[p.parent.name, str(p)] for p in sorted(folder.rglob("*.jpg"))]
    table = write_table(tmp_path / "t.csv", ["kind", "file"], rows)
    _, summary = prepare("image-classification", table, image_column="file", label_column="kind")
    assert summary.label_names == ["circle", "square"]


# -- image-regression ----------------------------------------------------------------------


def test_regression_reads_numbers_and_holds_out_the_whole_range(tmp_path):
    table = cells(tmp_path / "c", images=40)
    task, summary = prepare("image-regression", table)
    assert summary.label_names == [] and summary.counts == {"train": {"images": 32}, "val": {"images": 8}}
    val = sorted(t for _, t in task._items["val"])
    everything = sorted(t for items in task._items.values() for _, t in items)
    # one row from each eighth of the sorted targets: low and high values are validated too
    assert val[0] <= everything[5] and val[-1] >= everything[-5]
    target = summary.extra["target"]["train"]
    assert task.target_mean == pytest.approx(target["mean"]) and task.target_std == pytest.approx(target["std"])
    assert all(isinstance(t, float) for _, t in task._items["train"])


def test_evaluating_keeps_the_trained_target_scaling(tmp_path):
    table = cells(tmp_path / "c", images=20)
    task, params = make_task("image-regression", image_size="16")
    task.load_fitted_state({"target_mean": 100.0, "target_std": 5.0})
    ctx = cpu_ctx(params)
    ctx.purpose, ctx.whole_data = "evaluate", True
    task.prepare(str(table), ctx, label_names=[])
    assert (task.target_mean, task.target_std) == (100.0, 5.0) and task.splits() == ["val"]


@pytest.mark.parametrize(
    "label, message",
    [
        ("tall", "t.csv line 3: label 'tall' is not a number"),
        ("1,5", "write decimals with a point"),
        ("nan", "t.csv line 3: label 'nan' is not a finite number"),
        ("inf", "is not a finite number"),
    ],
)
def test_a_label_that_is_no_finite_number_names_file_and_row(tmp_path, label, message):
    images = [solid(tmp_path / f"{i}.png", (i * 20, 0, 0)) for i in range(6)]
    rows = [[p.name, str(i)] for i, p in enumerate(images)]
    rows[1][1] = label
    with pytest.raises(DataError, match=message.replace("(", r"\(")):
        prepare("image-regression", write_table(tmp_path / "t.csv", ["image", "label"], rows))


def test_regression_needs_a_few_rows_and_a_table(tmp_path):
    images = [solid(tmp_path / f"{i}.png") for i in range(3)]
    table = write_table(tmp_path / "t.csv", ["image", "label"], [[p.name, i] for i, p in enumerate(images)])
    with pytest.raises(DataError, match=r"too few rows with an image and a number \(3\); regression needs at least 4"):
        prepare("image-regression", table)
    with pytest.raises(DataError, match="reads images listed in a table"):
        prepare("image-regression", shapes(tmp_path / "folder", classes=2, per_class=3))


def test_rows_without_a_number_are_skipped_and_a_constant_target_is_warned_about(tmp_path):
    images = [solid(tmp_path / f"{i}.png") for i in range(7)]
    rows = [[p.name, "3.5"] for p in images]
    rows[2][1] = ""
    _, summary = prepare("image-regression", write_table(tmp_path / "t.jsonl", ["image", "label"], rows))
    assert summary.skipped == {"row without a label": 1}
    assert any("nothing to learn" in w for w in summary.warnings)


# -- image-multilabel ----------------------------------------------------------------------


def test_multilabel_counts_each_label_and_allows_rows_without_labels(tmp_path):
    table = scenes(tmp_path / "s", images=40)
    task, summary = prepare("image-multilabel", table)
    assert summary.label_names == ["circle", "cross", "square", "triangle"]
    rows = [line.split(",")[1] for line in table.read_text().splitlines()[1:]]
    expected = {name: sum(name in r.split(";") for r in rows) for name in summary.label_names}
    assert {n: summary.counts["train"][n] + summary.counts["val"][n] for n in expected} == expected
    assert sum(summary.extra["images_without_labels"].values()) == sum(1 for r in rows if not r)
    assert summary.extra["images"] == {"train": 32, "val": 8}
    hot = task._items["train"][0][1]
    assert len(hot) == 4 and set(hot) <= {0.0, 1.0}


def test_labels_as_jsonl_lists_or_with_another_separator(tmp_path):
    images = [solid(tmp_path / f"{i}.png", (i * 30, 0, 0)) for i in range(6)]
    sets = [["dog", "cat"], ["cat"], [], ["dog"], ["cat", "dog"], ["bird", "cat"]]
    jsonl = write_table(tmp_path / "t.jsonl", ["image", "labels"], [[p.name, s] for p, s in zip(images, sets)])
    _, summary = prepare("image-multilabel", jsonl)
    assert summary.label_names == ["bird", "cat", "dog"]
    piped = write_table(tmp_path / "t.csv", ["image", "tags"], [[p.name, "|".join(s)] for p, s in zip(images, sets)])
    _, summary = prepare("image-multilabel", piped, label_column="tags", label_separator="|")
    assert summary.label_names == ["bird", "cat", "dog"]
    assert summary.counts["train"]["cat"] + summary.counts["val"]["cat"] == 4


def test_the_split_keeps_every_label_in_training_where_possible(tmp_path):
    images = [solid(tmp_path / f"{i}.png", (i * 10, 0, 0)) for i in range(20)]
    sets = [["common"]] * 17 + [["rare"], ["rare", "common"], ["once"]]
    table = write_table(tmp_path / "t.csv", ["image", "labels"], [[p.name, ";".join(s)] for p, s in zip(images, sets)])
    for seed in range(8):  # whatever the seed, no label is left out of training
        _, summary = prepare("image-multilabel", table, val_fraction="0.5", seed=str(seed))
        assert all(summary.counts["train"][name] > 0 for name in ("common", "rare", "once")), seed
    assert any("'once' occurs in a single image" in w for w in summary.warnings)


def test_multilabel_refuses_unknown_labels_bad_thresholds_and_tables_without_labels(tmp_path):
    images = [solid(tmp_path / f"{i}.png") for i in range(4)]
    table = write_table(tmp_path / "t.csv", ["image", "labels"], [[p.name, s] for p, s in zip(images, ["a", "b", "a;c", ""])])
    with pytest.raises(DataError, match=r"t.csv line 4: label 'c' does not occur in the trained model \(labels: 'a', 'b'\)"):
        prepare("image-multilabel", table, label_names=["a", "b"], purpose="evaluate")
    with pytest.raises(UsageError, match="threshold"):
        prepare("image-multilabel", table, threshold="1.5")
    empty = write_table(tmp_path / "e.csv", ["image", "labels"], [[p.name, ""] for p in images])
    with pytest.raises(DataError, match="no row has a label"):
        prepare("image-multilabel", empty)
    with pytest.raises(DataError, match=r"n.jsonl line 1: labels 3 are neither a list"):
        prepare("image-multilabel", write_table(tmp_path / "n.jsonl", ["image", "labels"], [[images[0].name, 3]]))
