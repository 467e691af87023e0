"""The window's menu bar: File, Run, View, Tools, Help, and the dialogs it opens.

The actions call the window's public methods or open a dialog (kept on the
window as ``plugins_dialog``, ``about_dialog``); the Run menu holds the run
controls' own actions (their shortcuts work on every page) once the Train
page exists (``add_run_actions``).
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QApplication

from trainlab.system.paths import runs_dir
from trainlab_desktop.common.i18n import LANGUAGES


class WindowMenus(QObject):
    """Builds ``window``'s menus; keeps the actions other code reaches."""

    def __init__(self, window, pages: tuple[str, ...]):
        super().__init__(window)
        self.window = window
        # setShortcuts, not setShortcut: PySide resolves setShortcut's overloads
        # through the Qt namespace, whose enums cost start-up time (style.py)
        bar = window.menuBar()
        file_menu = bar.addMenu(self.tr("&File"))
        self.new_action = file_menu.addAction(self.tr("&New training"))
        self.new_action.setShortcuts(QKeySequence.StandardKey.New)
        self.new_action.triggered.connect(lambda: window.show_page("train"))
        self.open_data_action = file_menu.addAction(self.tr("&Open data\u2026"))
        self.open_data_action.setShortcuts(QKeySequence.StandardKey.Open)
        self.open_data_action.triggered.connect(window.open_data)
        self.open_run_action = file_menu.addAction(self.tr("Open &run folder\u2026"))
        self.open_run_action.setShortcuts([QKeySequence("Ctrl+Shift+O")])
        self.open_run_action.triggered.connect(self.open_run_folder)
        file_menu.addSeparator()
        quit_action = file_menu.addAction(self.tr("&Quit"))
        quit_action.setShortcuts(QKeySequence.StandardKey.Quit)
        quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        quit_action.triggered.connect(window.close)

        self.run_menu = bar.addMenu(self.tr("&Run"))  # filled when the run controls exist

        view = bar.addMenu(self.tr("&View"))
        for number, key in enumerate(pages, start=1):
            action = view.addAction(window.nav.item(number - 1).text())
            action.setShortcuts([QKeySequence(f"Ctrl+{number}")])
            action.triggered.connect(lambda _=False, k=key: window.show_page(k))
        view.addSeparator()
        # shows and hides the log dock, which is built once the window shows
        self.log_action = view.addAction(self.tr("&Log panel"))
        self.log_action.setCheckable(True)
        self.log_action.setShortcuts([QKeySequence("Ctrl+L")])
        view.addSeparator()
        theme_menu = view.addMenu(self.tr("&Theme"))
        group = QActionGroup(self)
        for value, title in (("system", self.tr("Follow the system")), ("light", self.tr("Light")), ("dark", self.tr("Dark"))):
            action = theme_menu.addAction(title)
            action.setCheckable(True)
            action.setChecked(window.settings.theme == value)
            action.setData(value)
            group.addAction(action)
            action.triggered.connect(lambda _=False, v=value: window.set_theme(v))
        language_menu = view.addMenu(self.tr("&Language"))
        languages = [("", self.tr("Follow the system"))]
        languages += list(LANGUAGES.items())
        lang_group = QActionGroup(self)
        for code, title in languages:
            action = language_menu.addAction(title)
            action.setCheckable(True)
            action.setChecked((window.settings.language or "") == code)
            lang_group.addAction(action)
            action.triggered.connect(lambda _=False, c=code: self.set_language(c or None))

        tools = bar.addMenu(self.tr("&Tools"))
        self.plugins_action = tools.addAction(self.tr("&Plugins\u2026"))
        self.plugins_action.setShortcuts([QKeySequence("Ctrl+Shift+P")])
        self.plugins_action.triggered.connect(self.show_plugins)
        self.caches_action = tools.addAction(self.tr("&Caches\u2026"))
        self.caches_action.triggered.connect(self.show_caches)

        help_menu = bar.addMenu(self.tr("&Help"))
        about = help_menu.addAction(self.tr("&About TrainLab"))
        about.setMenuRole(QAction.MenuRole.AboutRole)
        about.setShortcuts(QKeySequence.StandardKey.HelpContents)
        about.triggered.connect(self.show_about)
        about_qt = help_menu.addAction(self.tr("About &Qt"))
        about_qt.setMenuRole(QAction.MenuRole.AboutQtRole)
        about_qt.triggered.connect(QApplication.aboutQt)

    def add_run_actions(self, window, controls, continue_action: QAction) -> None:
        for action in (controls.start_action, controls.pause_action, controls.stop_action, controls.more_action):
            self.run_menu.addAction(action)
            window.addAction(action)  # shortcuts work whatever page is shown
        self.run_menu.addAction(continue_action)

    # -- what the menus open -------------------------------------------------------------
    def open_run_folder(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        folder = QFileDialog.getExistingDirectory(self.window, self.tr("Open a run folder"), str(runs_dir()))
        if folder:
            self.window.open_run(folder)

    def show_plugins(self) -> None:
        if self.window.registry is not None:
            from trainlab_desktop.dialogs.plugins import PluginsDialog

            self.window.plugins_dialog = self._open(PluginsDialog(self.window.registry, self.window))

    def show_caches(self) -> None:
        from trainlab_desktop.dialogs.cache import CacheDialog

        self.window.cache_dialog = self._open(CacheDialog(self.window))

    def show_about(self) -> None:
        from trainlab_desktop.dialogs.about import AboutDialog

        self.window.about_dialog = self._open(AboutDialog(self.window))

    @staticmethod
    def _open(dialog):
        from PySide6 import QtCore

        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def set_language(self, language: str | None) -> None:
        self.window.settings.language = language
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.information(
            self.window, self.tr("Language"), self.tr("The new language is used the next time TrainLab starts.")
        )
