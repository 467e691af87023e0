"""Package data: sample data sets, icons, vocabularies, translations.

Read them through these helpers rather than building paths by hand, so they
work from a wheel, an editable install and a source checkout alike.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource_path(relative: str) -> Path:
    """The file or folder ``relative`` inside this package, as a real path."""
    return Path(str(files(__name__).joinpath(relative)))


def sample_path(task_id: str) -> Path:
    """The bundled sample data of a task (its TaskSpec's ``sample_data``)."""
    from trainlab.api import UsageError
    from trainlab.pluginhost import registry

    spec = registry().task(task_id).spec
    if not spec.sample_data:
        raise UsageError(f"task {task_id} ships no sample data")
    return resource_path(spec.sample_data)
