"""The check before the window opens: Qt's xcb plugin's libraries, named with the packages that hold them."""

from __future__ import annotations

import re

from helpers import ROOT
from trainlab.system.qt_platform import XCB_LIBRARIES, missing_xcb_libraries, xcb_problem, xcb_will_be_used

X11 = {"DISPLAY": ":0"}


def finder(*missing: str):
    """A library finder that finds everything but ``missing``."""
    return lambda soname: soname not in missing


def test_missing_libraries_are_named_with_the_apt_line_that_installs_them():
    problem = xcb_problem(X11, finder("libxcb-cursor.so.0", "libxcb-icccm.so.4"), platform="linux", has_apt=True)
    assert problem.startswith("the window cannot open: Qt's xcb platform plugin needs libxcb-cursor.so.0, libxcb-icccm.so.4")
    assert "install them with: sudo apt-get install libxcb-cursor0 libxcb-icccm4 (" in problem
    assert "QT_QPA_PLATFORM=offscreen" in problem
    elsewhere = xcb_problem(X11, finder("libGL.so.1"), platform="linux", has_apt=False)
    assert "(Debian/Ubuntu: libgl1)" in elsewhere and "sudo apt-get" not in elsewhere


def test_nothing_is_said_when_every_library_loads():
    assert xcb_problem(X11, finder(), platform="linux", has_apt=True) == ""
    assert missing_xcb_libraries(finder()) == {}


def test_only_an_xcb_window_on_linux_is_checked():
    none_found = finder(*XCB_LIBRARIES)
    for environ in ({}, {"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, {"DISPLAY": ":0", "QT_QPA_PLATFORM": "wayland"},
                    {"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}):
        assert xcb_problem(environ, none_found, platform="linux", has_apt=True) == "", environ
    assert xcb_problem(X11, none_found, platform="darwin", has_apt=True) == ""
    assert xcb_will_be_used({"DISPLAY": ":1", "QT_QPA_PLATFORM": "xcb"}, platform="linux")
    assert xcb_will_be_used({"DISPLAY": ":1", "QT_QPA_PLATFORM": "xcb:nograb"}, platform="linux")
    assert xcb_problem({"DISPLAY": ":1", "QT_QPA_PLATFORM": "xcb"}, none_found, platform="linux", has_apt=True)


def test_the_packages_are_the_ones_setup_sh_installs_for_make_test():
    script = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    listed = re.search(r"for lib in (.*?); do", script, re.S).group(1)
    packages = set(listed.replace("\\\n", " ").split()) - {"fonts-dejavu-core"}  # a font, not a library Qt loads
    assert packages == set(XCB_LIBRARIES.values())
