# One target per experiment.  `make figures` runs them all at laptop scale; `make test` runs the
# tests; `make demo` runs a seminar set at tiny scale; `make homework` writes the student copy
# homework/ and `make check` (EX=N: exercise N only) checks the exercises.  All create .venv and
# install requirements.txt first.  SCALE=tiny for seconds, SCALE=full for the paper's grids,
# JOBS=N for N parallel processes.  `make clean` removes results and caches (figures/ stays).
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

PAPER_B_FIGURES = b_agree b_phase b_nstar b_embed b_mlp b_length b_scaling b_gradinfo

.PHONY: test figures demo clean bench homework check $(CORE_FIGURES) $(PAPER_A_FIGURES) $(PAPER_B_FIGURES)

figures: $(CORE_FIGURES) $(PAPER_A_FIGURES) $(PAPER_B_FIGURES)

.venv/ready: requirements.txt
	$(PYTHON) -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: .venv/ready
	$(PY) -m pytest -q test_recall.py

homework: .venv/ready
	$(PY) homework.py make

check: .venv/ready
	$(PY) homework.py check $(EX)

fig5: .venv/ready
	$(RUN) fig5 --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) fig5 --scale $(SCALE)

# ----------------------------------------------------------------------------- paper A targets

linear: .venv/ready
	$(RUN) linear --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) linear --scale $(SCALE)

mlp: .venv/ready
	$(RUN) mlp --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) mlp --scale $(SCALE)

facts: .venv/ready
	$(RUN) facts --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) facts --scale $(SCALE)

tradeoff: .venv/ready
	$(RUN) tradeoff --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) tradeoff --scale $(SCALE)


# ----------------------------------------------------------------------------- paper B targets

b_agree: .venv/ready
	$(RUN) b_agree --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_agree --scale $(SCALE)

b_phase: .venv/ready
	$(RUN) b_phase --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_phase --scale $(SCALE)

b_nstar: .venv/ready
	$(RUN) b_nstar --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_nstar --scale $(SCALE)

b_embed: .venv/ready
	$(RUN) b_embed --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_embed --scale $(SCALE)

b_mlp: .venv/ready
	$(RUN) b_mlp --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_mlp --scale $(SCALE)

b_length: .venv/ready
	$(RUN) b_length --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_length --scale $(SCALE)

b_scaling: .venv/ready
	$(RUN) b_scaling --scale $(SCALE) --jobs $(JOBS)
	$(PLOT) b_scaling --scale $(SCALE)

# the gradient-information learner, three steps and Adam: drawn from b_scaling's runs
b_gradinfo: b_scaling
	$(PLOT) b_gradinfo --scale $(SCALE)


# BENCH_PY=<python with jax installed> adds a side-by-side JAX column; JAX is never required.
BENCH_PY ?= $(PY)
bench: .venv/ready
	$(BENCH_PY) bench.py

# fig5, linear and b_embed at tiny scale (one command), figures in results/demo/.
DEMO = fig5 linear b_embed
demo: .venv/ready
	for e in $(DEMO); do $(RUN) $$e --scale tiny --jobs 1 && \
	  $(PLOT) $$e --scale tiny --out results/demo/$$e.png || exit 1; done

clean:
	rm -rf results .pytest_cache __pycache__
