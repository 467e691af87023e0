"""``python -m trainlab``: the same as the ``trainlab`` command."""

import sys

from trainlab.cli import main

sys.exit(main())
