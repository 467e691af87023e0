"""Languages of the window: English (the source strings) and Simplified Chinese.

Translations are Qt ``.qm`` files compiled from ``resources/trainlab_resources/translations/*.ts``
(``scripts/update_translations.py`` re-extracts the strings of every
``desktop/*.py`` with ``pyside6-lupdate`` and compiles them with
``pyside6-lrelease``).  Qt's own dialogs (file dialogs, message-box buttons)
use the ``qtbase_*.qm`` that PySide6 ships, when it has one for the language.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, QLocale, QTranslator

SOURCE_LANGUAGE = "en"
# language code -> its own name (shown in the language menu untranslated, so
# anyone can find their language whatever the current one is).
LANGUAGES: dict[str, str] = {"en": "English", "zh_CN": "简体中文"}

_ALIASES = {
    "en": "en",
    "english": "en",
    "zh": "zh_CN",
    "zh_cn": "zh_CN",
    "zh_hans": "zh_CN",
    "zh_sg": "zh_CN",
    "chinese": "zh_CN",
}

# Keeps the installed translators alive (Qt does not own them) and lets a
# second call replace the first language instead of stacking both.
_installed: list[QTranslator] = []
_current = SOURCE_LANGUAGE


def translations_dir() -> Path:
    """Folder of the shipped ``trainlab_*.qm`` files (package data)."""
    from trainlab_resources import resource_path

    return resource_path("translations")


def normalize_language(language: str | None) -> str | None:
    """``"zh-CN"``, ``"zh_Hans_CN"``, ``"zh"`` -> ``"zh_CN"``; unknown -> None."""
    if not language:
        return None
    key = language.strip().replace("-", "_").lower()
    if key in _ALIASES:
        return _ALIASES[key]
    # zh_Hans_CN, zh_CN.UTF-8, en_GB ... : try the longest known prefix.
    key = key.split(".")[0].split("@")[0]
    parts = key.split("_")
    for size in range(len(parts), 0, -1):
        candidate = "_".join(parts[:size])
        if candidate in _ALIASES:
            return _ALIASES[candidate]
    if parts[0] == "zh":
        # Traditional-script locales (zh_TW, zh_HK) read Simplified Chinese far
        # more easily than English; there is no Traditional translation yet.
        return "zh_CN"
    return None


def system_language(locale: QLocale | None = None) -> str:
    """The shipped language that best fits the system locale's UI languages."""
    locale = locale or QLocale.system()
    for name in locale.uiLanguages():
        code = normalize_language(name)
        if code is not None:
            return code
    return normalize_language(locale.name()) or SOURCE_LANGUAGE


def install_translator(app: QCoreApplication, language: str | None = None) -> str:
    """Install the translations for ``language`` (None: the system locale).

    Returns the language actually used: ``"en"`` or ``"zh_CN"``.  An unknown
    language, or a missing ``.qm`` file, falls back to English.  Widgets built
    before this call keep their text; call it before building the window (or
    rebuild it, as a language change in the settings does at restart).
    """
    global _current
    code = normalize_language(language) if language else system_language()
    if code is None:
        code = SOURCE_LANGUAGE
    for translator in _installed:
        app.removeTranslator(translator)
    _installed.clear()
    _current = SOURCE_LANGUAGE
    ours = QTranslator(app) if code != SOURCE_LANGUAGE else None
    if ours is None or not ours.load(f"trainlab_{code}", str(translations_dir())):
        QLocale.setDefault(QLocale(QLocale.Language.English, QLocale.Country.UnitedStates))
        return SOURCE_LANGUAGE
    app.installTranslator(ours)
    _installed.append(ours)

    from PySide6.QtCore import QLibraryInfo  # only for a translation: its enums cost start-up time

    qt_dir = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
    for catalog in ("qtbase", "qt"):
        qt_translator = QTranslator(app)
        if qt_translator.load(f"{catalog}_{code}", qt_dir):
            app.installTranslator(qt_translator)
            _installed.append(qt_translator)
            break
    # Dates and numbers in Qt widgets follow the chosen language too.
    QLocale.setDefault(QLocale(code))
    _current = code
    return code


def current_language() -> str:
    """The language installed by the last ``install_translator`` call."""
    return _current
