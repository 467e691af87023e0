"""Light and dark palettes for the window (the plots' colours are in ``plots``).

Fusion is used on every platform: it honours a QPalette fully, so the two
themes look the same on Linux, Windows and macOS and both can be checked in
offscreen screenshots.  "system" follows the desktop's colour scheme where
Qt can read it (Qt 6.5+ ``styleHints().colorScheme()``).

Nothing here touches PySide's ``Qt`` namespace before the window is shown:
the first use of ``Qt`` makes PySide create all its Python enums, a sizeable
share of the start-up (``bench/gui_latency.py``, ``window_vs_bare``).  So at
start-up "system" is judged from the palette Qt chose for the desktop
(``palette_looks_dark``), and the window checks ``colorScheme()`` once it is
on screen (``MainWindow._check_system_theme``).
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

THEMES = ("system", "light", "dark")


def _palette(colors: dict[str, str], disabled_text: str) -> QPalette:
    palette = QPalette()
    roles = {
        QPalette.ColorRole.Window: colors["window"],
        QPalette.ColorRole.WindowText: colors["text"],
        QPalette.ColorRole.Base: colors["base"],
        QPalette.ColorRole.AlternateBase: colors["alt_base"],
        QPalette.ColorRole.ToolTipBase: colors["tooltip"],
        QPalette.ColorRole.ToolTipText: colors["text"],
        QPalette.ColorRole.PlaceholderText: disabled_text,
        QPalette.ColorRole.Text: colors["text"],
        QPalette.ColorRole.Button: colors["button"],
        QPalette.ColorRole.ButtonText: colors["text"],
        QPalette.ColorRole.BrightText: "#ff4d4f",
        QPalette.ColorRole.Link: colors["accent"],
        QPalette.ColorRole.LinkVisited: colors["accent"],
        QPalette.ColorRole.Highlight: colors["accent"],
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Light: colors["light"],
        QPalette.ColorRole.Midlight: colors["midlight"],
        QPalette.ColorRole.Mid: colors["mid"],
        QPalette.ColorRole.Dark: colors["dark"],
        QPalette.ColorRole.Shadow: colors["shadow"],
    }
    for role, value in roles.items():
        palette.setColor(role, QColor(value))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(disabled_text))
    palette.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Highlight, QColor(colors["mid"]))
    return palette


def light_palette() -> QPalette:
    return _palette(
        {
            "window": "#f3f4f6",
            "text": "#1f2328",
            "base": "#ffffff",
            "alt_base": "#f6f8fa",
            "tooltip": "#ffffff",
            "button": "#f6f7f9",
            "accent": "#1a66c2",
            "light": "#ffffff",
            "midlight": "#e9ebef",
            "mid": "#c4c9d0",
            "dark": "#8c959f",
            "shadow": "#57606a",
        },
        disabled_text="#8c959f",
    )


def dark_palette() -> QPalette:
    return _palette(
        {
            "window": "#24282e",
            "text": "#e6edf3",
            "base": "#1b1f24",
            "alt_base": "#22272e",
            "tooltip": "#2d333b",
            "button": "#2d333b",
            "accent": "#4493f8",
            "light": "#444c56",
            "midlight": "#373e47",
            "mid": "#2d333b",
            "dark": "#1c2128",
            "shadow": "#0d1117",
        },
        disabled_text="#7d8590",
    )


def system_prefers_dark() -> bool:
    from PySide6.QtCore import Qt  # creates PySide's Qt enums: not before the window shows

    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    if scheme is None:  # Qt < 6.5
        return palette_looks_dark()
    value = scheme()
    if value == Qt.ColorScheme.Unknown:
        return palette_looks_dark()
    return value == Qt.ColorScheme.Dark


def palette_looks_dark() -> bool:
    """Whether the palette Qt made for this desktop is a dark one.

    Read before ``apply_theme`` sets ours: Qt derives its default palette
    from the platform theme, which follows the desktop's light or dark
    scheme (Fusion's standard palette too, since Qt 6.5).
    """
    window = QGuiApplication.palette().color(QPalette.ColorRole.Window)
    return window.lightnessF() < 0.5


def resolve_theme(theme: str, quick: bool = False) -> str:
    """``"light"`` or ``"dark"`` for a theme setting (``system`` resolved).

    ``quick``: judge "system" from the palette alone (``palette_looks_dark``);
    for start-up, before the window shows.
    """
    if theme == "system" or theme not in THEMES:
        if quick:
            return "dark" if palette_looks_dark() else "light"
        return "dark" if system_prefers_dark() else "light"
    return theme


# Extra rules the palette cannot express: the inline error state of a
# parameter field, headings, and the cards of the welcome view.
STYLE_SHEET = """
QLineEdit[invalid="true"], QComboBox[invalid="true"] {
    border: 1px solid #e5534b;
    border-radius: 3px;
    padding: 2px;
}
QLabel[role="error"] { color: #e5534b; }
QLabel[role="warning"] { color: #c98a00; }
QLabel[role="muted"] { color: palette(placeholder-text); }
QLabel[role="heading"] { font-size: 15pt; font-weight: 600; }
QLabel[role="subheading"] { font-size: 11pt; font-weight: 600; }
QFrame[role="card"] {
    background: palette(base);
    border: 1px solid palette(midlight);
    border-radius: 8px;
}
QListWidget#navigation {
    border: none;
    background: palette(alternate-base);
    padding-top: 6px;
}
QListWidget#navigation::item { padding: 8px 10px; border-radius: 6px; margin: 1px 6px; }
QListWidget#navigation::item:selected { background: palette(highlight); color: palette(highlighted-text); }
QListWidget#navigation { qproperty-focusPolicy: TabFocus; }
"""
# Set through the style sheet rather than in code, so the start view uses no
# Qt enum before it is shown (see the module's docstring).
STYLE_SHEET += """
QLabel[align="center"] { qproperty-alignment: AlignCenter; }
QLabel[align="top"] { qproperty-alignment: 'AlignTop | AlignLeft'; }
"""


def apply_theme(app: QApplication, theme: str, quick: bool = False) -> str:
    """Apply ``theme`` (system, light or dark) to ``app``; returns light or dark.

    ``quick``: see ``resolve_theme`` (call it before setting any palette).
    """
    resolved = resolve_theme(theme, quick)
    app.setPalette(dark_palette() if resolved == "dark" else light_palette())
    app.setStyleSheet(STYLE_SHEET)
    return resolved
