"""The docs say what is built: a page per built-in task, and only options the command line has.

What the docs name is compared with what ``trainlab tasks --json`` and the
real argument parser report, so that a task added or an option renamed
fails here until the docs follow.
"""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from helpers import ROOT, one_json_line
from trainlab.cli.commands import _parser

DOCS = ROOT / "docs"
# Shown in docs/contract.md as planned, not built yet (tests/project/test_contract_doc.py holds them to that).
PLANNED = {("predict", "--set")}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def command_lines() -> list[tuple[str, str]]:
    """(file, text) of every `trainlab ...` the user docs and the README show, inline or in a shell block."""
    found = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted((DOCS / "tasks").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        spans = re.findall(r"`([^`\n]+)`", text)
        for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, flags=re.S):
            spans += block.splitlines()
        for span in spans:
            span = span.strip().lstrip("$ ").strip()
            for start in re.finditer(r"(?:^|[\s(;&|])trainlab ", span):
                found.append((page.name, span[start.end():].split(" | ")[0].split("&&")[0]))
    return found


def test_the_docs_show_commands():
    assert len(command_lines()) > 100


def test_every_option_the_docs_give_a_command_exists():
    parser = _parser()
    top = _subcommands(parser)
    wrong = []
    for page, text in command_lines():
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            words = text.split()
        if not words or words[0] not in top:
            continue
        command, owner = words[0], top[words[0]]
        known = _options(owner) | _options(parser)
        for word in words[1:]:
            sub = _subcommands(owner).get(word)
            if sub is not None:
                known |= _options(sub)
            if not word.startswith("--") or "..." in word:
                continue
            option = re.split(r"[=\[\]),.:;`'\"]", word)[0]
            if option not in known and (command, option) not in PLANNED:
                wrong.append(f"{page}: `trainlab {text}` names {option}, which `trainlab {command}` does not have")
    assert not wrong, "\n".join(sorted(set(wrong)))


@pytest.fixture(scope="module")
def built_in_tasks():
    from helpers import run_trainlab

    result = run_trainlab("tasks", "--json")
    assert result.returncode == 0, result.stderr
    return {t["id"]: t for t in one_json_line(result)["tasks"] if t["plugin"]["name"]}


def test_every_built_in_task_has_its_page_and_every_page_a_task(built_in_tasks):
    pages = {page.stem for page in (DOCS / "tasks").glob("*.md")}
    assert set(built_in_tasks) - pages == set(), f"tasks without a page in docs/tasks/: {sorted(set(built_in_tasks) - pages)}"
    assert pages - set(built_in_tasks) == set(), f"pages in docs/tasks/ for tasks that are not built: {sorted(pages - set(built_in_tasks))}"


def test_each_task_page_names_its_task_and_its_presets(built_in_tasks):
    for task_id, task in built_in_tasks.items():
        text = (DOCS / "tasks" / f"{task_id}.md").read_text(encoding="utf-8")
        assert task_id in text, f"docs/tasks/{task_id}.md never names its task id"
        default = str(task["defaults"].get("model") or "")
        assert not default or default in text, f"docs/tasks/{task_id}.md does not name the default model {default}"


def test_the_readme_sends_each_built_in_task_to_its_page(built_in_tasks):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unlinked = [task_id for task_id in built_in_tasks if f"docs/tasks/{task_id}.md" not in readme]
    assert not unlinked, f"README.md does not link docs/tasks/ for {unlinked}"


def test_the_docs_index_gives_a_user_a_plugin_author_and_a_maintainer_a_way_in():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for reader in ("## Using TrainLab", "## Writing a plugin", "## Maintaining TrainLab"):
        assert reader in index
    linked = set(re.findall(r"\]\(([^)#]+\.md)", index))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages <= {link.split("/")[-1] for link in linked}, f"pages the index does not list: {sorted(pages - linked)}"
    for link in linked:
        assert (DOCS / link).is_file(), f"docs/README.md links {link}, which is not there"
