"""A folder named ``trainlab`` that hides the installed package.

Python puts the script's folder (the current folder for ``python -m``, and
PYTHONPATH) before site-packages. A folder named ``trainlab`` there, a clone
of this repository for instance, has no ``__init__.py``, so Python takes it
for a namespace package; an editable install's import hook comes after it, so
``trainlab`` is that folder while ``trainlab.cli.commands`` and the other modules are
still found here. Nothing of ours runs on ``import trainlab`` then, and the
first name read from it fails with "cannot import name '__version__' from
'trainlab' (unknown location)". The command line asks here first and says
what is wrong instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

_OURS = Path(__file__).resolve().parents[1]  # this module is trainlab/system/shadowing.py


def shadowing_folders() -> list[str]:
    """The folders imported as ``trainlab`` in place of this package; empty when it is ours."""
    package = sys.modules.get("trainlab")
    if package is None:
        return []
    origin = getattr(package, "__file__", None)
    if origin and Path(origin).resolve().parent == _OURS:
        return []
    folders = [str(Path(p)) for p in getattr(package, "__path__", []) if Path(p).resolve() != _OURS]
    return folders or [str(Path(origin).parent) if origin else "?"]


def shadowing_error() -> str | None:
    """A one-line explanation when ``trainlab`` is not this package, else None."""
    folders = shadowing_folders()
    if not folders:
        return None
    names = ", ".join(folders)
    return (
        f"the folder {names} hides the installed TrainLab (Python imports it as `trainlab` because it is "
        f"in the script's folder, the current folder with `python -m`, or on PYTHONPATH); rename or move "
        f"that folder, or run from another folder (TrainLab itself is {_OURS})"
    )
