"""docs/contract.md's command table agrees with the real argument parser.

Every command, sub-command and option the table shows either exists in
``trainlab.cli.commands._parser()`` or sits in a row marked **planned**, and this file
names each planned one in PLANNED: building one makes a test here fail and
say which line of the doc to update. Every command the parser has is in the
table. Where the project's shared contract (``../shared/CONTRACT.md``, or
``$TRAINLAB_SHARED_CONTRACT``) is at hand, both tables must name the same
things.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from helpers import ROOT
from trainlab.cli.commands import _parser

CONTRACT = ROOT / "docs" / "contract.md"

# Named by the contract, not built yet. Built one? Drop it here, and drop
# **planned** from its row in docs/contract.md once the whole row works.
PLANNED: set[str] = {
    "predict --set",
}

# Built here and in docs/contract.md, proposed for the shared contract but
# not in it yet: the comparison with it leaves them out (and fails once the
# shared contract has them, so that this list is emptied then).
NOT_YET_SHARED: dict[str, str] = {}

WORD = re.compile(r"[a-z][a-z-]*")


def command_rows(text: str) -> list[tuple[str, bool]]:
    """(usage cell, marked planned) for each row of the command-line table."""
    section = text.split("## Command line", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        assert len(cells) == 2, f"a command row needs two cells: {line}"
        rows.append((cells[0], cells[1].startswith("**planned**")))
    assert rows, "no command table found"
    return rows


def features(usage: str) -> list[str]:
    """What a usage cell names: commands, sub-commands and options, e.g. 'train --seed', 'models import'."""
    found: list[str] = []
    command = sub = None
    for segment in re.findall(r"`([^`]*)`", usage):
        tokens = segment.replace("\\|", "|").split()
        if not tokens:
            continue
        if tokens[0] == "trainlab":
            tokens, command, sub = tokens[1:], None, None
        elif not tokens[0].startswith("-") and tokens[0] != "...":
            command = sub = None  # `uninstall-launcher` beside `trainlab install-launcher`: a command of its own
        takes_value = False
        for raw in tokens:
            token = raw.lstrip("[").rstrip("]")
            if takes_value and not token.startswith("-"):
                takes_value = False
                continue
            takes_value = False
            if token == "|":  # `queue add TASK ... | list | cancel ID`: alternative sub-commands
                sub = None
                continue
            if token.startswith("-"):
                owner = " ".join(part for part in (command, sub) if part)
                found.append(f"{owner} {token}".strip())
                takes_value = not raw.endswith("]")
            elif WORD.fullmatch(token) and command is None:
                command = token
                found.append(command)
            elif WORD.fullmatch(token) and sub is None:
                sub = token
                found.append(f"{command} {sub}")
    return found


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def exists(parser: argparse.ArgumentParser, feature: str) -> bool:
    """Whether `trainlab FEATURE` is something the parser accepts."""
    *words, last = feature.split()
    for word in words:
        commands = _subcommands(parser)
        if word in commands:
            parser = commands[word]
        elif not any(word in (action.choices or ()) for action in parser._actions if not action.option_strings):
            return False  # a sub-command given as a positional choice (`models import`) keeps its parser
    if last.startswith("-"):
        return any(last in action.option_strings for action in parser._actions)
    return last in _subcommands(parser) or any(
        last in (action.choices or ()) for action in parser._actions if not action.option_strings and not isinstance(action, argparse._SubParsersAction)
    )


def missing(parser: argparse.ArgumentParser, usage: str) -> list[str]:
    """What the row names that the parser lacks (the options of a missing command count with it)."""
    gaps: list[str] = []
    for feature in features(usage):
        if any(feature.startswith(gap + " ") for gap in gaps if not gap.split()[-1].startswith("-")):
            continue
        if not exists(parser, feature):
            gaps.append(feature)
    return gaps


@pytest.fixture(scope="module")
def rows():
    return command_rows(CONTRACT.read_text(encoding="utf-8"))


def test_every_documented_command_exists_or_is_marked_planned(rows):
    parser = _parser()
    for usage, planned in rows:
        gaps = missing(parser, usage)
        if not planned:
            assert not gaps, (
                f"docs/contract.md shows {gaps} but `trainlab` has no such command or option: "
                f"build it, or mark the row **planned** and add it to PLANNED in {Path(__file__).name}\n  row: {usage}"
            )
            continue
        assert gaps, f"everything in this **planned** row exists now: drop **planned** from it in docs/contract.md\n  row: {usage}"
        unknown = sorted(set(gaps) - PLANNED)
        assert not unknown, f"the row marked planned also lacks {unknown}: add them to PLANNED (or build them)\n  row: {usage}"


def test_planned_means_not_built_yet(rows):
    parser = _parser()
    built = sorted(feature for feature in PLANNED if exists(parser, feature))
    assert not built, (
        f"`trainlab {built[0]}` exists now: update its row in docs/contract.md (drop **planned** when the whole row "
        f"works) and remove {built} from PLANNED in {Path(__file__).name}"
    )
    documented = {gap for usage, planned in rows if planned for gap in missing(parser, usage)}
    assert PLANNED <= documented, f"PLANNED names {sorted(PLANNED - documented)}, which no **planned** row of docs/contract.md shows"


def test_every_command_of_the_parser_is_in_the_table(rows):
    documented = {feature for usage, _ in rows for feature in features(usage) if " " not in feature and not feature.startswith("-")}
    undocumented = sorted(set(_subcommands(_parser())) - documented)
    assert not undocumented, f"`trainlab {undocumented[0]}` is not in docs/contract.md's command table: add a row for {undocumented}"
    assert exists(_parser(), "--version") and "--version" in {f for usage, _ in rows for f in features(usage)}


def test_the_table_reader_sees_what_the_rows_say(rows):
    """The checks above are only as good as this reader: pin it on rows of the real table."""
    by_command: dict[str, list[str]] = {}
    for usage, _ in rows:  # the first row of each command
        by_command.setdefault(features(usage)[0], features(usage))
    assert by_command["--version"] == ["--version"]
    assert {"train --data", "train --set", "train --device", "train --resume", "train --json"} <= set(by_command["train"])
    assert "models import" in by_command["models"]
    assert "uninstall-launcher" in by_command["install-launcher"]
    assert features("`trainlab plugins check NAME\\|PATH [--full] [--json]`") == ["plugins", "plugins check", "plugins check --full", "plugins check --json"]
    assert missing(_parser(), "`trainlab plugins check NAME\\|PATH [--full] [--json]`") == []
    assert missing(_parser(), "`trainlab plugins nosuch NAME`") == ["plugins nosuch"]
    assert missing(_parser(), "`trainlab train ... --dry-run [--json]`") == []
    assert missing(_parser(), "`trainlab eval RUN_DIR [--no-such-flag]`") == ["eval --no-such-flag"]


def _shared_contract() -> Path | None:
    named = os.environ.get("TRAINLAB_SHARED_CONTRACT")
    path = Path(named) if named else ROOT.parent / "shared" / "CONTRACT.md"
    return path if path.is_file() else None


def test_in_step_with_the_shared_contract(rows):
    shared = _shared_contract()
    if shared is None:
        pytest.skip("the project's shared CONTRACT.md is not beside this checkout")
    text = shared.read_text(encoding="utf-8")
    ours = sorted(feature for usage, _ in rows for feature in features(usage) if feature.split()[0] not in NOT_YET_SHARED)
    theirs = sorted(feature for usage, _ in command_rows(text) for feature in features(usage))
    assert ours == theirs, (
        f"docs/contract.md and {shared} name different commands: only here {sorted(set(ours) - set(theirs))}, "
        f"only there {sorted(set(theirs) - set(ours))}"
    )
    named_there = {feature.split()[0] for usage, _ in command_rows(text) for feature in features(usage)}
    assert not named_there & set(NOT_YET_SHARED), f"the shared contract has {sorted(named_there & set(NOT_YET_SHARED))} now: drop them from NOT_YET_SHARED"
    headings = [line for line in CONTRACT.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    assert headings == [line for line in text.splitlines() if line.startswith("## ")]
