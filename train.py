"""train.py -- optimizers, training loops, capacity search, one runner per experiment, CLI.

    python train.py --help               lists the experiments
    python train.py fig5 --help          options of one experiment

Every run writes one JSON record (its whole config, seed, measured numbers and wall time) to
results/<experiment>/<key>.json, atomically, as soon as it finishes; rerunning skips finished
records, so an interrupted sweep loses at most the runs in flight.  plots.py reads only these.
"""
import os

# One BLAS thread per process: the matrices here are small, and a multi-threaded BLAS that
# shares 2 cores with another process spins and runs several times slower (measured by
# bench.py).  Parallelism comes from --jobs instead.  Set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import contextlib
import ctypes
import functools
import glob
import hashlib
import io
import json
import math
import multiprocessing as mp
import signal
import sys
import threading
import time

import numpy as np

import recall as rc
import theory

try:   # glibc hands large freed arrays back to the OS and page-faults them in again at every
    _libc = ctypes.CDLL("libc.so.6")   # step (a third of a transformer step's CPU time): keep them
    _libc.mallopt(-3, 32 << 20), _libc.mallopt(-1, 256 << 20)   # M_MMAP_, M_TRIM_THRESHOLD
except (OSError, AttributeError):                               # not glibc: nothing to do
    pass


# ----------------------------------------------------------------------------- optimizers

def sgd_step(params, grads, lr):
    """Plain (stochastic) gradient descent, in place:  p <- p - lr g."""
    for k in params:
        params[k] -= lr * grads[k]


def adam_init(params):
    return {"t": 0, "m": {k: np.zeros_like(p) for k, p in params.items()},
            "v": {k: np.zeros_like(p) for k, p in params.items()}}


def adam_step(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Adam with bias correction, in place; eps is added outside the square root:
        m <- b1 m + (1-b1) g,  v <- b2 v + (1-b2) g^2,
        p <- p - lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1-b1^t),  v_hat = v / (1-b2^t)."""
    state["t"] += 1
    t = state["t"]
    for k in params:
        m, v, g = state["m"][k], state["v"][k], grads[k]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        params[k] -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


# ----------------------------------------------------------------------------- capacity search

def memoised(fn):
    """fn(n) with each result computed once.  Returns (call, cache); the cache dict keeps every
    trial a bisection made, so a record can store them and a second criterion can reuse them."""
    cache = {}

    def call(n):
        if n not in cache:
            cache[n] = fn(n)
        return cache[n]
    return call, cache


def bisect_capacity(succeeds, lo, hi, ratio=1.01):
    """Largest integer n in [lo, hi] with succeeds(n), assuming success is monotone in n: bisection
    in log scale until hi/lo <= ratio.  Returns lo if even lo fails (the caller should record
    that), hi if hi succeeds."""
    lo, hi = int(lo), int(hi)
    if lo < 1 or hi < lo:
        raise ValueError(f"need 1 <= lo <= hi, got lo={lo}, hi={hi}")
    if succeeds(hi):
        return hi
    if not succeeds(lo):
        return lo
    while hi / lo > ratio and hi - lo > 1:
        mid = int(round(math.sqrt(lo * hi)))
        mid = min(max(mid, lo + 1), hi - 1)
        lo, hi = (mid, hi) if succeeds(mid) else (lo, mid)
    return lo


# ----------------------------------------------------------------------------- results and sweeps

RESULTS = "results"


def config_key(config):
    """A short stable name for a config: a hash of its canonical JSON."""
    blob = json.dumps(config, sort_keys=True, default=float)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def save_json(path, obj):
    """Write then rename, so a reader (or an interrupted run) never sees half a file.
    NumPy scalars and arrays are written as numbers and lists."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=lambda o: o.tolist())
    os.replace(tmp, path)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def load_records(out, experiment, scale=None):
    """The finished records of the last run at one scale (default SELECT["scale"], else the
    newest run), as sweep listed them in OUT/<experiment>/_set-<scale>.json.  Leaves the set's
    scale, overrides, seeds and dtypes in SELECT["drawn"] for the figure's header line."""
    folder = os.path.join(out, experiment)
    scale = scale or SELECT["scale"]
    sets = sorted(glob.glob(os.path.join(folder, f"_set-{scale or '*'}.json")), key=os.path.getmtime)
    if not sets:
        return []
    manifest = read_json(sets[-1])
    paths = [os.path.join(folder, key + ".json") for key in manifest["keys"]]
    recs = [read_json(p) for p in paths if os.path.exists(p)]
    SELECT["drawn"] = dict(manifest, n=len(recs), seeds=len({r["config"].get("seed") for r in recs}),
                           dtypes=sorted({r["config"].get("dtype", "float64") for r in recs}),
                           draws=max(r["config"].get("draws", 1) for r in recs) if recs else 1)
    return recs


def _run_record(job):
    path, experiment, fn, config = job
    t0 = time.time()
    result = fn(config)
    return path, {"experiment": experiment, "config": config, "result": result,
                  "seconds": round(time.time() - t0, 3)}


class _Progress:
    """One line on stderr, redrawn every second: done/total, elapsed, estimated remaining.
    Shown when stderr is a terminal (or RECALL_PROGRESS=1)."""

    def __init__(self, label, total, done=0):
        self.label, self.total, self.done, self.start, self.t0 = label, total, done, done, time.time()
        self.on = sys.stderr.isatty() or os.environ.get("RECALL_PROGRESS") == "1"
        self.stop = threading.Event()
        if self.on and done < total:
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self):
        while not self.stop.wait(1.0):
            self.update(0)

    def update(self, n=1):
        self.done += n
        if self.on:
            el, new = time.time() - self.t0, self.done - self.start
            left = f"~{el / new * (self.total - self.done):.0f}s left" if new else "time left unknown"
            sys.stderr.write(f"\r{self.label}: {self.done}/{self.total} done, {el:.0f}s elapsed, "
                             f"{left}   ")
            sys.stderr.flush()

    def close(self):
        self.stop.set()
        self.update(0)
        if self.on:
            sys.stderr.write("\n")


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # workers leave Ctrl-C to the parent


# Set by the CLI: `list` the configs, or run `only` config I; the --`set` overrides; the config
# `fields` seen, with their values; the `scale` running or to draw.
SELECT = {"list": False, "only": None, "set": {}, "fields": {}, "scale": None}


def sweep(experiment, configs, fn, out=RESULTS, jobs=1, derive=None):
    """Run fn(config) -> dict for every config without a finished record; return all records.

    configs: JSON-able dicts, each with its own seed, so results depend neither on `jobs` nor on
    the order of execution.  fn must be a module-level function (the process pool pickles it).
    Each finished run is saved at once as results/<experiment>/<key>.json; Ctrl-C keeps them and
    loses the runs in flight.  --set KEY=VALUE replaces KEY in every config that has it, after
    derive(config), if given, has recomputed the fields that follow from others (e.g. a bracket
    from d); identical configs run once.  The record set plots.py draws (config keys, scale,
    overrides) goes to results/<experiment>/_set-<scale>.json: one sweep call per runner."""
    jobs = rc._check_int("jobs", jobs)
    for c in configs:
        for k, v in c.items():
            SELECT["fields"].setdefault(k, []).append(v)
    if SELECT["set"]:
        over = lambda c: {k: v for k, v in SELECT["set"].items() if k in c}   # noqa: E731
        configs = [dict(derive(dict(c, **over(c))) if derive else c, **over(c)) for c in configs]
    configs = list({config_key(c): c for c in configs}.values())     # duplicates run once
    folder = os.path.join(out, experiment)
    keys = [config_key(c) for c in configs]
    paths = [os.path.join(folder, k + ".json") for k in keys]
    if SELECT["list"]:
        for i, (c, p) in enumerate(zip(configs, paths)):
            print(f"{i}\t{'done' if os.path.exists(p) else 'todo'}\t{json.dumps(c, sort_keys=True)}")
        return []
    manifest = os.path.join(folder, f"_set-{SELECT['scale'] or 'custom'}.json")
    save_json(manifest, {"experiment": experiment, "scale": SELECT["scale"] or "custom",
                         "set": SELECT["set"], "keys": keys})
    if SELECT["only"] is not None:
        if not 0 <= SELECT["only"] < len(configs):
            raise ValueError(f"--only must be in [0, {len(configs)}) for {experiment}, "
                             f"got {SELECT['only']}")
        configs, paths = [configs[SELECT["only"]]], [paths[SELECT["only"]]]
    todo = [(p, experiment, fn, c) for c, p in zip(configs, paths) if not os.path.exists(p)]
    pool = None
    if jobs > 1 and len(todo) > 1:          # fork the workers before the progress thread starts
        pool = mp.Pool(min(jobs, len(todo)), initializer=_ignore_sigint)
    progress = _Progress(experiment, len(configs), len(configs) - len(todo))
    try:
        for path, record in (pool.imap_unordered(_run_record, todo) if pool else map(_run_record, todo)):
            save_json(path, record)
            progress.update()
        if pool:
            pool.close()
    except BaseException:
        if pool:
            pool.terminate()                         # Ctrl-C: drop the runs in flight
        raise
    finally:
        if pool:
            pool.join()
        progress.close()
    return [read_json(p) for p in paths]


# ----------------------------------------------------------------------------- experiments registry

EXPERIMENTS = {}   # name -> (runner, help, [(flag, type, default, help), ...])


def experiment(name, help, options=()):
    """Register a runner  run(out, scale, jobs, seed, **options) -> records; SELECT["scale"]."""
    def register(fn):
        @functools.wraps(fn)
        def run(out=RESULTS, scale="small", jobs=1, seed=0, **kw):
            SELECT.update(scale=scale)
            try:
                return fn(out=out, scale=scale, jobs=jobs, seed=seed, **kw)
            finally:
                SELECT.update(scale=None)
        EXPERIMENTS[name] = (run, help, list(options))
        return run
    return register


# ----------------------------------------------------------------------------- paper A, Fig. 5: sequential learning
# "A1" .. "A5": paper A's setups as REPRODUCE.md states them, in its section "Paper A setups".

