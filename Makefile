# One target per experiment.  `make figures` runs them all at laptop scale; `make test` runs the
# tests.  Both create .venv and install requirements.txt first.  SCALE=full for the paper's grids,
# JOBS=N for N parallel processes.
PYTHON ?= python3
PY = .venv/bin/python
SCALE ?= small
JOBS ?= 2
RUN = $(PY) train.py
PLOT = $(PY) plots.py

CORE_FIGURES = fig5

PAPER_A_FIGURES = linear mlp facts tradeoff

PAPER_B_FIGURES =

.PHONY: test figures clean bench $(CORE_FIGURES) $(PAPER_A_FIGURES) $(PAPER_B_FIGURES)

figures: $(CORE_FIGURES) $(PAPER_A_FIGURES) $(PAPER_B_FIGURES)

.venv/ready: requirements.txt
	$(PYTHON) -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: .venv/ready
	$(PY) -m pytest -q test_recall.py

fig5: .venv/ready
	$(RUN) fig5 --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) fig5

# ----------------------------------------------------------------------------- paper A targets
# One BLAS thread per process: with JOBS processes on few cores, multithreaded BLAS made the
# linear-memory sweep 10x slower (measured: 110 s instead of 10 s).
PAPER_A_ENV = OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

linear: .venv/ready
	$(PAPER_A_ENV) $(RUN) linear --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) linear

mlp: .venv/ready
	$(PAPER_A_ENV) $(RUN) mlp --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) mlp

facts: .venv/ready
	$(PAPER_A_ENV) $(RUN) facts --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) facts

tradeoff: .venv/ready
	$(PAPER_A_ENV) $(RUN) tradeoff --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) tradeoff


# ----------------------------------------------------------------------------- paper B targets


clean:
	rm -rf results figures
