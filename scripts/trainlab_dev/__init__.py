"""Development helpers that make TrainLab's bundled sample data and test data.

Not part of the installed product: the wheel holds only the packages under
core/, desktop/, plugins/ and resources/. The tests (tests/conftest.py) and
the benches that draw data put ``scripts/`` on sys.path to import this
package; the GPU check (bench/gpucheck) draws its own and needs none of it.

* ``image_samples``: the "shapes" image folders (the bundled sample, test and bench data).
* ``table_samples``: the "cells" and "scenes" image tables (the regression and multi-label samples).
* ``text_sample``: the text-classification sample.
* ``family_samples``: the text-regression and text-multilabel samples.
* ``vocab``: the tiny-bert preset's WordPiece vocabulary.

Each runs from the repository root, e.g. ``.venv/bin/python
scripts/trainlab_dev/text_sample.py``, or as ``python -m trainlab_dev.text_sample``
with ``scripts/`` on the path; ``--help`` says what it writes where.
"""
