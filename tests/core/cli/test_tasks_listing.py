"""`trainlab tasks` as people read it: a table whose columns line up, values as typed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import FIXTURE_PLUGINS

ROW = re.compile(r"^  (--set (\S+)=(\S*))\s+(\S+)")


def _listing(cli):
    text = cli("tasks", "-v", extra_path=[FIXTURE_PLUGINS])
    assert text.returncode == 0, text.stderr
    data = cli("tasks", "--json", extra_path=[FIXTURE_PLUGINS])
    assert data.returncode == 0, data.stderr
    return text.stdout, json.loads(data.stdout)["tasks"]


def test_parameter_columns_line_up_across_every_task(cli):
    text, tasks = _listing(cli)
    helps = {(t["id"], p["name"]): p["help"] for t in tasks for p in t["parameters"]}
    type_columns, help_columns = set(), set()
    task = None
    rows = 0
    for line in text.splitlines():
        if line and not line.startswith(" "):
            task = line.split()[0]
        match = ROW.match(line)
        if not match:
            continue
        rows += 1
        type_columns.add(match.start(4))
        help_columns.add(line.index(helps[(task, match.group(2))]))
    assert rows == len(helps), f"{rows} parameter rows for {len(helps)} parameters"
    assert len(type_columns) == 1, f"the type column starts at {sorted(type_columns)}"
    assert len(help_columns) == 1, f"the help column starts at {sorted(help_columns)}"
    assert {"toy-classification", "image-classification", "text-classification"} <= {t["id"] for t in tasks}


def test_values_print_as_they_are_typed(cli):
    text, tasks = _listing(cli)
    values = [m.group(3) for m in map(ROW.match, text.splitlines()) if m]
    assert not {"True", "False", "None"} & set(values), "booleans must read true/false, as in the docs"
    image = next(t for t in tasks if t["id"] == "image-classification")
    assert image["defaults"]["pretrained"] is False
    assert "  --set pretrained=false " in text
    text_task = next(t for t in tasks if t["id"] == "text-classification")
    assert text_task["defaults"]["length_grouping"] is True
    assert "  --set length_grouping=true " in text


def test_each_task_says_where_its_sample_is(cli):
    text, tasks = _listing(cli)
    for task_id, folder in (("image-classification", "images"), ("text-classification", "text")):
        sample = next(t for t in tasks if t["id"] == task_id)["sample_data"]
        assert Path(sample).is_dir() and {"samples", folder} <= set(Path(sample).parts), sample
        assert f"  sample data: {sample}\n" in text


def test_the_image_task_says_how_many_epochs_its_sample_needs(cli):
    # the default model (auto) gets 20 epochs; after 5 it stood at 0.64-0.80 (docs/tasks/image-classification.md)
    text, tasks = _listing(cli)
    image = next(t for t in tasks if t["id"] == "image-classification")
    assert "sample needs the default model's 20 epochs" in image["description"]
    assert image["defaults"]["model"] == "auto" and image["defaults"]["epochs"] == 20
    block = text.split("image-classification  (", 1)[1].split("\n\n", 1)[0]
    assert "sample needs the default model's 20 epochs" in block and "a few epochs stay far below it" in block


def test_the_plain_listing_is_a_line_per_task(cli):
    text, tasks = _listing(cli)
    short = cli("tasks", extra_path=[FIXTURE_PLUGINS])
    assert short.returncode == 0, short.stderr
    lines = [line for line in short.stdout.splitlines() if line.strip()]
    assert [line.split()[0] for line in lines[: len(tasks)]] == [t["id"] for t in tasks]
    assert len(lines) == len(tasks) + 1 and "trainlab tasks TASK_ID" in lines[-1]
    assert "--set" not in short.stdout and len(lines) * 5 < len(text.splitlines())


def test_one_task_by_its_id(cli):
    one = cli("tasks", "image-classification", extra_path=[FIXTURE_PLUGINS])
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("image-classification  (") and "  --set pretrained=false " in one.stdout
    assert "text-classification" not in one.stdout and "presets: " in one.stdout
    data = cli("tasks", "text-classification", "--json", extra_path=[FIXTURE_PLUGINS])
    assert [t["id"] for t in json.loads(data.stdout)["tasks"]] == ["text-classification"]


def test_a_mistyped_task_id_is_named_once_with_a_suggestion(cli):
    wrong = cli("tasks", "image-clasification", extra_path=[FIXTURE_PLUGINS])
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines()[-1].startswith("trainlab: error: tasks: no task 'image-clasification'; did you mean image-classification")
    extra = cli("tasks", "image-classification", "more")
    assert extra.returncode == 2 and "trainlab: error: unrecognized arguments: more" in extra.stderr
    assert "trainlab: error: trainlab" not in extra.stderr


def test_tasks_names_each_plugin_that_failed_to_load_on_stderr(cli):
    from helpers import BROKEN_PLUGINS

    result = cli("tasks", "--json", extra_path=[BROKEN_PLUGINS, FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    assert "toy-classification" in {t["id"] for t in json.loads(result.stdout)["tasks"]}  # stdout: still the one object
    warnings = [line for line in result.stderr.splitlines() if line.startswith("trainlab: warning: plugin ")]
    broken = [line for line in warnings if "'broken-import'" in line]
    assert len(broken) == 1, result.stderr
    assert "failed" in broken[0] and "No module named 'trainlab_this_module_does_not_exist'" in broken[0]
    assert broken[0].endswith("(trainlab plugins -v says more)")
    assert "plugin 'toy' was not loaded" not in result.stderr and "plugin 'image-classification' was not loaded" not in result.stderr
