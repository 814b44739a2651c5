# One target per experiment.  `make figures` runs them all at laptop scale; `make test` runs the
# tests.  Both create .venv and install requirements.txt first.  SCALE=full for the paper's grids,
# JOBS=N for N parallel processes.
PYTHON ?= python3
PY = .venv/bin/python
SCALE ?= small
JOBS ?= 2
RUN = $(PY) train.py
PLOT = $(PY) plots.py
# One BLAS thread per process (parallelism comes from JOBS); see bench.py for why.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

CORE_FIGURES = fig5

PAPER_A_FIGURES = linear mlp facts tradeoff

PAPER_B_FIGURES = b_agree b_phase b_nstar b_embed b_mlp b_long b_length

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

linear: .venv/ready
	$(RUN) linear --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) linear

mlp: .venv/ready
	$(RUN) mlp --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) mlp

facts: .venv/ready
	$(RUN) facts --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) facts

tradeoff: .venv/ready
	$(RUN) tradeoff --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) tradeoff


# ----------------------------------------------------------------------------- paper B targets

b_agree: .venv/ready
	$(RUN) b_agree --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_agree

b_phase: .venv/ready
	$(RUN) b_phase --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_phase

b_nstar: .venv/ready
	$(RUN) b_nstar --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_nstar

b_embed: .venv/ready
	$(RUN) b_embed --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_embed

b_mlp: .venv/ready
	$(RUN) b_mlp --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_mlp

b_long: .venv/ready
	$(RUN) b_long --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_long

b_length: .venv/ready
	$(RUN) b_length --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_length

.PHONY: b_terms
b_terms: .venv/ready
	$(RUN) b_terms --scale $(SCALE) --jobs $(JOBS)


# BENCH_PY=<python with jax installed> adds a side-by-side JAX column; JAX is never required.
BENCH_PY ?= $(PY)
bench: .venv/ready
	$(BENCH_PY) bench.py

clean:
	rm -rf results figures
