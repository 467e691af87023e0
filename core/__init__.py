"""Not a package: the folder that holds the package ``trainlab`` (core/trainlab).

An editable install made before TrainLab's folders each held an ordinary
package maps the import name ``trainlab`` onto this folder. Such an
environment finds this file instead of TrainLab and says, in one line, how to
make it again; nothing else imports it.
"""

raise SystemExit(
    "trainlab: this environment was set up for an earlier layout of TrainLab's source folders; "
    "set it up again: `scripts/setup.sh` (or `make run`) in the repository, "
    "or `pip install -e .` in your own environment"
)
