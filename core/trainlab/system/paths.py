"""Where TrainLab keeps its files (platformdirs), overridable with TRAINLAB_HOME.

With ``TRAINLAB_HOME`` set, everything (runs, index, model store, settings,
logs) lives below that one folder: handy for tests, portable installs and
shared lab disks.  The one exception is ``shared_cache_dir()``: verdicts
on plugins, which hold for every home (``TRAINLAB_SHARED_CACHE`` moves it).
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "trainlab"


def _home() -> Path | None:
    value = os.environ.get("TRAINLAB_HOME")
    return Path(value).expanduser() if value else None


def data_dir() -> Path:
    home = _home()
    if home is not None:
        return home
    import platformdirs

    return Path(platformdirs.user_data_dir(APP, appauthor=False))


def config_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "config"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def log_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "logs"
    import platformdirs

    return Path(platformdirs.user_log_dir(APP, appauthor=False))


def cache_dir() -> Path:
    """Disposable per-user state (deleting it costs only time), e.g. checksum verdicts."""
    home = _home()
    if home is not None:
        return home / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def shared_cache_dir() -> Path:
    """Per-user state shared by every TrainLab home: what is kept here is keyed by
    the code it describes, never by a home's runs, so one home's answer holds
    for another.  ``TRAINLAB_SHARED_CACHE`` moves it (a folder inside the home
    keeps a home wholly self-contained); else the platform's user cache, which
    is ``cache_dir()`` itself when ``TRAINLAB_HOME`` is not set."""
    value = os.environ.get("TRAINLAB_SHARED_CACHE")
    if value:
        return Path(value).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def keep_library_caches_here() -> None:
    """Point the libraries that make per-user folders when first imported at
    TrainLab's cache, so that a run writes only its run folder and TrainLab's
    own folders: matplotlib, which torchmetrics' text and detection metrics
    import, makes ~/.config/matplotlib and ~/.cache/matplotlib.  A setting the
    user made wins."""
    os.environ.setdefault("MPLCONFIGDIR", str(cache_dir() / "matplotlib"))


def runs_dir() -> Path:
    return data_dir() / "runs"


def model_store_dir() -> Path:
    return data_dir() / "models"


def index_path() -> Path:
    return data_dir() / "index.sqlite3"


def settings_path() -> Path:
    return config_dir() / "settings.json"

