"""Result views that other packages register: Qt widgets for details the generic drawing does not serve.

A plugin's own module imports no Qt; a package that wants a widget of its
own names it in a separate entry point group, ``trainlab.views``, which only
the window loads::

    [project.entry-points."trainlab.views"]
    forecast-windows = "trainlab_forecast.qtview:ForecastWindowsView"

and a detail its evaluation reports names it (``ExampleRows(...,
view="forecast-windows")``).  The entry point is a callable (a ``QWidget``
subclass) taking the parent widget; the widget it returns has
``show_detail(detail, run_dir)``, given the typed detail
(``trainlab.api.details``) and the run folder.  A view that cannot be
loaded or fails to draw is reported in its place, and the detail is drawn
generically: a broken plugin is never fatal.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QWidget

from trainlab.api.details import VIEW_ENTRY_POINT_GROUP, Detail

log = logging.getLogger(__name__)

_views: dict[str, Any] | None = None


def registered_views() -> dict[str, Any]:
    """The ``trainlab.views`` entry points installed, by name (read once)."""
    global _views
    if _views is None:
        _views = {ep.name: ep for ep in entry_points(group=VIEW_ENTRY_POINT_GROUP)}
    return _views


def forget_views() -> None:
    """Read the entry points again on next use (after installing a plugin)."""
    global _views
    _views = None


def custom_view(detail: Detail, run_dir: str, parent: QWidget) -> tuple[QWidget | None, str]:
    """The registered widget drawing ``detail``, or None and why not."""
    entry = registered_views().get(detail.view)
    if entry is None:
        return None, QCoreApplication.translate("ResultsView", "No installed package provides the view “{view}”; drawn generically.").format(view=detail.view)
    try:
        factory: Callable[[QWidget], QWidget] = entry.load()
        widget = factory(parent)
        widget.show_detail(detail, run_dir)
    except Exception as exc:  # noqa: BLE001 - another package's code: reported, never fatal
        log.warning("the view %s (%s) failed: %s", detail.view, entry.value, exc, exc_info=True)
        return None, QCoreApplication.translate("ResultsView", "The view “{view}” ({where}) failed: {error}; drawn generically.").format(
            view=detail.view, where=entry.value, error=f"{type(exc).__name__}: {exc}")
    return widget, ""
