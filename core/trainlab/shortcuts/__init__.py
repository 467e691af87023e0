"""Desktop launchers for the TrainLab window, and the GUI script's start-up.

``trainlab install-launcher [--desktop]`` and ``trainlab uninstall-launcher``
call :func:`install` and :func:`uninstall`; ``trainlab-gui`` calls
:func:`configure_stdio` before anything else.  One module per desktop:

* ``freedesktop``: Linux and the BSDs, a Desktop Entry in the menu (and on
  the desktop);
* ``windows``: ``TrainLab.lnk`` in the Start Menu (and on the desktop);
* ``macos``: a ``~/Applications/TrainLab.app`` bundle (and a desktop link);

with what they share in ``identity`` (names, ids, the script and the icon)
and the GUI process's output in ``stdio``.

Every launcher starts this environment's ``trainlab-gui`` by absolute path,
so it keeps working whatever PATH the desktop session has. Nothing here
imports Qt: the window calls ``QGuiApplication.setDesktopFileName(DESKTOP_ID)``
and sets its X11 WM_CLASS to :data:`WM_CLASS`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainlab.shortcuts import freedesktop, macos, windows
from trainlab.shortcuts.freedesktop import applications_dir, desktop_dir, desktop_entry_text
from trainlab.shortcuts.identity import APP_NAME, DESKTOP_ID, GUI_SCRIPT, WM_CLASS, gui_executable, icon_file
from trainlab.shortcuts.macos import macos_bundle_path
from trainlab.shortcuts.stdio import configure_stdio, crash_log_path, gui_log_path
from trainlab.shortcuts.windows import set_windows_app_id


def _platform():
    # Read at each call, not at import: the tests build the macOS bundle on
    # Linux by setting sys.platform.
    if sys.platform == "win32":
        return windows
    if sys.platform == "darwin":
        return macos
    return freedesktop


def install(desktop: bool = False) -> list[Path]:
    """Install the menu launcher (and a desktop one); return the paths written.

    Raises UsageError when this platform or environment cannot have one (no
    ``trainlab-gui`` script, no desktop folder), before anything is written.
    """
    return _platform().install(desktop)


def uninstall() -> list[Path]:
    """Remove every launcher :func:`install` writes; return the paths removed."""
    return _platform().uninstall()


__all__ = [
    "APP_NAME",
    "DESKTOP_ID",
    "GUI_SCRIPT",
    "WM_CLASS",
    "applications_dir",
    "configure_stdio",
    "crash_log_path",
    "desktop_dir",
    "desktop_entry_text",
    "gui_executable",
    "gui_log_path",
    "icon_file",
    "install",
    "macos_bundle_path",
    "set_windows_app_id",
    "uninstall",
]
