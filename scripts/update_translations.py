#!/usr/bin/env python3
"""Re-extract the window's strings and compile the translations.

    python scripts/update_translations.py          # lupdate, then lrelease
    python scripts/update_translations.py --check  # also fail on untranslated strings

Runs ``pyside6-lupdate`` over every module of ``desktop/trainlab_desktop`` into
``resources/trainlab_resources/translations/trainlab_<lang>.ts`` (existing translations are
kept, new strings arrive marked unfinished, strings no longer in the code are
dropped), then ``pyside6-lrelease`` into the ``.qm`` files the app loads.
Translate the ``.ts`` with Qt Linguist (``pyside6-linguist``) or any editor.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "desktop" / "trainlab_desktop"
OUT = ROOT / "resources" / "trainlab_resources" / "translations"
LANGUAGES = ("zh_CN",)


def tool(name: str) -> str:
    """The PySide6 tool next to this interpreter (the venv), else on PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        sys.exit(f"{name} not found: install PySide6 in this environment")
    return found


def unfinished(ts_file: Path) -> list[tuple[str, str]]:
    """(context, source) of every message still waiting for a translation."""
    missing = []
    for context in ET.parse(ts_file).getroot().iter("context"):
        name = context.findtext("name", "")
        for message in context.iter("message"):
            translation = message.find("translation")
            if translation is not None and translation.get("type") in ("vanished", "obsolete"):
                continue
            forms = [] if translation is None else [translation.text or "", *(f.text or "" for f in translation.iter("numerusform"))]
            if translation is None or translation.get("type") == "unfinished" or not any(f.strip() for f in forms):
                missing.append((name, message.findtext("source", "")))
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if any string is untranslated")
    parser.add_argument("--no-extract", action="store_true", help="only compile the .ts files")
    args = parser.parse_args(argv)

    sources = sorted(str(p.relative_to(ROOT)) for p in SOURCES.rglob("*.py"))
    OUT.mkdir(parents=True, exist_ok=True)
    status = 0
    for language in LANGUAGES:
        ts_file = OUT / f"trainlab_{language}.ts"
        if not args.no_extract:
            subprocess.run(
                [
                    tool("pyside6-lupdate"),
                    *sources,
                    "-source-language", "en",
                    "-target-language", language,
                    # No line numbers: they would churn the .ts on every edit.
                    "-locations", "none",
                    "-no-obsolete",
                    "-ts", str(ts_file.relative_to(ROOT)),
                ],
                cwd=ROOT,
                check=True,
            )
        subprocess.run(
            [tool("pyside6-lrelease"), str(ts_file), "-qm", str(ts_file.with_suffix(".qm"))],
            cwd=ROOT,
            check=True,
        )
        missing = unfinished(ts_file)
        if missing:
            print(f"{ts_file.name}: {len(missing)} untranslated string(s)", file=sys.stderr)
            for context, source in missing:
                print(f"  {context}: {source!r}", file=sys.stderr)
            if args.check:
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
