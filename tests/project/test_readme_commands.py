"""The README's commands are ones `trainlab` accepts, on paths the repository has.

Running them all takes minutes (two trainings), so this checks what can go
stale without a run: each `trainlab ...` line of the README's shell blocks
parses with the real argument parser, the bundled paths it names exist, and
the run folders it uses are made by an earlier line.
"""

from __future__ import annotations

import re
import shlex

import pytest

from helpers import ROOT
from trainlab.api.errors import UsageError
from trainlab.cli.commands import _parser


def readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] in ("trainlab", ".venv/bin/trainlab"):
                commands.append(words[1:])
    return commands


def test_the_readme_shows_commands():
    assert len(readme_commands()) >= 10


@pytest.mark.parametrize("args", readme_commands(), ids=lambda args: " ".join(args)[:60])
def test_readme_command_parses(args):
    try:
        _parser().parse_args(args)
    except UsageError as exc:
        pytest.fail(f"README: `trainlab {' '.join(args)}`: {exc}")


def test_readme_paths_exist_or_are_made_first():
    made: set[str] = set()
    for args in readme_commands():
        for i, word in enumerate(args):
            if word.startswith("resources/"):
                assert (ROOT / word).exists(), f"README names {word}, which the repository does not have"
            if word.startswith("runs/") and args[i - 1] != "--out":
                assert word in made, f"README uses {word} before a command makes it (`trainlab {' '.join(args)}`)"
        if "--out" in args and args[0] == "train":
            made.add(args[args.index("--out") + 1])
    assert made, "the README's commands train nothing"
