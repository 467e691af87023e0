"""``python -m trainlab``: the same as the ``trainlab`` command."""

import sys

from trainlab.system.shadowing import shadowing_error

# Asked before trainlab.cli.commands is imported: with a folder named trainlab in the
# current folder, that import is the first thing to fail.
problem = shadowing_error()
if problem is not None:
    print(f"trainlab: error: {problem}", file=sys.stderr)
    sys.exit(2)

from trainlab.cli.commands import main  # noqa: E402

sys.exit(main())