def fig5_losses(logits, y, D):
    """Total, relation-only and subject-only cross-entropy (means over rows).
    relation-only: -log sum_{a in y's relation block} p(a)   (is the relation known?)
    subject-only:  -log sum_{a = y mod D} p(a)               (is the subject's slot known?)"""
    logp = rc.log_softmax(logits)                                   # (B, D R)
    B, n = logp.shape
    rows = np.arange(B)
    blocks = logp.reshape(B, n // D, D)                             # (B, R, D)
    rel = np.logaddexp.reduce(blocks[rows, y // D], axis=1)         # (B,)
    sub = np.logaddexp.reduce(blocks[rows, :, y % D], axis=1)       # (B,)
    return -logp[rows, y].mean(), -rel.mean(), -sub.mean()


def fig5_stages(curve, n_answers, D):
    """Stage boundaries read off the curve: the plateau ends when the total loss first drops
    below the midpoint of ln(n_answers) and ln D; the hallucination stage (relation known,
    subject not: total loss near ln D) ends when it first drops below ln(D)/2."""
    step, tot = np.asarray(curve["step"]), np.asarray(curve["total"])
    def first_below(th):
        i = np.flatnonzero(tot < th)
        return int(step[i[0]]) if len(i) else None
    t1 = first_below((np.log(n_answers) + np.log(D)) / 2)
    t2 = first_below(np.log(D) / 2)
    return {"plateau": (0, t1), "hallucination": (t1, t2), "recall": (t2, int(step[-1]))}


def run_fig5_one(cfg):
    """Linear attention, one-hot embeddings, SGD from a tiny init on fresh batches (A5)."""
    rng = np.random.default_rng(cfg["seed"])
    dt = np.dtype(cfg.get("dtype", "float64"))
    task = rc.make_facts(cfg["S"], cfg["R"], cfg["D"], rng, T=cfg["T"], structured=True)
    d = task["vocab"]                                               # one-hot: d = vocab = 41
    fixed = {"E": rc.embeddings(d, d, rng, "onehot").astype(dt)}
    params = {"A": np.full((d, d), cfg["init"], dtype=dt),
              "WV": np.full((d, task["n_answers"]), cfg["init"], dtype=dt)}
    test_x, test_y = rc.sample_facts(task, cfg["n_test"], rng)
    curve = {"step": [], "total": [], "relation": [], "subject": [], "accuracy": []}
    for step in range(cfg["steps"] + 1):
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            logits, _ = rc.linear_attention_forward(params, fixed, test_x)
            for k, v in zip(("total", "relation", "subject"), fig5_losses(logits, test_y, cfg["D"])):
                curve[k].append(round(float(v), 6))
            curve["step"].append(step)
            curve["accuracy"].append(rc.accuracy(logits, test_y))
        if step == cfg["steps"]:
            break
        x, y = rc.sample_facts(task, cfg["batch"], rng)
        logits, cache = rc.linear_attention_forward(params, fixed, x)
        _, dlogits = rc.cross_entropy(logits, y)
        sgd_step(params, rc.linear_attention_backward(dlogits, cache), cfg["lr"])
    return curve


def fig5_config(steps=None, seed=0, eval_every=64, dtype="float32", scale="small"):
    """The paper's run, 8192 steps, at every scale but tiny; tiny: lr 0.3 and batch 256, so the
    same three stages pass in 2048 steps (about 5 s)."""
    tiny = scale == "tiny"
    return {"S": 16, "R": 4, "D": 8, "T": 32, "lr": 0.3 if tiny else 0.1,
            "batch": 256 if tiny else 1024, "init": 1e-5, "steps": steps or (2048 if tiny else 8192),
            "n_test": 1024 if tiny else 4096, "eval_every": 32 if tiny else eval_every,
            "seed": seed, "dtype": dtype}


@experiment("fig5", "paper A Fig. 5: sequential learning and the hallucination stage",
            [("--steps", "positive_int", None, "SGD steps (paper: 8192; tiny scale: 2048)"),
             ("--dtype", "dtype", "float32", "float32 or float64")])
def run_fig5(out=RESULTS, scale="small", jobs=1, seed=0, steps=None, dtype="float32"):
    """The paper's run is cheap (half a minute to two), so small and full both run it."""
    records = sweep("fig5", [fig5_config(steps, seed, dtype=dtype, scale=scale)], run_fig5_one,
                    out, jobs)
    for r in records:
        c, cfg = r["result"], r["config"]
        st = fig5_stages(c, cfg["R"] * cfg["D"], cfg["D"])
        print(f"fig5 seed {cfg['seed']}: plateau until step {st['plateau'][1]}, hallucination "
              f"(total loss near ln {cfg['D']}) until step {st['hallucination'][1]}; final total "
              f"loss {c['total'][-1]:.4f}, test accuracy {c['accuracy'][-1]:.3f}")
    return records


# ----------------------------------------------------------------------------- paper A, capacity experiments
#
# Each config is one capacity search (one d, one seed, ...).  A trial at size N draws its own
# embeddings from default_rng([seed, d, N, ...]), so whether N succeeds does not depend on the
# path the bisection took, and a trial can be memoised and shared by several criteria.


LINEAR_GRID = {"tiny": ([8, 11, 16], 2), "small": ([8, 11, 16, 22, 32], 3),   # d, seeds
               "full": ([8, 11, 16, 22, 32, 45, 64, 90, 128, 181, 256], 5)}


def fit_memory(forward, backward, params, fixed, y, lr, steps, stop_at=1.0, patience=None):
    """Full-batch Adam on the items x = 0..N-1 with labels y (N,) until the accuracy reaches
    stop_at, `steps` run out or ([ours]) it has not improved for `patience` steps.  Returns the
    first steps with accuracy >= 0.99 and = 1 (None if never), the best accuracy, steps taken."""
    x = np.arange(len(y))                                          # (N,)
    state = adam_init(params)
    out, best_step = {"first99": None, "first100": None, "best": 0.0}, 0
    for step in range(steps + 1):
        logits, cache = forward(params, fixed, x)                  # (N, classes)
        acc = rc.accuracy(logits, y)
        if acc > out["best"]:
            out["best"], best_step = acc, step
        if acc >= 0.99 and out["first99"] is None:
            out["first99"] = step
        if acc == 1.0:
            out["first100"] = step
        if acc >= stop_at or step == steps or (patience and step - best_step >= patience):
            return dict(out, steps=step)
        _, dlogits = rc.cross_entropy(logits, y)
        adam_step(params, backward(dlogits, cache), state, lr)


def linear_memory_trial(N, d, seed, lr, steps):
    """Train W (d, d) by full-batch Adam on N sphere embeddings, f(i) = i (A1), until
    every item is recalled or `steps` run out (see fit_memory)."""
    rng = np.random.default_rng([seed, d, N])
    fixed = {"E": rc.embeddings(N, d, rng, "sphere"), "U": rc.embeddings(N, d, rng, "sphere")}
    params = {"W": np.zeros((d, d))}                               # [ours] zero init
    out = fit_memory(rc.linear_memory_forward, rc.linear_memory_backward, params, fixed,
                     np.arange(N), lr, steps)                      # item i -> class i
    if not np.isfinite(params["W"]).all():
        raise FloatingPointError(f"linear memory diverged at N={N}, d={d}, lr={lr}")
    return dict(out, N=N)


def hebbian_accuracy(N, d, seed):
    """Accuracy of the untrained memory W = sum_i e_i u_i^T = E^T U on the same draw as the trial."""
    rng = np.random.default_rng([seed, d, N])
    E, U = rc.embeddings(N, d, rng, "sphere"), rc.embeddings(N, d, rng, "sphere")
    logits = (E @ (E.T @ U)) @ U.T                                 # (N, N)  E W U^T, W = E^T U
    return rc.accuracy(logits, np.arange(N))


def run_linear_one(cfg):
    """Capacity of one d x d linear memory: trained (99% and 100% criteria) and Hebbian."""
    d, seed = cfg["d"], cfg["seed"]
    trial, memo = memoised(lambda N: linear_memory_trial(N, d, seed, cfg["lr"], cfg["steps"]))
    lo, hi = cfg["lo"], cfg["hi"]
    cap99 = bisect_capacity(lambda N: trial(N)["first99"] is not None, lo, hi, cfg["ratio"])
    # the 100% criterion is stricter on the same draw, so its capacity is at most cap99
    cap100 = bisect_capacity(lambda N: trial(N)["first100"] is not None, lo, cap99, cfg["ratio"])
    hacc, heb = memoised(lambda N: hebbian_accuracy(N, d, seed))
    h_hi = max(3, d * d // 2)
    hebb99 = bisect_capacity(lambda N: hacc(N) >= 0.99, 2, h_hi, cfg["ratio"])
    hebb100 = bisect_capacity(lambda N: hacc(N) == 1.0, 2, hebb99, cfg["ratio"])
    return {"cap99": cap99, "cap100": cap100, "hebb99": hebb99, "hebb100": hebb100,
            "lo_fails": trial(lo)["first99"] is None, "hi_succeeds": trial(hi)["first99"] is not None,
            "trials": [memo[N] for N in sorted(memo)],
            "hebbian_trials": [[N, heb[N]] for N in sorted(heb)]}


def linear_config(scale, d, seed):
    """One capacity search.  full: A1 (Adam lr 1000, 4096 steps, bracket [d, d^2/2],
    ratio 1.01).  small and tiny: 1024 steps, ratio 1.03, and the bracket [N(c=4), N(c=0.8)]
    from d^2 = c N ln N (our runs put the capacity at c = 0.85 to 1.2, well inside)."""
    full = scale == "full"
    lo, hi = (d, d * d // 2) if full else (max(2, int(theory.linear_capacity_N(d, 4.0))),
                                           min(d * d // 2, int(theory.linear_capacity_N(d, 0.8)) + 1))
    return {"scale": scale, "d": d, "seed": seed, "lr": 1000.0, "steps": 4096 if full else 1024,
            "ratio": 1.01 if full else 1.03, "lo": lo, "hi": hi}


def linear_configs(scale, seed):
    ds, n_seeds = LINEAR_GRID[scale]
    return [linear_config(scale, d, s) for d in ds for s in range(seed, seed + n_seeds)]


@experiment("linear", "paper A Fig. 1 left: linear associative memory capacity, trained and Hebbian",
            [("--dmax", "positive_int", 256, "only the d <= DMAX of the grid")])
def run_linear(out=RESULTS, scale="small", jobs=1, seed=0, dmax=256):
    cfgs = [c for c in linear_configs(scale, seed) if c["d"] <= dmax]
    recs = sweep("linear", cfgs, run_linear_one, out, jobs,
                 derive=lambda c: linear_config(c["scale"], c["d"], c["seed"]))
    print(linear_table(recs))
    print_fits("linear", recs)
    return recs


def linear_table(records):
    """Per d: mean capacities over seeds and the c = d^2 / (N ln N) of the trained 99% mean."""
    rows = ["| d | seeds | trained 99% | trained 100% | Hebbian 100% | c (trained 99%) |",
            "|---|---|---|---|---|---|"]
    for d in sorted({r["config"]["d"] for r in records}):
        res = [r["result"] for r in records if r["config"]["d"] == d]
        N = {k: float(np.mean([x[k] for x in res])) for k in ("cap99", "cap100", "hebb100")}
        rows.append(f"| {d} | {len(res)} | {N['cap99']:.1f} | {N['cap100']:.1f} | "
                    f"{N['hebb100']:.1f} | {d * d / (N['cap99'] * math.log(N['cap99'])):.2f} |")
    return "\n".join(rows)


# Fitted constants: one function shared by the runner (prints) and plots.py (annotates).

def linear_fits(records):
    """c in d^2 = c N ln N for each curve (geometric mean over all (d, seed) points), and the
    bits per parameter it implies."""
    out = {}
    for key in ("cap99", "cap100", "hebb99", "hebb100"):
        pts = [(r["result"][key], r["config"]["d"]) for r in records if r["result"][key] > 1]
        if pts:
            N, d = np.array(pts, float).T
            c = theory.fit_constant(N * np.log(N), d * d)
            out[key] = {"c": c, "bits_per_param": theory.bits_per_param_linear(c)}
    return out


FITS = {"linear": linear_fits}


def print_fits(name, records):
    for key, v in FITS[name](records).items():
        print(f"{name} {key}: " + ", ".join(f"{k} = {x:.3g}" for k, x in v.items()))


MLP_GRID = {"tiny": ([8, 16], 256, 1), "small": ([8, 11, 16], 1024, 1),   # d, max m d, seeds
            "full": ([8, 11, 16, 22, 32, 45, 64, 90], math.inf, 5)}


def mlp_memory_trial(N, d, m, M, seed, lr, steps, patience=None):
    """Train relu(E[x] W1 + b1) W2 U^T by full-batch Adam on N sphere embeddings (A2),
    until 99% of the items are recalled (see fit_memory).  M = None: N classes, f(i) = i;
    M = 32: f(i) = (i M) // N.  Init variance 1/fan_in."""
    rng = np.random.default_rng([seed, d, m, M or 0, N])
    fixed = {"E": rc.embeddings(N, d, rng, "sphere"),
             "U": rc.embeddings(N if M is None else M, d, rng, "sphere")}
    params = {"W1": rng.standard_normal((d, m)) / np.sqrt(d), "b1": np.zeros(m),
              "W2": rng.standard_normal((m, d)) / np.sqrt(m)}
    y = np.arange(N) if M is None else (np.arange(N) * M) // N    # (N,)
    out = fit_memory(rc.mlp_memory_forward, rc.mlp_memory_backward, params, fixed, y, lr, steps,
                     0.99, patience)
    return {"N": N, "first99": out["first99"], "best": out["best"], "steps": out["steps"]}


def run_mlp_one(cfg):
    """Capacity (99% criterion) of one MLP memory of width m = alpha d."""
    d, m, M = cfg["d"], cfg["alpha"] * cfg["d"], cfg["M"]
    trial, memo = memoised(lambda N: mlp_memory_trial(N, d, m, M, cfg["seed"], cfg["lr"],
                                                      cfg["steps"], cfg["patience"]))
    succeeds = lambda N: trial(N)["first99"] is not None          # noqa: E731
    cap = bisect_capacity(succeeds, cfg["lo"], cfg["hi"], cfg["ratio"])
    return {"cap99": cap, "m": m, "md": m * d, "lo_fails": not succeeds(cfg["lo"]),
            "hi_succeeds": succeeds(cfg["hi"]), "trials": [memo[N] for N in sorted(memo)]}


def mlp_config(scale, d, alpha, M, seed):
    """One capacity search, m = alpha d.  full: A2 (lr 0.03, 32768 steps, bracket
    [d, m d], ratio 1.01).  small: 2048 steps, patience 256, ratio 1.04, and the bracket
    [Nref/2, 2 Nref] around the authors' line; tiny: as small with 1024 steps, ratio 1.1."""
    full, md, regime = scale == "full", alpha * d * d, "M=N" if M is None else "M=32"
    ref = theory.mlp_reference_N(md, regime)
    return {"scale": scale, "d": d, "alpha": alpha, "M": M, "regime": regime, "seed": seed,
            "lr": 0.03, "steps": {"tiny": 1024, "small": 2048}.get(scale, 32768),
            "patience": None if full else 256, "ratio": {"tiny": 1.1, "small": 1.04}.get(scale, 1.01),
            "lo": d if full else max(2, int(ref / 2)), "hi": md if full else int(2 * ref) + 1}


def mlp_configs(scale, seed):
    """alpha in {1, 2, 4, 8}, both regimes (M = N classes, M = 32), m d up to a bound."""
    ds, max_md, n_seeds = MLP_GRID[scale]
    out = [mlp_config(scale, d, alpha, M, s) for M in (None, 32) for d in ds for alpha in (1, 2, 4, 8)
           if alpha * d * d <= max_md for s in range(seed, seed + n_seeds)]
    return sorted(out, key=lambda c: -c["alpha"] * c["d"] ** 2)   # biggest first: better packing


@experiment("mlp", "paper A Fig. 1 right / Fig. 6: MLP associative memory capacity",
            [("--dmax", "positive_int", 90, "only the d <= DMAX of the grid")])
def run_mlp(out=RESULTS, scale="small", jobs=1, seed=0, dmax=90):
    cfgs = [c for c in mlp_configs(scale, seed) if c["d"] <= dmax]
    recs = sweep("mlp", cfgs, run_mlp_one, out, jobs,
                 derive=lambda c: mlp_config(c["scale"], c["d"], c["alpha"], c["M"], c["seed"]))
    print_fits("mlp", recs)
    return recs


def mlp_fits(records):
    """Per regime: c of the authors' form (m d = c N ln N for M = N, m d = c N for M = 32), the
    bits per parameter it implies (params = 2 m d), and the log-log slope of N against m d."""
    out = {}
    for regime in ("M=N", "M=32"):
        rs = [r for r in records if r["config"]["regime"] == regime and r["result"]["cap99"] > 1]
        if len(rs) < 2:
            continue
        N = np.array([r["result"]["cap99"] for r in rs], float)
        md = np.array([r["result"]["md"] for r in rs], float)
        x = N * np.log(N) if regime == "M=N" else N
        c = theory.fit_constant(x, md)
        slope = float(np.polyfit(np.log(md), np.log(N), 1)[0])
        out[regime] = {"c": c, "bits_per_param": theory.bits_per_param_mlp(c, regime),
                       "loglog_slope": slope}
    return out


FITS["mlp"] = mlp_fits


def transformer_trial(S, cfg):
    """Train the one-layer transformer on S = R subjects/relations, D answers: fresh batches,
    Adam at each lr of cfg["lrs"] in turn until one succeeds, decayed to 0 over cfg["steps"] by
    a cosine ([ours]: the last percent of accuracy needs a small lr).  Every cfg["eval_every"]
    steps: accuracy on cfg["n_test"] fresh prompts (the paper's measure); once >= 0.99, also
    every one of the S R facts on cfg["prompts_per_fact"] random prompts.  Stops when all of
    those are correct, at cfg["steps"], or ([ours], if set) when the fresh accuracy has not
    gained 0.5 points in cfg["patience"] steps."""
    d, H, dh, m = cfg["d"], cfg["H"], cfg["dh"], cfg["m"]
    out = {"S": S, "facts": S * S, "runs": []}
    for lr in cfg["lrs"]:
        rng = np.random.default_rng([cfg["seed"], d, H, dh, m, S])   # same task for every lr
        task = rc.make_facts(S, S, cfg["D"], rng, T=cfg["T"])
        dt = np.dtype(cfg["dtype"])                                # float32: same math
        fixed = {"E": rc.embeddings(task["vocab"], d, rng).astype(dt),
                 "U": rc.embeddings(task["n_answers"], d, rng).astype(dt)}
        params = {k: v.astype(dt) for k, v in rc.init_transformer(d, H, dh, m, rng).items()}
        state = adam_init(params)
        acc = lambda x, y: rc.accuracy(rc.transformer_forward(params, fixed, x)[0], y)  # noqa: E731
        k = cfg["prompts_per_fact"]
        subj = np.repeat(np.arange(S), S * k)                      # (S R k,) every fact k times
        rel = np.tile(np.repeat(np.arange(S), k), S)
        run = {"lr": lr, "first_fresh99": None, "first_all": None, "fresh_acc": 0.0,
               "exact_acc": None}
        best, best_step = 0.0, 0
        for step in range(cfg["steps"] + 1):
            if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
                run["fresh_acc"] = acc(*rc.sample_facts(task, cfg["n_test"], rng))
                if run["fresh_acc"] > best + 0.005:
                    best_step = step
                best = max(best, run["fresh_acc"])
                if cfg["patience"] and step - best_step >= cfg["patience"] and best < 0.99:
                    break                                          # [ours] no progress: give up
                if run["fresh_acc"] >= 0.99:
                    if run["first_fresh99"] is None:
                        run["first_fresh99"] = step
                    run["exact_acc"] = acc(*rc.sample_facts(task, len(subj), rng, subj, rel))
                    if run["exact_acc"] == 1.0:
                        run["first_all"] = step
                        break
            if step == cfg["steps"]:
                break
            x, y = rc.sample_facts(task, cfg["batch"], rng)       # (B, T), (B,)
            logits, cache = rc.transformer_forward(params, fixed, x)
            _, dlogits = rc.cross_entropy(logits, y)
            lr_t = lr * (0.5 + 0.5 * math.cos(math.pi * step / cfg["steps"]))
            adam_step(params, rc.transformer_backward(dlogits, cache), state, lr_t)
        run["steps"] = step
        if run["first_all"] is None:                               # final exhaustive accuracy
            run["exact_acc"] = acc(*rc.sample_facts(task, len(subj), rng, subj, rel))
        out["runs"].append(run)
        if run["first_fresh99"] is not None:
            break
    out["fresh99"] = any(r["first_fresh99"] is not None for r in out["runs"])
    out["all_facts"] = any(r["first_all"] is not None for r in out["runs"])
    return out


def run_facts_one(cfg):
    """Capacity in facts S^2 of one transformer size: the paper's criterion (>= 99% on fresh
    prompts) and the strict one (every fact on every checked prompt), by bisection on S."""
    trial, memo = memoised(lambda S: transformer_trial(S, cfg))
    S99 = bisect_capacity(lambda S: trial(S)["fresh99"], cfg["lo"], cfg["hi"], 1.0)
    S_all = bisect_capacity(lambda S: trial(S)["all_facts"], cfg["lo"], S99, 1.0)
    P = theory.transformer_params(cfg["d"], cfg["H"], cfg["dh"], cfg["m"])
    return {"params": P, "S_fresh99": S99, "facts_fresh99": S99 * S99, "S_all": S_all,
            "facts_all": S_all * S_all, "lo_fails": not trial(cfg["lo"])["fresh99"],
            "hi_succeeds": trial(cfg["hi"])["fresh99"], "trials": [memo[S] for S in sorted(memo)]}


FACTS_D = {"tiny": [16, 20], "small": [16, 20, 24, 28, 32]}


def facts_configs(scale, seed, dtype="float32"):
    """dh = a d / H, m = b d.  full: the paper's grid, d in {16, 32, 64}, H = 8, all (a, b) in
    {4, 2, 1, 1/2, 1/4}^2 with integer dh, lr 1e-3, 3e-3, 1e-2 in turn, 16384 steps, batch
    1024, S in [2, sqrt(params)].  small: d in FACTS_D, H = 8 (d/4 if 8 does not divide d),
    a = b = 1 (params = 6 d^2: d is what raised capacity at small d), lr 3e-2, 3000 steps,
    batch 256, S in [sqrt(0.07 params), sqrt(0.14 params)].  tiny: d in {16, 20},
    800 steps, batch 128, patience 300, S in [sqrt(0.025 params), sqrt(0.1 params)]."""
    full, tiny, ratios = scale == "full", scale == "tiny", (4, 2, 1, 0.5, 0.25)
    grid = ([(d, a, b) for d in (16, 32, 64) for a in ratios for b in ratios] if full
            else [(d, 1, 1) for d in FACTS_D[scale]])
    out = []
    for d, a, b in grid:
        H = 8 if full or d % 8 == 0 else d // 4
        dh, m = a * d / H, b * d
        if dh != int(dh) or dh < 1 or m != int(m):
            continue
        dh, m = int(dh), int(m)
        P = theory.transformer_params(d, H, dh, m)
        lo, hi = {"full": (2, math.sqrt(P)), "small": (math.sqrt(0.07 * P), math.sqrt(0.14 * P)),
                  "tiny": (math.sqrt(0.025 * P), math.sqrt(0.1 * P))}[scale]
        out.append({"scale": scale, "d": d, "H": H, "dh": dh, "m": m, "a": a, "b": b, "D": 8,
                    "T": 32, "lrs": [1e-3, 3e-3, 1e-2] if full else [3e-2],
                    "steps": {"full": 16384, "small": 3000, "tiny": 800}[scale],
                    "batch": {"full": 1024, "small": 256, "tiny": 128}[scale],
                    "eval_every": 50, "patience": 300 if tiny else None, "n_test": 1024,
                    "prompts_per_fact": 4, "lo": int(lo), "hi": int(math.ceil(hi)), "seed": seed,
                    "dtype": dtype})
    return sorted(out, key=lambda c: -theory.transformer_params(c["d"], c["H"], c["dh"], c["m"]))


@experiment("facts", "paper A Fig. 4 left: facts stored vs parameters, one-layer transformer",
            [("--dmax", "positive_int", 64, "only the d <= DMAX of the grid"),
             ("--dtype", "dtype", "float32", "float32 or float64")])
def run_facts(out=RESULTS, scale="small", jobs=1, seed=0, dmax=64, dtype="float32"):
    cfgs = [c for c in facts_configs(scale, seed, dtype) if c["d"] <= dmax]
    recs = sweep("facts", cfgs, run_facts_one, out, jobs)
    print(facts_table(recs))
    print_fits("facts", recs)
    return recs


def facts_table(records):
    """One row per transformer size: capacities under both criteria and facts per parameter."""
    rows = ["| d | H | dh | m | params | S (fresh 99%) | S (every fact) | facts/param |",
            "|---|---|---|---|---|---|---|---|"]
    for r in sorted(records, key=lambda r: r["result"]["params"]):
        c, x = r["config"], r["result"]
        edge = " (bracket edge)" if x["lo_fails"] or x["hi_succeeds"] else ""
        rows.append(f"| {c['d']} | {c['H']} | {c['dh']} | {c['m']} | {x['params']} | "
                    f"{x['S_fresh99']}{edge} | {x['S_all']}{' (at most)' * strict_bound(x)} | "
                    f"{x['facts_fresh99'] / x['params']:.3f} |")
    return "\n".join(rows)


def strict_bound(x):
    """True when the every-fact criterion failed even at the smallest S tried: S_all is a bound."""
    return x["S_all"] == x["trials"][0]["S"] and not x["trials"][0]["all_facts"]


def facts_fits(records):
    """Facts per parameter k in facts = k params (geometric mean), bits per parameter k log2 D,
    and the log-log slope of facts against params (1 = linear), for both criteria."""
    out = {}
    for key in ("facts_fresh99", "facts_all"):
        pts = [(r["result"]["params"], r["result"][key], r["config"]["D"]) for r in records
               if r["result"][key] > 0]
        if pts:
            P, F = np.array([p[:2] for p in pts], float).T
            k = theory.fit_constant(P, F)
            out[key] = {"facts_per_param": k, "bits_per_param": k * math.log2(pts[0][2]),
                        "loglog_slope": float(np.polyfit(np.log(P), np.log(F), 1)[0])
                        if len(set(P)) > 1 else float("nan")}
    return out


FITS["facts"] = facts_fits


def run_tradeoff_one(cfg):
    """One cell of the heatmap: H heads, MLP width m, one fact table; its best learning rate."""
    t = transformer_trial(cfg["S"], cfg)
    run = max(t["runs"], key=lambda r: r["fresh_acc"])
    return {"attn_params": cfg["d"] * cfg["dh"] * cfg["H"], "mlp_params": cfg["d"] * cfg["m"],
            "facts": t["facts"], "fresh_acc": run["fresh_acc"], "exact_acc": run["exact_acc"],
            "fresh99": t["fresh99"], "all_facts": t["all_facts"], "runs": t["runs"]}


def tradeoff_configs(scale, seed, dtype="float32"):
    """full: the paper's grid, d = 32, dh = 8, S = R = 32, H in {1, 2, 4, ..., 32}, m in {1, 2,
    4, ..., 128}, lr 1e-3, 3e-3, 1e-2, 16384 steps, batch 1024.  small: d = 16, dh = 4, S = R = 8,
    H in {1, 2, 3, 4, 6}, m in {1, 2, 4, 8, 16}, lr 3e-2, 1e-2, 1500 steps, batch 256, patience
    300.  tiny: H in {1, 4}, m in {1, 8}, 400 steps."""
    full, tiny = scale == "full", scale == "tiny"
    d, dh, S = (32, 8, 32) if full else (16, 4, 8)
    Hs = [1, 2, 4, 8, 16, 32] if full else [1, 4] if tiny else [1, 2, 3, 4, 6]
    ms = [1, 2, 4, 8, 16, 32, 64, 128] if full else [1, 8] if tiny else [1, 2, 4, 8, 16]
    out = [{"scale": scale, "d": d, "H": H, "dh": dh, "m": m, "S": S, "D": 8, "T": 32,
            "lrs": [1e-3, 3e-3, 1e-2] if full else [3e-2, 1e-2],
            "steps": {"full": 16384, "small": 1500, "tiny": 400}[scale],
            "batch": 1024 if full else 256, "eval_every": 50, "patience": None if full else 300,
            "n_test": 1024, "prompts_per_fact": 4, "seed": seed, "dtype": dtype}
           for H in Hs for m in ms]
    return sorted(out, key=lambda c: -c["H"] * c["dh"] - c["m"])


@experiment("tradeoff", "paper A Fig. 4 right: attention vs MLP parameters at a fixed number of facts",
            [("--dtype", "dtype", "float32", "float32 or float64")])
def run_tradeoff(out=RESULTS, scale="small", jobs=1, seed=0, dtype="float32"):
    recs = sweep("tradeoff", tradeoff_configs(scale, seed, dtype), run_tradeoff_one, out, jobs)
    print_fits("tradeoff", recs)
    return recs


def tradeoff_frontier(records, key="fresh_acc", threshold=0.99):
    """The frontier read off the measurements: for each attention size, the smallest MLP size
    whose accuracy reaches the threshold (None if no width in the grid does)."""
    res = [r["result"] for r in records]
    return [(a, min((x["mlp_params"] for x in res if x["attn_params"] == a
                     and (x[key] or 0) >= threshold), default=None))
            for a in sorted({x["attn_params"] for x in res})]


def tradeoff_fits(records):
    """[ours] Parameters per fact of each side: the least-squares c_attn, c_mlp of
    attn / c_attn + mlp / c_mlp = facts through the measured frontier (each side stores a
    share of the facts in proportion to its parameters); the authors' frontier gives 4.49, 2.25."""
    facts = records[0]["result"]["facts"]
    front = [(a, m) for a, m in tradeoff_frontier(records) if m is not None]
    out = {"facts": facts, "frontier points": len(front), "monotone": float(all(
        m1 >= m2 for (_, m1), (_, m2) in zip(front, front[1:])))}
    if len(front) >= 2:
        inv = np.linalg.lstsq(np.array(front, float), np.full(len(front), float(facts)), rcond=None)[0]
        out["attn_params_per_fact"], out["mlp_params_per_fact"] = (float(1 / v) for v in inv)
    return {"frontier": out}


FITS["tradeoff"] = tradeoff_fits


# ----------------------------------------------------------------------------- paper B, token retrieval

# Paper B (Vural, Bietti, Soltanolkotabi, Wu, ICLR 2026).  Our concrete model is in REPRODUCE.md
# ("Paper B model") and recall.retrieval_forward.  All losses and gradients are full-batch means
# over the N samples, computed in chunks of samples so that the (N, V) logits are never formed.

def retrieval_grad(params, fixed, tokens, pos, labels, chunk=4096):
    """Mean cross-entropy and its gradient over all N samples, in chunks.  tokens (N, L),
    pos (N,), labels (N,).  The gradient of a mean is the chunk-size-weighted sum of chunk means."""
    N = len(labels)
    loss, grads = 0.0, {k: np.zeros_like(p) for k, p in params.items()}
    for s in range(0, N, chunk):
        e = min(s + chunk, N)
        logits, cache = rc.retrieval_forward(params, fixed, (tokens[s:e], pos[s:e]))   # (B, V)
        l, dlogits = rc.cross_entropy(logits, labels[s:e])
        w = (e - s) / N
        loss += w * l
        for k, g in rc.retrieval_backward(dlogits * w, cache).items():
            grads[k] += g
    return loss, grads


def _zero_params(fixed):
    d, vdim = fixed["E"].shape[1], fixed.get("W_mlp", fixed["E"]).shape[1]   # vdim: m, or d
    return {"WKQ": np.zeros((d, d)), "WV": np.zeros((vdim, d))}


def three_step(fixed, tokens, pos, labels, eta, gamma=None, query_norm=None, chunk=4096):
    """The paper's three full-batch GD steps from zero on the same N samples:
        WV1  = -eta   grad_WV  L(WV=0,   WKQ=0)
        WKQ1 = -gamma grad_WKQ L(WV=WV1, WKQ=0)
        WV2  = WV1 - gamma grad_WV L(WV=WV1, WKQ=WKQ1)
    Returns {"WKQ": WKQ1 (d, d), "WV": WV2 (d, d) or (m, d)}, float64.  Instead of gamma one may
    give query_norm = q: gamma is then chosen so that the learned query w = WKQ1 z_eos has norm
    q (WKQ1 is linear in gamma); as eta -> 0 only q matters (see three_step_limit)."""
    if (gamma is None) == (query_norm is None):
        raise ValueError("give exactly one of gamma and query_norm")
    p0 = _zero_params(fixed)  # exercise 7
    _, g0 = retrieval_grad(p0, fixed, tokens, pos, labels, chunk)
    WV1 = -eta * g0["WV"]
    _, g1 = retrieval_grad({"WKQ": p0["WKQ"], "WV": WV1}, fixed, tokens, pos, labels, chunk)
    if gamma is None:
        gamma = query_norm / np.linalg.norm(g1["WKQ"] @ fixed["z_eos"])
    WKQ1 = -gamma * g1["WKQ"]
    _, g2 = retrieval_grad({"WKQ": WKQ1, "WV": WV1}, fixed, tokens, pos, labels, chunk)
    return {"WKQ": WKQ1, "WV": WV1 - gamma * g2["WV"]}


def retrieval_pool(fixed, tokens, pos, w):
    """Attention a (N, L), pooled rows phi and features g of recall.retrieval_forward, via the
    (N, V) attention mass per vocabulary entry C: phi = C E + a_pos z_trig (one BLAS product);
    with the MLP g = relu(phi W_mlp) - mlp_centre (0 unless centred)."""
    E, z, W = fixed["E"], fixed["z_trig"], fixed.get("W_mlp")
    (N, L), V = tokens.shape, len(E)
    rows = np.arange(N)
    s = (E @ w)[tokens]
    s[rows, pos] += z @ w
    a = rc.softmax(s, axis=1)
    C = np.bincount((rows[:, None] * V + tokens).ravel(), a.ravel(), N * V).reshape(N, V)
    phi = C @ E + np.outer(a[rows, pos], z)
    return a, phi, (phi if W is None else np.maximum(phi @ W, 0.0) - fixed.get("mlp_centre", 0.0))


def three_step_limit(fixed, tokens, pos, labels, query_norm):
    """three_step as eta -> 0 (the same argmax, tested), without the (N, V) softmaxes.  At
    WV = O(eta) the softmax is 1/V, so dZ = -R/N (rows r_n = u_{y_n} - u_bar): WV1 = eta g0^T R/N;
    step 2 back-propagates dg = -R WV1^T / (eta N) to the query as recall.retrieval_backward
    does, w = -q grad_w / |grad_w|; WV2 is proportional to g1^T R (g0, g1: features at steps 1, 3)."""
    E, z, W = fixed["E"], fixed["z_trig"], fixed.get("W_mlp")
    N, L = tokens.shape
    rows = np.arange(N)
    R = fixed["U"][labels] - fixed["U"].mean(0)                      # (N, d)
    a, phi, g0 = retrieval_pool(fixed, tokens, pos, np.zeros(E.shape[1]))
    dphi = -R @ (g0.T @ R).T / N ** 2                                # dg = dZ WV1^T / eta
    if W is not None:
        dphi = (dphi * (phi @ W > 0)) @ W.T
    da = (dphi @ E.T)[rows[:, None], tokens]                         # e_{x_i} . dphi
    da[rows, pos] += dphi @ z
    ds = a * (da - (a * da).sum(1, keepdims=True))
    dw = E.T @ np.bincount(tokens.ravel(), ds.ravel(), len(E)) + ds[rows, pos].sum() * z
    w = -query_norm * dw / np.linalg.norm(dw)
    g1 = retrieval_pool(fixed, tokens, pos, w)[2]
    return {"WKQ": np.outer(w, fixed["z_eos"]) / (fixed["z_eos"] @ fixed["z_eos"]),
            "WV": g1.T @ R / N}


def crn_sequences(task, N, L, Lmax, rng):
    """The one sampler of paired draws: N sequences (tokens (N, L), pos, labels) such that one rng
    state gives, at every L <= Lmax, the same informative tokens, labels, positions pos/L and
    leading distractors; the labels do not depend on d or m either (perm is drawn apart).  The
    first N' rows of a call are the training set of size N' (nested in N)."""
    if Lmax < L:
        raise ValueError(f"Lmax = {Lmax} is below L = {L}: the paired draws need Lmax >= L")
    x, u = rng.integers(0, task["V"], N), rng.random(N)
    tokens = rng.integers(0, task["V"], (N, Lmax))[:, :L].copy()
    pos = (u * L).astype(int)
    tokens[np.arange(N), pos] = x
    return tokens, pos, task["perm"][x]


def gradient_statistic(fixed, tokens, labels):
    """grad_WV of the mean loss at WV = WKQ = 0 (where grad_WKQ = 0), in closed form: attention
    is uniform and the softmax 1/V, so with C[x, y] = #(token x in a sequence labelled y),
        grad_WV = -(1/(N L)) E~^T C U_c,   E~ = E + 1 z_trig^T / L,  U_c = U - u_bar."""
    E, U = fixed["E"], fixed["U"]
    (N, L), V = tokens.shape, len(E)
    C = np.bincount((tokens * V + labels[:, None]).ravel(), minlength=V * V).reshape(V, V)
    return -((E + fixed["z_trig"] / L).T @ C @ (U - U.mean(0))) / (N * L)


def gradinfo_decoder(fixed, G, L):
    """[ours] Each token's label (V,) from G alone: argmax_v C_hat[x, v], C_hat = (E~^T)^+ (-G) U_c^+
    the minimum-norm solution of E~^T C U_c = -N L G.  For d > V it reads C itself."""
    E, U = fixed["E"], fixed["U"]
    C_hat = np.linalg.pinv((E + fixed["z_trig"] / L).T) @ -G @ np.linalg.pinv(U - U.mean(0))
    return C_hat.argmax(1)


def gaussian_fresh_accuracy(logits, labels):
    """[ours] Accuracy if each test row's wrong logits were Gaussian around the frozen bias b (the
    per-label mean over rows) plus a row shift mu, with the row's own sd s: mean over rows of
    prod_{v != y} Phi((l_y - mu - b_v) / s).  Its excess over the argmax accuracy: the tails' cost."""
    rows = np.arange(len(labels))
    W = logits - logits.mean(1, keepdims=True)
    right = W[rows, labels].copy()                             # the correct logits
    W[rows, labels] = np.nan                                   # W: the wrong ones
    b = np.nanmean(W, 0)
    mu = np.nanmean(W - b, 1, keepdims=True)
    s = np.sqrt(np.nanmean((W - b - mu) ** 2, 1, keepdims=True))
    lp = np.log(theory._Phi((right[:, None] - mu - b) / s) + 1e-300)   # (n_test, V)
    return float(np.exp(np.where(np.isnan(W), 0.0, lp).sum(1)).mean())


def learner_accuracy(cfg, fixed, train_set, test):
    """Train cfg["method"] on train_set: "three_step" (eta -> 0, query norm q), "adam" (steps, lr),
    "gradinfo" (gradinfo_decoder on G) or "gauss_fresh" (three steps, gaussian_fresh_accuracy).
    Returns the test accuracy and the mean attention on the informative position (nan: gradinfo)."""
    tokens, pos, labels = test
    rows = np.arange(len(pos))
    if cfg["method"] == "gradinfo":
        decoded = gradinfo_decoder(fixed, gradient_statistic(fixed, train_set[0], train_set[2]),
                                   cfg["L"])
        return float(np.mean(decoded[tokens[rows, pos]] == labels)), float("nan")
    params = (retrieval_adam(fixed, *train_set, cfg["steps"], cfg["lr"]) if cfg["method"] == "adam"
              else three_step_limit(fixed, *train_set, cfg["q"]))
    a, _, g = retrieval_pool(fixed, tokens, pos, params["WKQ"] @ fixed["z_eos"])
    logits = g @ params["WV"] @ fixed["U"].T                              # (n_test, V)
    score = (gaussian_fresh_accuracy(logits, labels) if cfg["method"] == "gauss_fresh"
             else float(np.mean(logits.argmax(1) == labels)))
    return score, float(a[rows, pos].mean())


def run_draws_one(cfg):
    """The one runner of paper B: accuracy and attention of one learner for cfg["draws"]
    independent draws at each N of cfg["Ns"] (nested training prefixes).  Draw k takes E, U,
    z_trig, z_eos (and W_mlp) from rng [seed, k, 0], the permutation and sequences from
    [seed, k, 1] (crn_sequences), so records differing only in L, q, d, m, kind or method are
    paired.  centred: the MLP features minus mean_x relu((e_x + z_trig) W_mlp)."""
    known = ("three_step", "gauss_fresh", "gradinfo") + (("adam",) if "steps" in cfg else ())
    if cfg["draws"] < 2 or cfg["n_test"] < 1 or min(cfg["Ns"], default=0) < 1 or cfg["method"] not in known:
        got = ", ".join(f"{k}={cfg[k]}" for k in ("draws", "n_test", "Ns", "method"))
        raise ValueError(f"need draws >= 2, n_test >= 1, every N >= 1, a method in {known}; got {got}")
    acc, att, z2 = [], [], []
    for k in range(cfg["draws"]):
        rng = np.random.default_rng([cfg["seed"], k, 0])
        task = rc.make_retrieval(cfg["V"], cfg["d"], cfg["L"], rng, m=cfg.get("m"),
                                 kind=cfg.get("kind", "gaussian"))
        fixed, rng = rc.retrieval_fixed(task), np.random.default_rng([cfg["seed"], k, 1])
        if cfg.get("centred") and cfg.get("m"):
            fixed["mlp_centre"] = np.maximum((fixed["E"] + fixed["z_trig"]) @ fixed["W_mlp"], 0).mean(0)
        task["perm"] = rng.permutation(cfg["V"])
        train_set, test = (crn_sequences(task, n, cfg["L"], cfg.get("Lmax", cfg["L"]), rng)
                           for n in (max(cfg["Ns"]), cfg["n_test"]))
        runs = [learner_accuracy(cfg, fixed, [x[:N] for x in train_set], test) for N in cfg["Ns"]]
        acc.append([a for a, _ in runs])
        att.append([p for _, p in runs])
        z2.append(float(fixed["z_trig"] @ fixed["z_trig"]))
    return {"accuracy": acc, "attention": att, "z2": z2}


def retrieval_adam(fixed, tokens, pos, labels, steps, lr, chunk=4096):
    """Longer training of the same model from zero: full-batch Adam on the same N samples.
    At zero the WKQ gradient vanishes (WV = 0), so WV moves first, then the attention."""
    params = _zero_params(fixed)
    state = adam_init(params)
    for _ in range(steps):
        _, grads = retrieval_grad(params, fixed, tokens, pos, labels, chunk)
        adam_step(params, grads, state, lr)
    return params


def _geom(lo, hi, n):
    return [int(round(x)) for x in np.geomspace(lo, hi, n)]


def _draws_cfg(V, d, L, Ns, seed, draws, q=10.0, m=None, kind="gaussian", method="three_step",
               n_test=2000, Lmax=None, **extra):
    cfg = {"V": V, "d": d, "L": L, "Ns": [int(N) for N in Ns], "seed": seed, "draws": draws,
           "q": q, "kind": kind, "method": method, "n_test": n_test, "Lmax": Lmax or L, **extra}
    return cfg if m is None else dict(cfg, m=m)


def accuracies(records, **match):
    """Ns and the accuracies (draws, len(Ns)) of the one record whose config matches."""
    r = next(r for r in records if all(r["config"].get(k) == v for k, v in match.items()))
    return np.array(r["config"]["Ns"]), np.array(r["result"]["accuracy"])


DRAWS = {"tiny": 3, "small": 20, "full": 50}     # independent draws per plotted point

# The agreement table: predicted versus measured accuracy of the three-step model on a fixed
# grid spanning accuracies about 0.1 to 0.99 (V = 64, 128, 256; d, L, N, q varied; two MLP points).
AGREE_GRID = [  # (V, d, L, N, q, m)
    (128, 32, 8, 4000, 10, None), (128, 32, 8, 16000, 10, None), (128, 64, 8, 2000, 10, None),
    (128, 64, 8, 8000, 10, None), (128, 128, 8, 1000, 10, None), (128, 128, 8, 4000, 10, None),
    (128, 256, 8, 8000, 10, None), (128, 64, 32, 4000, 4, None), (128, 64, 32, 4000, 6, None),
    (128, 64, 8, 4000, 2, None), (128, 64, 8, 4000, 3, None), (128, 128, 64, 4000, 5, None),
    (64, 64, 8, 1000, 10, None), (256, 128, 8, 8000, 10, None),
    (128, 64, 8, 8000, 10, 64), (128, 64, 8, 8000, 10, 512),
    (128, 256, 8, 16000, 10, None), (64, 128, 8, 8000, 10, None), (128, 128, 16, 8000, 5, None),
    (64, 64, 16, 4000, 4, None),
]


@experiment("b_agree", "paper B: predicted vs measured three-step accuracy, mean and sd over draws")
def run_b_agree(out=RESULTS, scale="small", jobs=1, seed=0):
    """3 x DRAWS draws per point: an sd from n draws is uncertain by about 1/sqrt(2 (n - 1)) of
    it (9% at 60).  "theory" (a hash of theory.py): an edited theory recomputes the records."""
    grid = AGREE_GRID if scale != "tiny" else [(16, 16, 4, 200, 10, None), (16, 16, 4, 200, 10, 8)]
    version = hashlib.sha1(open(theory.__file__, "rb").read()).hexdigest()[:8]
    cfgs = [_draws_cfg(V, d, L, [N], seed, 3 * DRAWS[scale], q=q, m=m, theory=version)
            for (V, d, L, N, q, m) in grid]
    recs = sweep("b_agree", cfgs, run_agree_one, out, jobs)
    print(agreement_table(recs))
    return recs


def run_agree_one(cfg, mc=8):
    """run_draws_one, and for each draw k at its |z_trig|^2 the prediction with the frozen label
    bias (mean, sd over mc bias vectors from rng [seed, k]: mc x draws distinct ones) and the
    fresh-noise formula's mean; and the same draws scored with Gaussian fresh noise."""
    if cfg["method"] != "three_step" or cfg["kind"] != "gaussian":
        raise ValueError("b_agree predicts three steps on Gaussian embeddings: --set method or kind does not apply")
    res = dict(run_draws_one(cfg), gauss=run_draws_one(dict(cfg, method="gauss_fresh"))["accuracy"])
    args = (cfg["V"], cfg["Ns"][0], cfg["d"], cfg["L"], cfg["q"], cfg.get("m"))
    res["predicted"] = [theory.retrieval_accuracy(*args, z2=z, frozen=mc, n_test=cfg["n_test"],
                                                  seed=[cfg["seed"], k]) for k, z in enumerate(res["z2"])]
    res["fresh"] = [theory.retrieval_accuracy(*args, z2=z) for z in res["z2"]]
    return res


def agreement_rows(records):
    """Per point: measured mean and sd over the draws; the draws' predictions pooled (sd^2 = mean
    within-draw variance ["sd_b"^2] + variance of the draws' means: |z_trig|^2 and Monte Carlo)."""
    rows = []
    for r in records:
        c, res = r["config"], r["result"]
        acc, pr = np.array(res["accuracy"])[:, 0], np.array(res["predicted"])
        rows.append(dict(key=(c["V"], c["Ns"][0], c["d"], c["L"], c["q"], c.get("m")),
                         att=np.mean(res["attention"]), meas=acc.mean(), draws=len(acc),
                         meas_sd=acc.std(ddof=1), pred=pr[:, 0].mean(), sd_b=np.sqrt(np.mean(pr[:, 1] ** 2)),
                         pred_sd=np.sqrt(np.mean(pr[:, 1] ** 2) + pr[:, 0].var()),
                         fresh=np.mean(res["fresh"]), gauss=np.mean(res["gauss"])))
    return sorted(rows, key=lambda w: [v or 0 for v in w["key"]])


def agreement_table(records):
    """Markdown table of agreement_rows and the targets: mean |predicted - measured|, mean signed
    error, how many predicted sds lie within 30% of the measured one; and the same draws scored
    with Gaussian fresh noise, as the theory assumes it (gaussian_fresh_accuracy)."""
    rows = agreement_rows(records)
    lines = ["| V | N | d | L | q | m | attention | measured | predicted (frozen bias) | diff | "
             "sd without z2 spread | fresh-noise formula | measured, Gaussian fresh noise |", "|" + "---|" * 13]
    for w in rows:
        lines.append("| " + " | ".join(f"{v:g}" if v else "-" for v in w["key"]) + f" | {w['att']:.2f} | "
                     f"{w['meas']:.3f} ± {w['meas_sd']:.3f} | {w['pred']:.3f} ± {w['pred_sd']:.3f} | "
                     f"{round(w['pred'], 3) - round(w['meas'], 3):+.3f} | {w['sd_b']:.3f} | {w['fresh']:.3f} | {w['gauss']:.3f} |")
    diff, fresh, gauss = (np.array([w[a] - w[b] for w in rows]) for a, b in (("pred", "meas"), ("fresh", "meas"), ("pred", "gauss")))
    ratio = np.array([w["pred_sd"] / max(w["meas_sd"], 1e-12) for w in rows])
    lines.append(f"\n{len(rows)} points, {rows[0]['draws']} draws each: mean |predicted - measured| = "
                 f"{np.abs(diff).mean():.3f}, mean signed {diff.mean():+.3f} (fresh-noise formula: "
                 f"{np.abs(fresh).mean():.3f}, {fresh.mean():+.3f}); predicted / measured sd: median "
                 f"{np.median(ratio):.2f}, {int((abs(ratio - 1) <= 0.3).sum())} of {len(rows)} within 30%; "
                 f"predicted - measured with Gaussian fresh noise: {np.abs(gauss).mean():.3f}, {gauss.mean():+.3f}")
    return "\n".join(lines)


# b_phase: phase diagram over (N, d) at three L, fixed query norm q.

@experiment("b_phase", "paper B: accuracy over (N, d) at three L, with the predicted contour",
            [("--q", "positive_float", 5.0, "query norm |WKQ z_eos| (attention sharpness)")])
def run_b_phase(out=RESULTS, scale="small", jobs=1, seed=0, q=5.0):
    V, Ls, ds, Ns = {"tiny": (16, [2, 4, 8], [8, 16], [100, 200]),
                     "small": (128, [4, 16, 64], [32, 64, 128], _geom(500, 16000, 5)),
                     "full": (256, [4, 16, 64], [16, 32, 64, 128, 256], _geom(500, 64000, 8))}[scale]
    cfgs = [_draws_cfg(V, d, L, Ns, seed, DRAWS[scale], q=q) for L in Ls for d in ds]
    return sweep("b_phase", cfgs, run_draws_one, out, jobs)


# b_nstar: N* versus d and versus V, read off accuracy-versus-N curves.

def crossing(xs, ys, tau):
    """First x where y reaches tau, interpolated in log x; None if never."""
    if len(ys) and ys[0] >= tau:                    # already there at the first x: an upper bound
        return float(xs[0])
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if y0 < tau <= y1:
            t = (tau - y0) / (y1 - y0)
            return float(np.exp(np.log(x0) + t * (np.log(x1) - np.log(x0))))


def nstar_points(records, over, **match):
    """N* of the records matching `match` (one learner), against config[over]: arrays x, N*, band
    low, band high, theory.critical_N.  N* is where the mean accuracy over draws reaches tau on the
    nested-N curve (interpolated in log N); the band is where mean + sd and mean - sd reach it,
    i.e. where a single run's N* falls (nan: never within the N grid)."""
    rows = []
    for r in sorted((r for r in records if all(r["config"].get(k) == v for k, v in match.items())),
                    key=lambda r: r["config"][over]):
        c, A = r["config"], np.array(r["result"]["accuracy"])
        mean, sd = A.mean(0), A.std(0, ddof=1)
        rows.append([c[over]] + [crossing(c["Ns"], y, c["tau"]) for y in (mean, mean + sd, mean - sd)]
                    + [theory.critical_N(c["V"], c["d"], c["L"], c["q"], c["tau"])])
    return [np.array([np.nan if v is None or not math.isfinite(v) else v for v in col], float)
            for col in zip(*rows)] if rows else [np.array([])] * 5        # e.g. --set d= moved it


LEARNERS = {"three_step": "three steps", "gradinfo": "gradient information", "adam": "Adam"}


def nstar_table(records, over, methods=("three_step",), **match):
    """Markdown table of N* (band) of each learner against `over` at fixed `match`, and
    theory.critical_N; then per learner the local exponents d log N* / d log x between
    neighbours and the fitted log-log slope (predicted: over the x where three steps has N*)."""
    f = lambda v: "-" if np.isnan(v) else f"{v:.0f}"
    pts = {m: nstar_points(records, over, method=m, **match) for m in methods}
    xs, pred = next(iter(pts.values()))[0], next(iter(pts.values()))[4]
    lines = [f"\nN* against {over} (" + ", ".join(f"{k} = {v}" for k, v in match.items()) + ")",
             f"| {over} | " + " | ".join(f"{LEARNERS[m]} | band" for m in methods)
             + " | predicted (three steps) |", "|" + "---|" * (2 * len(methods) + 2)]
    for i, x in enumerate(xs):
        cells = []
        for x_m, n, lo, hi, _ in pts.values():
            j = list(x_m).index(x) if x in x_m else None
            cells += ["", ""] if j is None else [f(n[j]), f"{f(lo[j])} to {f(hi[j])}"]
        lines.append(f"| {x:g} | " + " | ".join(cells) + f" | {f(pred[i])} |")
    ex = lambda x, y: " ".join(f"{v:+.2f}" if np.isfinite(v) else "-"
                               for v in np.diff(np.log(y)) / np.diff(np.log(x)))
    for m, (x, n, *_, p) in pts.items():
        lines.append(f"{LEARNERS[m]}: local exponents {ex(x, n)}; fitted slope "
                     f"{theory.loglog_slope(x, n):+.2f}")
    if "three_step" in pts:
        x, n, *_, p = pts["three_step"]
        lines.append(f"predicted: local exponents {ex(x, p)}; fitted slope "
                     f"{theory.loglog_slope(x, np.where(np.isnan(n), np.nan, p)):+.2f}")
    return "\n".join(lines)


@experiment("b_nstar", "paper B: critical N* versus d and versus V (mean curves over draws)",
            [("--tau", "positive_float", 0.5, "target accuracy"),
             ("--q", "positive_float", 10.0, "query norm (attention sharpness)")])
def run_b_nstar(out=RESULTS, scale="small", jobs=1, seed=0, tau=0.5, q=10.0):
    """Accuracy on N = 4V, 8V, ..., 128V (nested, DRAWS draws) at each d (V = V0) and each V
    (d = d0); N* is read off the mean curve by nstar_points.  The grid does not depend on the
    prediction, so the measurement cannot snap to it."""
    L, V0, d0, ds, Vs = {"tiny": (4, 16, 32, [16, 32], [8, 16]),
                         "small": (8, 128, 128, [64, 128, 256], [64, 128, 256]),
                         "full": (8, 256, 256, [96, 128, 192, 256, 512], [64, 128, 256, 512, 1024])}[scale]
    n_test = {"tiny": 200, "small": 1000, "full": 4000}[scale]
    points = [(V0, d) for d in ds] + [(V, d0) for V in Vs if (V, d0) != (V0, d0) or d0 not in ds]
    cfgs = [_draws_cfg(V, d, L, [V * 2 ** k for k in range(2, 8)], seed, DRAWS[scale], q=q,
                       n_test=n_test, tau=tau) for V, d in points]
    recs = sweep("b_nstar", cfgs, run_draws_one, out, jobs)
    print(nstar_table(recs, "d", V=V0) + "\n" + nstar_table(recs, "V", d=d0))
    return recs


# b_embed: random versus orthogonal embeddings.

@experiment("b_embed", "paper B: one-hot (d = V + 2) versus random embeddings (d = V/4, V/2, V + 2)",
            [("--q", "positive_float", 10.0, "query norm (attention sharpness)")])
def run_b_embed(out=RESULTS, scale="small", jobs=1, seed=0, q=10.0):
    V, L = {"tiny": (8, 4), "small": (64, 8), "full": (256, 16)}[scale]
    Ns = _geom(V, 64 * V, {"tiny": 2, "small": 7, "full": 10}[scale])
    cfgs = [_draws_cfg(V, V + 2, L, Ns, seed, DRAWS[scale], q=q, kind="onehot")]
    cfgs += [_draws_cfg(V, d, L, Ns, seed, DRAWS[scale], q=q) for d in (V // 4, V // 2, V + 2)]
    recs = sweep("b_embed", cfgs, run_draws_one, out, jobs)
    one = next(r for r in recs if r["config"]["kind"] == "onehot")       # random minus one-hot
    print(paired_table(one, [r for r in recs if r is not one], "random d={d}"))
    return recs


def paired_table(base, records, name):
    """Per record and N: attention, accuracy mean +- sd over draws and the paired difference
    record - base (mean +- sd over draws, standard error); the records share their draws."""
    lines = ["| setting | N | attention | accuracy | paired difference | its standard error |",
             "|---|---|---|---|---|---|"]
    b = np.array(base["result"]["accuracy"])
    for r in records:
        acc = np.array(r["result"]["accuracy"])
        for j, N in enumerate(r["config"]["Ns"]):
            x = acc[:, j] - b[:, j]
            lines.append(f"| {name.format(**{'m': '-', **r['config']})} | {N} | "
                         f"{np.mean(np.array(r['result']['attention'])[:, j]):.3f} | "
                         f"{acc[:, j].mean():.3f} ± {acc[:, j].std(ddof=1):.3f} | {x.mean():+.3f} ± "
                         f"{x.std(ddof=1):.3f} | {x.std(ddof=1) / np.sqrt(len(x)):.3f} |")
    return "\n".join(lines)


# b_mlp: attention-only versus attention + fixed random MLP of width m, at small d.

@experiment("b_mlp", "paper B: attention only vs + fixed MLP, plain and centred, at small d",
            [("--q", "positive_float", 10.0, "query norm (attention sharpness)")])
def run_b_mlp(out=RESULTS, scale="small", jobs=1, seed=0, q=10.0):
    """Per d: attention only, + fixed random ReLU MLP of width m, + the same MLP centred, on the
    same draws (embeddings, samples, test set); paired differences to attention only."""
    V, L, N, ds, ms = {"tiny": (16, 4, 200, [8], [8, 32]),
                       "small": (256, 4, 8000, [12, 16, 24], [32, 128, 512]),
                       "full": (256, 8, 32000, [12, 16, 24, 32], [16, 64, 256, 1024, 4096])}[scale]
    arms = [(None, False)] + [(m, centred) for m in ms for centred in (False, True)]
    cfgs = [_draws_cfg(V, d, L, [N], seed, DRAWS[scale], q=q, m=m, n_test=1000, centred=centred)
            for d in ds for m, centred in arms]
    recs = sweep("b_mlp", cfgs, run_draws_one, out, jobs)
    for d in ds:
        rs = sorted((r for r in recs if r["config"]["d"] == d),
                    key=lambda r: (r["config"].get("m", 0), r["config"]["centred"]))
        print(paired_table(rs[0], rs, "d={d}, m={m}, centred={centred}"))   # rs[0]: no MLP
        print(f"predicted (no centred variant): attention only {theory.retrieval_accuracy(V, N, d, L, q):.3f}, "
              + ", ".join(f"+ MLP m={m} {theory.retrieval_accuracy(V, N, d, L, q, m):.3f}" for m in ms) + "\n")
    return recs


# b_length: where L enters.

@experiment("b_length", "paper B: accuracy and attention on the informative token vs L",
            [("--q", "positive_float", 5.0, "query norm (attention sharpness)")])
def run_b_length(out=RESULTS, scale="small", jobs=1, seed=0, q=5.0):
    """Every L shares the draw's embeddings, permutation, informative tokens, their relative
    positions and leading distractors (crn_sequences), so differences across L are paired."""
    V, d, N = {"tiny": (16, 16, 200), "small": (128, 64, 6000), "full": (256, 128, 32000)}[scale]
    Ls = {"tiny": [2, 8], "small": [2 ** k for k in range(1, 9)], "full": [2 ** k for k in range(1, 11)]}[scale]
    cfgs = [_draws_cfg(V, d, L, [N], seed, DRAWS[scale], q=qq, Lmax=max(Ls)) for qq in (q, 2 * q)
            for L in Ls]
    recs = sweep("b_length", cfgs, run_draws_one, out, jobs)
    for qq in (q, 2 * q):                                  # each L minus the shortest, per q
        rs = sorted([r for r in recs if r["config"]["q"] == qq], key=lambda r: r["config"]["L"])
        print(paired_table(rs[0], rs, "q={q:g}, L={L}"))
    return recs


# N, d and L together, and the gradient-information learner, on the same draws.

def collapse_points(records):
    """Per (d, L, N) of three steps: theory.retrieval_snr, the accuracy's mean and sd over draws;
    and the rms distance of the means from the one-token curve theory.snr_accuracy."""
    records = [r for r in records if r["config"]["method"] == "three_step"]
    c0, pts = records[0]["config"], []
    for d, L in sorted({(r["config"]["d"], r["config"]["L"]) for r in records}):
        Ns, A = accuracies(records, method="three_step", d=d, L=L)
        pts += [(theory.retrieval_snr(c0["V"], int(N), d, L, c0["q"]), a, s, d, L, int(N))
                for N, a, s in zip(Ns, A.mean(0), A.std(0, ddof=1))]
    rms = math.sqrt(np.mean([(a - theory.snr_accuracy(c0["V"], x)) ** 2 for x, a, *_ in pts]))
    return pts, rms


SCALING = {"tiny": (16, {16: 128}, [2, 4], 4, 16, [8]),  # V, {d: largest N}, Ls, L0, d0, more d
           "small": (64, {64: 4096, 128: 2048}, [2, 4, 8, 16, 32, 64], 8, 64, [16, 32]),
           "full": (128, {128: 32768, 256: 16384}, [2, 4, 8, 16, 32, 64, 128, 256], 8, 128, [32, 64])}


@experiment("b_scaling", "paper B: N* vs L and d, accuracy vs the formula's SNR, the gradient-information learner",
            [("--draws", "count", None, "independent draws per point, at least 2 (default: 2 at tiny scale, "
              "else 20)")])
def run_b_scaling(out=RESULTS, scale="small", jobs=1, seed=0, draws=None, tau=0.3, q=5.0):
    """Three steps and gradient information over nmax x Ls and `more` d at L0, on N = 16, 32, ...;
    Adam (150 full-batch steps, lr 0.02, N <= 4V, 5 draws: its spread is small) at every d at L0
    and at d0 for the shortest and second longest L."""
    V, nmax, Ls, L0, d0, more = SCALING[scale]
    draws, steps = draws or (2 if scale == "tiny" else DRAWS[scale]), 20 if scale == "tiny" else 150
    Ns = lambda top: [16 * 2 ** k for k in range(12) if 16 * 2 ** k <= top]
    grid = [(d, L, draws, m, nmax.get(d, 4096)) for d, L in [(d, L) for d in nmax for L in Ls]
            + [(d, L0) for d in more] for m in ("three_step", "gradinfo")]
    grid += [(d, L, min(draws, 5), "adam", 4 * V) for d, L in [(d, L0) for d in list(nmax) + more]
             + [(d0, L) for L in sorted({Ls[0], Ls[-2]} - {L0})]]
    cfgs = [_draws_cfg(V, d, L, Ns(top), seed, n, q=q, method=m, n_test=1000, tau=tau, L0=L0,
                       d0=d0, steps=steps, lr=0.02) for d, L, n, m, top in grid]
    recs = sweep("b_scaling", cfgs, run_draws_one, out, jobs)
    pts, rms = collapse_points(recs)
    print("".join(nstar_table(recs, "L", d=d) for d in nmax)
          + f"\n\naccuracy against E_Z Phi(snr + Z)^(V-1): rms distance {rms:.3f} over "
          f"{len(pts)} (N, d, L) points; mean sd of one run {np.mean([p[2] for p in pts]):.3f}"
          + nstar_table(recs, "d", LEARNERS, L=L0) + nstar_table(recs, "L", LEARNERS, d=d0)
          + f"\ncoverage bound (any learner): N* = {math.log(1 - tau) / math.log(1 - 1 / V) - 1:.0f}")
    return recs


# ----------------------------------------------------------------------------- command line

def _checked(convert, ok, what):
    """An argparse type: convert the text, then require ok(value); else a one-line error."""
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value
    return parse


positive_int = _checked(int, lambda v: v >= 1, "a positive integer")
nonneg_int = _checked(int, lambda v: v >= 0, "an integer >= 0")
count = _checked(int, lambda v: v >= 2, "an integer >= 2 (a spread needs two draws)")
positive_float = _checked(float, lambda v: v > 0 and math.isfinite(v), "a positive number")


dtype_name = _checked(str, lambda v: v in ("float64", "float32"), "float64 or float32")
key_value = _checked(lambda t: tuple(t.split("=", 1)), lambda v: len(v) == 2 and v[0], "KEY=VALUE")


def parse_value(text, examples):
    """A --set value, read as JSON (a plain word as text, none as null), of a type the field
    has in the configs (where it is a float or None, any number).  Else ValueError."""
    try:
        value = json.loads({"none": "null"}.get(text.lower(), text))
    except ValueError:
        value = text
    kinds = {type(x) for x in examples} | ({int, float} if None in examples else set())
    value = float(value) if type(value) is int and float in kinds and int not in kinds else value
    if type(value) not in kinds:
        raise ValueError(f"expected a value like {examples[0]!r}")
    return value


_TYPES = {"positive_int": positive_int, "nonneg_int": nonneg_int, "count": count,
          "positive_float": positive_float, "dtype": dtype_name}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        sys.exit(2)


def build_parser():
    parser = _Parser(prog="train.py", description="Run one experiment; results go to "
                     "OUT/<experiment>/*.json, figures are drawn by plots.py.")
    sub = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name, (fn, help, options) in EXPERIMENTS.items():
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--scale", choices=["tiny", "small", "full"], default="small",
                       help="tiny: a demo in seconds; small: laptop defaults (seconds to minutes); "
                            "full: the paper's grid where known, else larger grids (hours or more)")
        p.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                       help="override a field in every configuration, e.g. --set d=24 (a grid "
                            "over it collapses to that value); repeatable; --list shows the fields")
        p.add_argument("--jobs", type=positive_int, default=1,
                       help="configurations run in parallel (processes); results do not depend on it")
        p.add_argument("--seed", type=nonneg_int, default=0, help="base random seed")
        p.add_argument("--out", default=RESULTS, help="results folder (default: results)")
        p.add_argument("--list", action="store_true", help="print the configurations and exit")
        p.add_argument("--only", type=nonneg_int, default=None, metavar="I",
                       help="run only configuration I (e.g. one per task of a job array)")
        for flag, typ, default, h in options:
            p.add_argument(flag, type=_TYPES[typ], default=default,
                           help=h if default is None else f"{h} (default: {default})")
    return parser


def main(argv=None):
    parser = build_parser()
    args = vars(parser.parse_args(argv))
    name, sets = args.pop("experiment"), dict(args.pop("set"))
    listing, SELECT["only"] = args.pop("list"), args.pop("only")
    fn = EXPERIMENTS[name][0]
    if sets:          # a dry run (nothing runs, nothing is printed) collects the config fields
        SELECT["list"] = True
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exception):
            fn(**args)
        for key, text in sets.items():
            try:
                SELECT["set"][key] = parse_value(text, SELECT["fields"][key])
            except (KeyError, ValueError) as e:
                why = "unknown key" if isinstance(e, KeyError) else e
                parser.error(f"--set {key}={text}: {why}; the configurations of {name} have the "
                             f"keys {', '.join(sorted(SELECT['fields']))}")
    SELECT["list"] = listing
    t0, shown = time.time(), io.StringIO()
    try:
        with contextlib.redirect_stdout(shown if listing else sys.stdout):
            try:
                records = fn(**args)
            except Exception:            # --list: the runner's tables fail on no records
                if not listing:
                    raise
        print("".join(line for line in shown.getvalue().splitlines(True) if "\t" in line), end="")
    except ValueError as e:                        # a bad combination of option values
        parser.error(str(e))
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{name}: interrupted; finished runs are saved in {args['out']}/{name}/"
                         ", rerun to continue\n")
        sys.exit(130)
    if not listing:
        print(f"{name}: {len(records)} record{'s' * (len(records) != 1)} in {args['out']}/{name}/ ({time.time() - t0:.1f}s); "
              f"draw them: python plots.py {name} --scale {args['scale']} --results {args['out']}")


if __name__ == "__main__":
    main()
