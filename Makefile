# The table of contents: `make figures` runs every experiment at laptop scale and draws its figure,
# `make figures-extra` the longer ones (EXTRA, then b_agree and tradeoff at SCALE=full: hours);
# `make X` runs experiment X alone (the lists below).  `make test` runs the tests, `make lint`
# the linter, `make demo` a seminar set at tiny scale, `make homework` writes the student copy
# homework/ (HOMEWORK=DIR: elsewhere) and `make check` (EX=N: exercise N only) checks the
# exercises, `make bench` times the kernels.  Every target but clean creates .venv and installs
# requirements.txt first.
# SCALE=tiny for seconds, SCALE=full for the papers' grids; JOBS=N runs N configurations in
# parallel; TALK=1 draws figures for a projector.
# `make clean` removes results and caches (figures/ stays).
PYTHON ?= python3
PY = .venv/bin/python
SCALE ?= small
JOBS ?= 2
PLOTFLAGS = --scale $(SCALE) $(if $(TALK),--talk)
# One BLAS thread per process (parallelism comes from JOBS); see bench.py for why.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

FIGURES = fig5 linear mlp facts tradeoff \
          b_agree b_embed b_mlp b_scaling
# each about as long as all of FIGURES together, or longer (README): run on their own
EXTRA = families arms b_literal b_ceiling budget
EXPERIMENTS = $(FIGURES) $(EXTRA)

.PHONY: test lint figures figures-extra demo clean bench homework check $(EXPERIMENTS)

figures: $(FIGURES)

figures-extra: $(EXTRA)
	$(MAKE) b_agree tradeoff SCALE=full

.venv/ready: requirements.txt
	$(PYTHON) -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: .venv/ready
	$(PY) -m pytest -q test_recall.py test_run.py

# ruff is a development tool, not a dependency of the code: installed here only
lint: .venv/ready
	$(PY) -m pip install --quiet --disable-pip-version-check ruff==0.17.6
	$(PY) -m ruff check .

# one rule for every experiment: run it, then draw its figure
$(EXPERIMENTS): .venv/ready
	$(PY) run.py $@ --scale $(SCALE) --jobs $(JOBS)
	$(PY) plots.py $@ $(PLOTFLAGS)

HOMEWORK ?= homework
homework: .venv/ready
	$(PY) homework.py make $(HOMEWORK)

check: .venv/ready
	$(PY) homework.py check $(EX)

bench: .venv/ready
	$(PY) bench.py

# fig5, linear and b_embed at tiny scale (one command), figures in results/demo/.
DEMO = fig5 linear b_embed
demo: .venv/ready
	for e in $(DEMO); do $(PY) run.py $$e --scale tiny --jobs 1 && \
	  $(PY) plots.py $$e --scale tiny --out results/demo/$$e.png || exit 1; done

clean:
	rm -rf results .pytest_cache __pycache__
