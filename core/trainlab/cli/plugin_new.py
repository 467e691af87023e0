"""``trainlab plugins new NAME --family ID|new [--dist DIST] [--out DIR] [--json]``: a plugin package from the template.

The template is the copier template in ``trainlab_resources/templates/plugin``
(copier is the kit extra's one package: without it, one line naming the
extra).  ``--family`` is a family TrainLab evaluates itself (the ones
registered in ``trainlab.api.families`` and ``FAMILIES``) or one of its
plugins' (``PLUGIN_FAMILIES``), each with its starting point under the
template's ``families/`` folder, or ``new``: a
family of the plugin's own, with its own metrics, prediction type and
evaluation.  NAME is the entry-point name; the distribution (``--dist``,
what pip installs) is asked for separately and defaults to ``trainlab-NAME``.
The rendered package's tests are the kit's conformance suite.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trainlab.api.descriptors import FAMILIES
from trainlab.api.errors import UsageError
from trainlab.api.families import ACCUMULATORS
from trainlab_resources import resource_path

NEW_FAMILY = "new"
KIT_EXTRA = "pip install 'trainlab[kit]'"


def template_folder() -> Path:
    return Path(resource_path("templates", "plugin"))


# Families of TrainLab's own plugins that TrainLab does not evaluate itself: a
# task of one brings its evaluation, and so does its starting point.
PLUGIN_FAMILIES = ("text-generation",)


def registered_families() -> list[str]:
    """The families TrainLab evaluates itself and its plugins' own, in the order it lists them."""
    return list(dict.fromkeys([*FAMILIES, *ACCUMULATORS, *PLUGIN_FAMILIES]))


def template_families() -> list[str]:
    """The families the template has a starting point for (``new`` included)."""
    folder = template_folder() / "families"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def family_choices() -> list[str]:
    return [*registered_families(), NEW_FAMILY]


def render(name: str, family: str, *, distribution: str = "", out: str | Path | None = None) -> dict[str, Any]:
    """Render the template for plugin NAME of ``family`` into ``out``; what was made, or UsageError saying what is wrong."""
    if not re.match(r"^[a-z][a-z0-9-]+$", name or ""):
        raise UsageError(f"plugin name {name!r}: lower-case letters, digits and dashes, starting with a letter")
    choices = family_choices()
    if family not in choices:
        ready = [f for f in choices if f in template_families()]
        pending = [f for f in choices if f not in ready]
        later = f" ({', '.join(pending)}: no starting point in the template yet)" if pending else ""
        raise UsageError(f"--family {family}: not a family TrainLab knows; one of {', '.join(ready)}{later}")
    if family not in template_families():
        raise UsageError(f"--family {family}: the template has no starting point for this family yet; use --family new and adapt it")
    try:
        import copier
    except ImportError:
        raise UsageError(f"trainlab plugins new needs copier, from the kit extra: {KIT_EXTRA}") from None
    distribution = distribution or f"trainlab-{name}"
    folder = Path(out if out else distribution).expanduser()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(f"{folder}: already exists and is not empty; give --out a new folder")
    package = "trainlab_" + name.replace("-", "_")
    data = {"plugin_name": name, "distribution": distribution, "package": package, "family": family}
    try:
        copier.run_copy(str(template_folder()), str(folder), data=data, defaults=True, unsafe=False, quiet=True)
    except ValueError as exc:  # a validator of copier.yml refused an answer
        raise UsageError(f"trainlab plugins new: {exc}") from None
    answers = {"family_id": name} if family == NEW_FAMILY else {}
    task = f"{name}-values" if family == NEW_FAMILY else f"{name}-{family}"
    return {
        "folder": str(folder.resolve()),
        "entry_point": name,
        "distribution": distribution,
        "package": package,
        "family": answers.get("family_id", family),
        "task": task,
    }


def cmd_new(args, out) -> int:
    made = render(args.name, args.family, distribution=args.dist or "", out=args.out)
    out.say(f"{made['folder']}: plugin {made['entry_point']} (distribution {made['distribution']}, package {made['package']}), "
            f"task {made['task']} of family {made['family']}")
    out.note(f"next: cd {made['folder']} && pip install -e '.[test]' && trainlab plugins check {made['entry_point']} && pytest")
    out.result(made)
    return 0
