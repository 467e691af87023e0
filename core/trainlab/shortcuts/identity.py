"""What every launcher carries: the app's names and ids, the script it starts, its icon.

The window must match these (``desktop/trainlab_desktop/app.py`` repeats DESKTOP_ID and
WM_CLASS, and a test checks they agree); each platform's launcher writes them
into its own format.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from trainlab.api.errors import UsageError
from trainlab_resources import resource_path

APP_NAME = "TrainLab"
#: Desktop Entry id (file name without ``.desktop``), macOS bundle id and
#: Windows AppUserModelID. The window passes it to
#: ``QGuiApplication.setDesktopFileName`` so Wayland compositors find the icon.
DESKTOP_ID = "org.trainlab.TrainLab"
#: The window's X11 WM_CLASS; the entry's ``StartupWMClass`` so docks match
#: the running window to its menu entry.
WM_CLASS = "trainlab"
GUI_SCRIPT = "trainlab-gui"
COMMENT = "Train image and text classifiers on this computer, offline"

# Written into every entry and bundle; uninstall removes only what carries it,
# so a user's own file that happens to share the name is never deleted.
MARKER_KEY = "X-TrainLab-Launcher"


def gui_executable() -> Path:
    """Absolute path of this environment's ``trainlab-gui`` script.

    Looked for where this interpreter's installer puts scripts: beside
    ``sys.executable`` (virtual environments, pipx, conda), the scheme's
    scripts folder, the user scheme's (``pip install --user``), then PATH.
    The path is not resolved: a venv's ``bin/`` is the environment, the
    interpreter it links to is not.
    """
    name = GUI_SCRIPT + (".exe" if os.name == "nt" else "")
    candidates = [Path(sys.executable).parent / name]
    for scheme in (None, sysconfig.get_preferred_scheme("user")):
        try:
            folder = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if folder:
            candidates.append(Path(folder) / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.absolute()
    found = shutil.which(GUI_SCRIPT)
    if found:
        return Path(found).absolute()
    looked = ", ".join(str(c.parent) for c in candidates)
    raise UsageError(
        f"cannot find the {GUI_SCRIPT} script of this installation (looked in {looked} and on PATH); "
        "reinstall TrainLab with pip so its scripts are created"
    )


def icon_file(name: str = "trainlab.svg") -> Path:
    """Absolute path of an installed icon file, e.g. ``trainlab-256.png``."""
    path = resource_path("icons", name)
    if not path.is_file():
        raise UsageError(f"icon {name} is missing from this TrainLab installation ({path}); reinstall TrainLab")
    return path.absolute()
