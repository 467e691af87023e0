"""Package data: sample data sets, icons, vocabularies, translations.

Read them through these helpers rather than building paths by hand, so they
work from a wheel, an editable install and a source checkout alike.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def resource_path(*parts: str) -> Path:
    """The file or folder ``parts`` inside this package, as a real path.

    Real paths, not ``importlib.resources`` traversables: Qt, torch and the
    tokenizers open these files by name, and pip installs this package as a
    folder (wheel and editable install alike).  It also keeps
    ``importlib.resources`` (about a millisecond) out of the window's start-up.
    """
    return _HERE.joinpath(*parts)

