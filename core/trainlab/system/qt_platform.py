"""Whether Qt's xcb platform plugin can load here, checked before the window opens.

On a fresh Debian or Ubuntu desktop the X server runs but several small
libraries Qt's xcb plugin links against are not installed; Qt then aborts
the process (exit 134, "Could not load the Qt platform plugin "xcb"") with
no word on what to install.  This module finds the missing ones without
importing Qt, and names the Debian packages that hold them.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Callable, Mapping

# soname -> Debian/Ubuntu package: what the xcb plugin (and Qt's GUI module
# under it) loads; scripts/setup.sh --system checks the same packages for
# `make test` (tests/project checks the two lists agree).
XCB_LIBRARIES: dict[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}


def loadable(soname: str) -> bool:
    """Whether the dynamic loader finds ``soname``, as Qt's plugin loader will look for it."""
    import ctypes  # here, not at the top: every CLI command loads this module, only the window's check needs it

    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def xcb_will_be_used(environ: Mapping[str, str] | None = None, platform: str | None = None) -> bool:
    """Qt picks the xcb plugin: on Linux, QT_QPA_PLATFORM unset (or xcb) and an X display named.

    A Wayland session (WAYLAND_DISPLAY set) with QT_QPA_PLATFORM unset goes
    to Wayland first; offscreen, wayland or any other choice is not checked.
    """
    env = os.environ if environ is None else environ
    if not (platform or sys.platform).startswith("linux"):
        return False
    chosen = env.get("QT_QPA_PLATFORM", "").strip().lower()
    if chosen and chosen.split(":", 1)[0] != "xcb":
        return False
    if not chosen and env.get("WAYLAND_DISPLAY"):
        return False
    return bool(env.get("DISPLAY"))


def missing_xcb_libraries(find: Callable[[str], bool] = loadable) -> dict[str, str]:
    """The xcb plugin's libraries ``find`` cannot load: soname -> package."""
    return {soname: package for soname, package in XCB_LIBRARIES.items() if not find(soname)}


def xcb_problem(
    environ: Mapping[str, str] | None = None,
    find: Callable[[str], bool] = loadable,
    platform: str | None = None,
    has_apt: bool | None = None,
) -> str:
    """Why the window cannot open on this X display, with the line that installs what is missing ("" when it can)."""
    if not xcb_will_be_used(environ, platform):
        return ""
    missing = missing_xcb_libraries(find)
    if not missing:
        return ""
    packages = " ".join(dict.fromkeys(missing.values()))
    apt = shutil.which("apt-get") is not None if has_apt is None else has_apt
    install = f"sudo apt-get install {packages}" if apt else f"install the packages holding them (Debian/Ubuntu: {packages})"
    return (
        f"the window cannot open: Qt's xcb platform plugin needs {', '.join(missing)}, not installed on this machine; "
        f"install them with: {install} (or set QT_QPA_PLATFORM=offscreen to run without a window)"
    )
