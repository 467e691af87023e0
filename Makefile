# The two commands of the README's quick start.
#   make run    set up (a .venv unless one is active) and open TrainLab on its bundled image sample
#   make test   set up (with the Debian packages the tests use) and run the whole test suite

.PHONY: run test bench screenshots

# The hint comes before the window opens, so that it is on the terminal while the sample trains.
run:
	@py=$$(scripts/setup.sh --gui) || exit $$?; venv=$${py%/bin/python}; \
	echo "TrainLab is installed in $$venv: 'source $$venv/bin/activate' for the trainlab command (or run $$venv/bin/trainlab); next steps: README.md" >&2; \
	"$$py" -m trainlab gui --task image-classification --data "$$("$$py" -c 'from trainlab.pluginhost.host import sample_path; print(sample_path("image-classification"))')" --autostart

# pytest-xdist workers, one per core up to four (tests/conftest.py keeps the
# two-rank files on one of them); PYTEST_WORKERS=0 runs it all in one process.
# -rs: a line per skipped test at the end, with the reason it gives.
PYTEST_WORKERS ?= auto
test:
	@py=$$(scripts/setup.sh --system) && "$$py" -m pytest -q -rs -n $(PYTEST_WORKERS) --maxprocesses 4 --dist loadgroup $(PYTEST_ARGS)

bench:
	@py=$$(scripts/setup.sh) && for b in bench/*.py; do echo "== $$b"; "$$py" "$$b" --json | tail -n 1; done

screenshots:
	@py=$$(scripts/setup.sh --system) && "$$py" scripts/render_screenshots.py
