"""The real window under a real X server, as a user's desktop would show it.

The other GUI tests run Qt offscreen; this one starts ``trainlab-gui`` (the
program desktop launchers run) on Xvfb with Qt's xcb platform, waits for its
window to be mapped, takes a screenshot with ImageMagick's ``import`` and
checks that the window is there and drawn. It also checks the window's X11
WM_CLASS against the menu entry's StartupWMClass, which is what lets a dock
put the running window under TrainLab's icon.

Needs the Debian packages xvfb, imagemagick, xdotool and x11-utils, plus the
X libraries Qt's xcb plugin loads (libxcb-cursor0, libxcb-icccm4,
libxcb-keysyms1, ...; see docs/launcher.md). With TRAINLAB_SAVE_SCREENSHOTS=1
the screenshot is written to docs/screenshots/real-window.png.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT
from trainlab import shortcuts as launcher

SCREENSHOT = ROOT / "docs" / "screenshots" / "real-window.png"
TOOLS = {"Xvfb": "xvfb", "import": "imagemagick", "xdotool": "xdotool", "xprop": "x11-utils"}

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 test")


def _tools() -> dict[str, str]:
    found = {name: shutil.which(name) for name in TOOLS}
    missing = [f"{name} (Debian package {TOOLS[name]})" for name, path in found.items() if path is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail("the test set-up must install: " + ", ".join(missing))
        pytest.skip("not installed: " + ", ".join(missing))
    return found  # type: ignore[return-value]


@pytest.fixture
def x_display(tmp_path):
    """A private Xvfb server; yields its DISPLAY value."""
    tools = _tools()
    log = open(tmp_path / "xvfb.log", "wb")
    read_end, write_end = os.pipe()
    # -displayfd: the server picks a free display number and writes it to the
    # pipe once it accepts connections, so no number clash and no polling.
    server = subprocess.Popen(
        [tools["Xvfb"], "-displayfd", str(write_end), "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as reader:
            number = reader.readline().strip().decode()
        if not number:
            pytest.fail("Xvfb did not start: " + (tmp_path / "xvfb.log").read_text(errors="replace"))
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _screenshot(display: str, path: Path, window: str = "root") -> None:
    subprocess.run(
        [shutil.which("import"), "-display", display, "-window", window, f"png:{path}"],
        check=True,
        capture_output=True,
        timeout=60,
    )


def _distinct_colours(path: Path, box: tuple[int, int, int, int] | None = None) -> int:
    from PIL import Image

    with Image.open(path) as image:
        region = image.convert("RGB").crop(box) if box else image.convert("RGB")
        colours = region.getcolors(maxcolors=1 << 24)
    return len(colours)


def test_window_appears_on_a_real_x_server(x_display, tmp_path, tmp_home):
    env = dict(os.environ)
    env.update(DISPLAY=x_display, QT_QPA_PLATFORM="xcb", TRAINLAB_HOME=str(tmp_home), LANG="en_US.UTF-8")
    env.pop("WAYLAND_DISPLAY", None)
    gui = launcher.gui_executable()  # what the menu entry runs
    app = subprocess.Popen(
        [str(gui)], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        # xdotool --sync blocks until a visible window of that process exists.
        search = subprocess.run(
            [shutil.which("xdotool"), "search", "--sync", "--onlyvisible", "--pid", str(app.pid)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert search.returncode == 0 and search.stdout.strip(), f"no window: {search.stderr}"
        window = search.stdout.split()[0]

        geometry = subprocess.run(
            [shutil.which("xdotool"), "getwindowgeometry", "--shell", window],
            env=env, capture_output=True, text=True, timeout=30, check=True,
        ).stdout
        values = dict(line.split("=", 1) for line in geometry.split() if "=" in line)
        x, y, width, height = (int(values[k]) for k in ("X", "Y", "WIDTH", "HEIGHT"))
        assert width >= 640 and height >= 400, f"window too small: {width}x{height}"

        wm_class = subprocess.run(
            [shutil.which("xprop"), "-display", x_display, "-id", window, "WM_CLASS"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout
        names = [part.strip().strip('"') for part in wm_class.split("=", 1)[-1].split(",")]
        assert launcher.WM_CLASS in names, f"WM_CLASS {names} does not match StartupWMClass={launcher.WM_CLASS}"

        # Mapped is not yet painted: wait (bounded) until the window's area
        # shows a drawn interface, not a flat fill.
        shot = tmp_path / "root.png"
        box = (max(x, 0), max(y, 0), min(x + width, 1600), min(y + height, 1000))
        deadline = time.monotonic() + 60
        colours = 0
        while time.monotonic() < deadline:
            assert app.poll() is None, "the app exited: " + app.stdout.read().decode(errors="replace")[-3000:]
            _screenshot(x_display, shot)
            colours = _distinct_colours(shot, box)
            if colours >= 64:
                break
        assert colours >= 64, f"the window looks blank: {colours} distinct colours"

        window_shot = tmp_path / "window.png"
        _screenshot(x_display, window_shot, window)
        assert _distinct_colours(window_shot) >= 64
        if os.environ.get("TRAINLAB_SAVE_SCREENSHOTS"):
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(window_shot, SCREENSHOT)
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGTERM)
            try:
                app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(app.pid, signal.SIGKILL)
                app.wait(timeout=30)
