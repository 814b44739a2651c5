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
import ctypes
import hashlib
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
    """Largest integer n in [lo, hi] with succeeds(n), assuming success is monotone in n.

    Bisection in log scale (geometric mean) until hi/lo <= ratio.  Returns lo if even lo
    fails (the caller should record that), hi if hi succeeds.
    """
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
        if succeeds(mid):
            lo = mid
        else:
            hi = mid
    return lo


# ----------------------------------------------------------------------------- results and sweeps

RESULTS = "results"


def config_key(config):
    """A short stable name for a config: readable prefix + hash of its canonical JSON."""
    blob = json.dumps(config, sort_keys=True, default=float)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def save_json(path, obj):
    """Write then rename, so a reader (or an interrupted run) never sees half a file."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=_json_default)
    os.replace(tmp, path)


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o)}")


def load_records(out, experiment):
    """All finished records of one experiment, sorted by config key."""
    folder = os.path.join(out, experiment)
    if not os.path.isdir(folder):
        return []
    recs = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                recs.append(json.load(f))
    return recs


def _run_record(experiment, fn, config):
    t0 = time.time()
    result = fn(config)
    return {"experiment": experiment, "config": config, "result": result,
            "seconds": round(time.time() - t0, 3)}


class _Progress:
    """One line on stderr, redrawn every second: done/total, elapsed, estimated remaining.
    Shown when stderr is a terminal (or RECALL_PROGRESS=1)."""

    def __init__(self, label, total, done=0):
        self.label, self.total, self.done, self.t0 = label, total, done, time.time()
        self.start_done = done
        self.enabled = sys.stderr.isatty() or os.environ.get("RECALL_PROGRESS") == "1"
        self.stop = threading.Event()
        if self.enabled and done < total:
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self):
        while not self.stop.wait(1.0):
            self._draw()

    def _draw(self):
        el = time.time() - self.t0
        new = self.done - self.start_done
        left = f"~{el / new * (self.total - self.done):.0f}s left" if new else "time left unknown"
        sys.stderr.write(f"\r{self.label}: {self.done}/{self.total} done, {el:.0f}s elapsed, "
                         f"{left}   ")
        sys.stderr.flush()

    def update(self, n=1):
        self.done += n
        if self.enabled:
            self._draw()

    def close(self):
        self.stop.set()
        if self.enabled:
            self._draw()
            sys.stderr.write("\n")


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # workers leave Ctrl-C to the parent


def _run_record_star(args):
    return args[0], _run_record(*args[1:])


# Set by the CLI: list the configs instead of running them, or run only config number `only`
# (one independent command per configuration, for job arrays and GNU parallel).
SELECT = {"list": False, "only": None}


def sweep(experiment, configs, fn, out=RESULTS, jobs=1):
    """Run fn(config) -> dict for every config without a finished record; return all records.

    configs: JSON-able dicts, each carrying its own seed, so results do not depend on `jobs`
    or on the order of execution.  fn must be a module-level function (it is pickled for the
    process pool).  Each finished run is saved at once as results/<experiment>/<key>.json.
    Ctrl-C stops cleanly: finished records are kept, the runs in flight are lost.
    """
    jobs = rc._check_int("jobs", jobs)
    folder = os.path.join(out, experiment)
    paths = [os.path.join(folder, config_key(c) + ".json") for c in configs]
    if SELECT["list"]:
        for i, (c, p) in enumerate(zip(configs, paths)):
            print(f"{i}\t{'done' if os.path.exists(p) else 'todo'}\t{json.dumps(c, sort_keys=True)}")
        return []
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
        if pool is None:
            for p, *args in todo:
                save_json(p, _run_record(*args))
                progress.update()
        else:
            try:
                for p, record in pool.imap_unordered(_run_record_star, todo):
                    save_json(p, record)
                    progress.update()
                pool.close()
            except BaseException:
                pool.terminate()                     # Ctrl-C: drop the runs in flight
                raise
            finally:
                pool.join()
    finally:
        progress.close()
    records = []
    for p in paths:
        with open(p) as f:
            records.append(json.load(f))
    return records


# ----------------------------------------------------------------------------- experiments registry

EXPERIMENTS = {}   # name -> (runner, help, [(flag, type, default, help), ...])


def experiment(name, help, options=()):
    """Register a runner  run(out, scale, jobs, seed, **options) -> list of records."""
    def register(fn):
        EXPERIMENTS[name] = (fn, help, list(options))
        return fn
    return register


# ----------------------------------------------------------------------------- paper A, Fig. 5: sequential learning

def fig5_losses(logits, y, D):
    """Total, relation-only and subject-only cross-entropy (means over rows).

    relation-only: -log sum_{a in y's relation block} p(a)   (is the relation known?)
    subject-only:  -log sum_{a = y mod D} p(a)               (is the subject's slot known?)
    """
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
    """Linear attention, one-hot embeddings, SGD from a tiny init on fresh batches (PAPERS A5)."""
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


def fig5_config(steps=8192, seed=0, eval_every=64, dtype="float64"):
    return {"S": 16, "R": 4, "D": 8, "T": 32, "lr": 0.1, "batch": 1024, "init": 1e-5,
            "steps": steps, "n_test": 4096, "eval_every": eval_every, "seed": seed,
            "dtype": dtype}


@experiment("fig5", "paper A Fig. 5: sequential learning and the hallucination stage",
            [("--steps", "positive_int", 8192, "SGD steps (paper: 8192)"),
             ("--dtype", "dtype", "float32", "float32 or float64")])
def run_fig5(out=RESULTS, scale="small", jobs=1, seed=0, steps=8192, dtype="float64"):
    """The paper's run is cheap (about half a minute), so both scales run it in full."""
    records = sweep("fig5", [fig5_config(steps, seed, dtype=dtype)], run_fig5_one, out, jobs)
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


LINEAR_D_FULL = [8, 11, 16, 22, 32, 45, 64, 90, 128, 181, 256]
LINEAR_D_SMALL = [8, 11, 16, 22, 32]


def linear_memory_trial(N, d, seed, lr, steps):
    """Train W (d, d) by full-batch Adam on N sphere embeddings, f(i) = i (PAPERS A1).

    Trains until every item is recalled or `steps` run out.  Returns the first step with
    accuracy >= 0.99 and with accuracy = 1 (None if never), and the best accuracy seen.
    """
    rng = np.random.default_rng([seed, d, N])
    fixed = {"E": rc.embeddings(N, d, rng, "sphere"), "U": rc.embeddings(N, d, rng, "sphere")}
    x = np.arange(N)                                               # (N,)  item i -> class i
    params = {"W": np.zeros((d, d))}                               # [ours] zero init
    state = adam_init(params)
    first99 = first100 = None
    best = 0.0
    for step in range(steps + 1):
        logits, cache = rc.linear_memory_forward(params, fixed, x)   # (N, N)
        acc = rc.accuracy(logits, x)
        best = max(best, acc)
        if acc >= 0.99 and first99 is None:
            first99 = step
        if acc == 1.0:
            first100 = step
            break
        if step == steps:
            break
        _, dlogits = rc.cross_entropy(logits, x)
        adam_step(params, rc.linear_memory_backward(dlogits, cache), state, lr)
    if not np.isfinite(params["W"]).all():
        raise FloatingPointError(f"linear memory diverged at N={N}, d={d}, lr={lr}")
    return {"N": N, "first99": first99, "first100": first100, "best": best, "steps": step}


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


def linear_configs(scale, seed):
    """full: PAPERS A1 (d grid, 5 seeds, Adam lr 1000, 4096 steps, bracket [d, d^2/2], ratio 1.01).
    small: d <= 32, 3 seeds, 1024 steps, ratio 1.03, and the bracket [N(c=4), N(c=0.8)] from
    d^2 = c N ln N (our runs put the capacity at c = 0.85 to 1.2, well inside)."""
    full = scale == "full"
    out = []
    for d in (LINEAR_D_FULL if full else LINEAR_D_SMALL):
        for s in range(seed, seed + (5 if full else 3)):
            if full:
                lo, hi = d, d * d // 2
            else:
                lo = max(2, int(theory.linear_capacity_N(d, 4.0)))
                hi = min(d * d // 2, int(theory.linear_capacity_N(d, 0.8)) + 1)
            out.append({"scale": scale, "d": d, "seed": s, "lr": 1000.0, "steps": 4096 if full else 1024,
                        "ratio": 1.01 if full else 1.03, "lo": lo, "hi": hi})
    return out


@experiment("linear", "paper A Fig. 1 left: linear associative memory capacity, trained and Hebbian",
            [("--dmax", "positive_int", 256, "only the d <= DMAX of the grid")])
def run_linear(out=RESULTS, scale="small", jobs=1, seed=0, dmax=256):
    cfgs = [c for c in linear_configs(scale, seed) if c["d"] <= dmax]
    recs = sweep("linear", cfgs, run_linear_one, out, jobs)
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
            N = np.array([p[0] for p in pts], float)
            d = np.array([p[1] for p in pts], float)
            c = theory.fit_constant(N * np.log(N), d * d)
            out[key] = {"c": c, "bits_per_param": theory.bits_per_param_linear(c)}
    return out


FITS = {"linear": linear_fits}


def print_fits(name, records):
    for key, v in FITS[name](records).items():
        print(f"{name} {key}: " + ", ".join(f"{k} = {x:.3g}" for k, x in v.items()))


MLP_D_FULL = [8, 11, 16, 22, 32, 45, 64, 90]
MLP_ALPHAS = [1, 2, 4, 8]


def mlp_memory_trial(N, d, m, M, seed, lr, steps, patience=None):
    """Train relu(E[x] W1 + b1) W2 U^T by full-batch Adam on N sphere embeddings (PAPERS A2).

    M = None: N classes, f(i) = i;  M = 32: f(i) = (i M) // N.  Init variance 1/fan_in.
    Stops at accuracy >= 0.99, after `steps`, or (if patience is set, [ours]) once the best
    accuracy has not improved for `patience` steps.  Returns the success step (or None).
    """
    rng = np.random.default_rng([seed, d, m, M or 0, N])
    n_classes = N if M is None else M
    fixed = {"E": rc.embeddings(N, d, rng, "sphere"),
             "U": rc.embeddings(n_classes, d, rng, "sphere")}
    x = np.arange(N)                                               # (N,)
    y = x if M is None else (x * M) // N                           # (N,)
    params = {"W1": rng.standard_normal((d, m)) / np.sqrt(d), "b1": np.zeros(m),
              "W2": rng.standard_normal((m, d)) / np.sqrt(m)}
    state = adam_init(params)
    best, best_step, first99 = 0.0, 0, None
    for step in range(steps + 1):
        logits, cache = rc.mlp_memory_forward(params, fixed, x)     # (N, n_classes)
        acc = rc.accuracy(logits, y)
        if acc > best:
            best, best_step = acc, step
        if acc >= 0.99:
            first99 = step
            break
        if step == steps or (patience and step - best_step >= patience):
            break
        _, dlogits = rc.cross_entropy(logits, y)
        adam_step(params, rc.mlp_memory_backward(dlogits, cache), state, lr)
    return {"N": N, "first99": first99, "best": best, "steps": step}


def run_mlp_one(cfg):
    """Capacity (99% criterion) of one MLP memory of width m = alpha d."""
    d, m, M = cfg["d"], cfg["alpha"] * cfg["d"], cfg["M"]
    trial, memo = memoised(lambda N: mlp_memory_trial(N, d, m, M, cfg["seed"], cfg["lr"],
                                                      cfg["steps"], cfg["patience"]))
    succeeds = lambda N: trial(N)["first99"] is not None          # noqa: E731
    cap = bisect_capacity(succeeds, cfg["lo"], cfg["hi"], cfg["ratio"])
    return {"cap99": cap, "m": m, "md": m * d, "lo_fails": not succeeds(cfg["lo"]),
            "hi_succeeds": succeeds(cfg["hi"]), "trials": [memo[N] for N in sorted(memo)]}


def mlp_configs(scale, seed):
    """full: PAPERS A2 (d up to 90, alpha in {1,2,4,8}, lr 0.03, 32768 steps, bracket [d, m d],
    ratio 1.01, 5 seeds).  small: d in {8, 11, 16} with m d <= 1024, one seed, 2048 steps,
    patience 256, ratio 1.04, and the bracket [Nref/2, 2 Nref] around the authors' line."""
    full = scale == "full"
    out = []
    for M in (None, 32):
        regime = "M=N" if M is None else "M=32"
        for d in (MLP_D_FULL if full else [8, 11, 16]):
            for alpha in MLP_ALPHAS:
                md = alpha * d * d
                if not full and md > 1024:
                    continue
                if full:
                    lo, hi = d, md
                else:
                    ref = theory.mlp_reference_N(md, regime)
                    lo, hi = max(2, int(ref / 2)), int(2 * ref) + 1
                for s in range(seed, seed + (5 if full else 1)):
                    out.append({"scale": scale, "d": d, "alpha": alpha, "M": M, "regime": regime,
                                "seed": s, "lr": 0.03, "steps": 32768 if full else 2048,
                                "patience": None if full else 256,
                                "ratio": 1.01 if full else 1.04, "lo": lo, "hi": hi})
    return sorted(out, key=lambda c: -c["alpha"] * c["d"] ** 2)   # biggest first: better packing


@experiment("mlp", "paper A Fig. 1 right / Fig. 6: MLP associative memory capacity",
            [("--dmax", "positive_int", 90, "only the d <= DMAX of the grid")])
def run_mlp(out=RESULTS, scale="small", jobs=1, seed=0, dmax=90):
    cfgs = [c for c in mlp_configs(scale, seed) if c["d"] <= dmax]
    recs = sweep("mlp", cfgs, run_mlp_one, out, jobs)
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

# Paper B (Vural, Bietti, Soltanolkotabi, Wu, ICLR 2026).  Our concrete model is in PAPERS.md B and
# recall.retrieval_forward.  All losses and gradients are full-batch means over the N samples,
# computed in chunks of samples so that the (N, V) logits are never formed at once.

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
    d = fixed["E"].shape[1]
    vdim = d if "W_mlp" not in fixed else fixed["W_mlp"].shape[1]
    return {"WKQ": np.zeros((d, d)), "WV": np.zeros((vdim, d))}


def three_step(fixed, tokens, pos, labels, eta, gamma=None, query_norm=None, info=None,
               chunk=4096):
    """The paper's three full-batch GD steps from zero on the same N samples:
        WV1  = -eta   grad_WV  L(WV=0,   WKQ=0)
        WKQ1 = -gamma grad_WKQ L(WV=WV1, WKQ=0)
        WV2  = WV1 - gamma grad_WV L(WV=WV1, WKQ=WKQ1)
    Returns {"WKQ": WKQ1 (d, d), "WV": WV2 (d, d) or (m, d)}.  float64 throughout.

    Instead of gamma one may give query_norm = q: gamma is then chosen, once the step-2 gradient
    is known, so that the learned query w = WKQ1 z_eos has norm q (WKQ1 is linear in gamma).
    For eta -> 0 the argmax after step 3 depends on (eta, gamma) only through q, because
    WV2 = WV1 - gamma grad and the WV1 term is O(eta / gamma).  If info is a dict, the gamma
    used and gamma * eta are written into it."""
    if (gamma is None) == (query_norm is None):
        raise ValueError("give exactly one of gamma and query_norm")
    p0 = _zero_params(fixed)
    _, g0 = retrieval_grad(p0, fixed, tokens, pos, labels, chunk)
    WV1 = -eta * g0["WV"]
    _, g1 = retrieval_grad({"WKQ": p0["WKQ"], "WV": WV1}, fixed, tokens, pos, labels, chunk)
    if gamma is None:
        gamma = query_norm / np.linalg.norm(g1["WKQ"] @ fixed["z_eos"])
    if info is not None:
        info["gamma"], info["gamma_eta"] = float(gamma), float(gamma * eta)
    WKQ1 = -gamma * g1["WKQ"]
    _, g2 = retrieval_grad({"WKQ": WKQ1, "WV": WV1}, fixed, tokens, pos, labels, chunk)
    return {"WKQ": WKQ1, "WV": WV1 - gamma * g2["WV"]}


def retrieval_diagnostics(params, fixed, tokens, pos, labels, chunk=4096):
    """Test accuracy, mean attention on the informative position, cos(query, z_trig), the query
    norm |w|, its trigger score w.z_trig, the correct-logit margin (logit_y - max wrong logit)
    in units of the row's logit standard deviation (scale-free, since WV2 is O(gamma)), and
    hub_share: the fraction of the errors won by the single most frequent wrong label (a "hub"
    label with an outlying bias takes most errors)."""
    w = params["WKQ"] @ fixed["z_eos"]                                   # (d,) learned query
    z = fixed["z_trig"]
    N = len(labels)
    hits, att, margin = 0, 0.0, 0.0
    wrong = np.zeros(len(fixed["U"]), dtype=int)                         # (V,) wins of wrong labels
    for s in range(0, N, chunk):
        e = min(s + chunk, N)
        logits, cache = rc.retrieval_forward(params, fixed, (tokens[s:e], pos[s:e]))   # (B, V)
        a = cache[2]                                                     # (B, L) attention
        rows = np.arange(e - s)
        y = labels[s:e]
        pred = logits.argmax(1)
        hits += int((pred == y).sum())
        wrong += np.bincount(pred[pred != y], minlength=len(wrong))
        att += float(a[rows, pos[s:e]].sum())
        correct = logits[rows, y].copy()
        logits[rows, y] = -np.inf
        sd = np.std(np.where(np.isfinite(logits), logits, correct[:, None]), axis=1) + 1e-300
        margin += float(((correct - logits.max(1)) / sd).sum())
    nw = float(np.linalg.norm(w))
    return {"accuracy": hits / N, "attention": att / N,
            "cos_query_trig": float(w @ z / (nw * np.linalg.norm(z) + 1e-300)),
            "query_norm": nw, "trig_score": float(w @ z), "margin": margin / N,
            "hub_share": float(wrong.max() / max(wrong.sum(), 1))}


def retrieval_adam(fixed, tokens, pos, labels, steps, lr, chunk=4096):
    """Longer training of the same model from zero: full-batch Adam on the same N samples.
    At zero the WKQ gradient vanishes (WV = 0), so WV moves first, then the attention."""
    params = _zero_params(fixed)
    state = adam_init(params)
    for _ in range(steps):
        _, grads = retrieval_grad(params, fixed, tokens, pos, labels, chunk)
        adam_step(params, grads, state, lr)
    return params


def run_retrieval_one(cfg):
    """One training run on a fresh task: three steps at query norm q, or Adam for `steps`.
    Returns the diagnostics on n_test fresh sequences, the realised |z_trig|^2 (the theory
    takes it as input) and, for three steps, gamma and gamma*eta."""
    rng = np.random.default_rng(cfg["seed"])
    task = rc.make_retrieval(cfg["V"], cfg["d"], cfg["L"], rng, m=cfg.get("m"),
                             kind=cfg.get("kind", "gaussian"))
    fixed = rc.retrieval_fixed(task)
    tokens, pos, labels = rc.sample_retrieval(task, cfg["N"], rng)         # (N, L), (N,), (N,)
    test = rc.sample_retrieval(task, cfg["n_test"], rng)
    info = {}
    if cfg["method"] == "three_step":
        params = three_step(fixed, tokens, pos, labels, cfg["eta"], query_norm=cfg["q"], info=info)
    else:
        params = retrieval_adam(fixed, tokens, pos, labels, cfg["steps"], cfg["lr"])
    out = retrieval_diagnostics(params, fixed, *test)
    out["train_accuracy"] = retrieval_diagnostics(params, fixed, tokens, pos, labels)["accuracy"]
    out["z2"] = float(fixed["z_trig"] @ fixed["z_trig"])
    out.update(info)
    return out


def _b_cfg(V, d, L, N, seed, q=10.0, m=None, kind="gaussian", method="three_step", n_test=2000,
           eta=1e-3, steps=0, lr=0.0):
    cfg = {"V": V, "d": d, "L": L, "N": int(N), "seed": seed, "kind": kind, "method": method,
           "n_test": n_test}
    if m is not None:
        cfg["m"] = m
    if method == "three_step":
        cfg.update(q=q, eta=eta)
    else:
        cfg.update(steps=steps, lr=lr)
    return cfg


def _geom(lo, hi, n):
    return [int(round(x)) for x in np.geomspace(lo, hi, n)]


# The agreement table: predicted versus measured accuracy of the three-step model on a fixed
# grid chosen to span accuracies 0.1 to 0.95 (V = 128; d, L, N, q varied; MLP points included).
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


@experiment("b_agree", "paper B: predicted vs measured three-step accuracy (the agreement table)",
            [("--seeds", "positive_int", 3, "seeds per grid point")])
def run_b_agree(out=RESULTS, scale="small", jobs=1, seed=0, seeds=3):
    n_test = {"tiny": 200, "small": 2000, "full": 8000}[scale]
    grid = AGREE_GRID if scale != "tiny" else [(16, 16, 4, 200, 10, None), (16, 16, 4, 200, 10, 8)]
    cfgs = [_b_cfg(V, d, L, N, seed + s, q=q, m=m, n_test=n_test)
            for (V, d, L, N, q, m) in grid for s in range(seeds)]
    recs = sweep("b_agree", cfgs, run_retrieval_one, out, jobs)
    print(agreement_table(recs))
    return recs


def agreement_table(records):
    """Markdown table: per grid point the seed-mean measured accuracy and the seed-mean
    prediction (each seed's prediction uses its realised |z_trig|^2), and how many agree
    within 0.10 among points whose measured accuracy lies in [0.1, 0.95]."""
    groups = {}
    for r in records:
        c = r["config"]
        key = (c["V"], c["d"], c["L"], c["N"], c.get("q"), c.get("m"))
        pred = theory.retrieval_accuracy(c["V"], c["N"], c["d"], c["L"], c["q"], c.get("m"),
                                         z2=r["result"]["z2"])
        groups.setdefault(key, []).append((r["result"]["accuracy"], pred,
                                           r["result"]["attention"],
                                           r["result"].get("hub_share", float("nan"))))
    lines = ["| V | d | L | N | q | m | attention | measured | predicted | diff | measured per seed | max hub share |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    n_in, n_ok = 0, 0
    for key, vals in groups.items():
        meas, pred, att = (float(np.mean(v)) for v in list(zip(*vals))[:3])
        per_seed = " / ".join(f"{v[0]:.2f}" for v in vals)
        hub = max(v[3] for v in vals)
        inside = 0.1 <= meas <= 0.95
        ok = abs(meas - pred) <= 0.10
        n_in += inside
        n_ok += inside and ok
        lines.append("| " + " | ".join("-" if v is None else str(v) for v in key)
                     + f" | {att:.2f} | {meas:.3f} | {pred:.3f} | {pred - meas:+.3f} | {per_seed} "
                     f"| {hub:.2f} |")
    lines.append(f"\n{n_ok} of {n_in} points with measured accuracy in [0.1, 0.95] agree "
                 f"within 0.10 ({len(groups)} points, {len(records)} runs).")
    return "\n".join(lines)


# Figure 1: phase diagram over (N, d) at three L, fixed query norm q.

@experiment("b_phase", "paper B, experiment 1: accuracy over (N, d) at three L, with the predicted contour",
            [("--q", "positive_float", 5.0, "query norm |WKQ z_eos| (attention sharpness)")])
def run_b_phase(out=RESULTS, scale="small", jobs=1, seed=0, q=5.0):
    if scale == "tiny":                                  # for the tests
        V, Ls, ds, Ns = 16, [2, 4, 8], [8, 16], [100, 200]
    elif scale == "small":
        V, Ls, ds, Ns = 128, [4, 16, 64], [16, 32, 64, 128], _geom(500, 16000, 6)
    else:
        V, Ls, ds, Ns = 256, [4, 16, 64], [16, 32, 64, 128, 256], _geom(500, 64000, 8)
    cfgs = [_b_cfg(V, d, L, N, seed, q=q) for L in Ls for d in ds for N in Ns]
    return sweep("b_phase", cfgs, run_retrieval_one, out, jobs)


# Figure 2: N* versus d and versus V, by bisection on N.

def run_nstar_one(cfg):
    """Bisection on N (train.bisect_capacity, in log scale) for the smallest N whose three-step
    accuracy, averaged over cfg["n_tasks"] independent tasks (embeddings, training stream and
    test set each), reaches tau.  Within a task the training sets are nested prefixes of one
    sample stream.  A single task is too noisy: its accuracy is not monotone in N."""
    runs = []
    for k in range(cfg.get("n_tasks", 1)):
        rng = np.random.default_rng([cfg["seed"], k])
        task = rc.make_retrieval(cfg["V"], cfg["d"], cfg["L"], rng, m=cfg.get("m"))
        fixed = rc.retrieval_fixed(task)
        runs.append((fixed, rc.sample_retrieval(task, cfg["hi"], rng),
                     rc.sample_retrieval(task, cfg["n_test"], rng)))

    def mean_accuracy(N):
        accs = []
        for fixed, (tokens, pos, labels), test in runs:
            params = three_step(fixed, tokens[:N], pos[:N], labels[:N], cfg["eta"],
                                query_norm=cfg["q"])
            accs.append(retrieval_diagnostics(params, fixed, *test)["accuracy"])
        return float(np.mean(accs))

    accuracy_at, tried = memoised(mean_accuracy)

    # bisection for the largest failing N; N* is the geometric mean of it and the smallest
    # succeeding N tried above it (the final bracket, hi/lo <= ratio)
    n_fail = bisect_capacity(lambda N: accuracy_at(N) < cfg["tau"], cfg["lo"], cfg["hi"],
                             cfg["ratio"])
    above = [N for N, acc in tried.items() if N > n_fail and acc >= cfg["tau"]]
    if accuracy_at(cfg["lo"]) >= cfg["tau"]:
        nstar = cfg["lo"]                                   # at or below the bracket
    elif not above:
        nstar = None                                        # never reached within [lo, hi]
    else:
        nstar = round(math.sqrt(n_fail * min(above)))
    return {"nstar": nstar, "tried": sorted(tried.items()),
            "z2": [float(f["z_trig"] @ f["z_trig"]) for f, _, _ in runs]}


def _nstar_cfg(V, d, L, seed, tau, q, ratio, n_test, n_tasks=None, cap=200000):
    """Bisection bracket [V/2, 3 pred] (capped); its geometric midpoints are not anchored on
    the prediction, so the measurement cannot snap to it.  At saturated attention every test
    row with the same token gets the same logits, so a task offers only V independent trials:
    by default n_tasks = max(2, 512 // V) tasks are averaged."""
    n_tasks = max(2, 512 // V) if n_tasks is None else n_tasks
    pred = theory.critical_N(V, d, L, q, tau)
    hi = int(min(3 * pred, cap)) if math.isfinite(pred) else cap
    cfg = {"V": V, "d": d, "L": L, "seed": seed, "tau": tau, "lo": V // 2,
           "hi": hi, "ratio": ratio, "n_test": n_test, "n_tasks": n_tasks, "q": q, "eta": 1e-3}
    return cfg


@experiment("b_nstar", "paper B, experiment 2: critical N* versus d and versus V (bisection)",
            [("--tau", "positive_float", 0.5, "target accuracy"),
             ("--q", "positive_float", 10.0, "query norm (attention sharpness)")])
def run_b_nstar(out=RESULTS, scale="small", jobs=1, seed=0, tau=0.5, q=10.0):
    if scale == "tiny":
        L, V0, d0, ds, Vs, ratio, n_test = 4, 16, 32, [16, 32], [8, 16], 1.5, 200
    elif scale == "small":
        L, V0, d0, ds, Vs, ratio, n_test = 8, 128, 128, [64, 96, 128, 256], [64, 128, 256], 1.25, 1000
    else:
        L, V0, d0, ds, Vs, ratio, n_test = 8, 256, 256, [96, 128, 192, 256, 512], [64, 128, 256, 512, 1024], 1.1, 4000
    cap = 2000 if scale == "tiny" else 200000
    cfgs = [dict(_nstar_cfg(V0, d, L, seed, tau, q, ratio, n_test, cap=cap), sweep_over="d")
            for d in ds]
    cfgs += [dict(_nstar_cfg(V, d0, L, seed, tau, q, ratio, n_test, cap=cap), sweep_over="V")
             for V in Vs
             if not (V == V0 and d0 in ds)]          # that point is already in the d sweep
    recs = sweep("b_nstar", cfgs, run_nstar_one, out, jobs)
    print(nstar_table(recs))
    if scale != "tiny":
        ex = theory.predicted_exponents(tau=tau, q=q, L=L, V=V0, d=d0, N=8000)
        print("\npredicted local exponents at V=%d, d=%d, N=8000, L=%d: " % (V0, d0, L)
              + ", ".join(f"{k} {v:+.2f}" for k, v in ex.items()))
    return recs


def nstar_sweep(records, key):
    """The records of one N* sweep (key "d" or "V"), sorted along it.  The V sweep also gets
    the (V0, d0) point, which is stored with the d sweep."""
    rs = [r for r in records if r["config"]["sweep_over"] == key]
    if key == "V" and rs:
        d0 = rs[0]["config"]["d"]
        rs += [r for r in records if r["config"]["sweep_over"] == "d" and r["config"]["d"] == d0
               and all(r["config"]["V"] != o["config"]["V"] for o in rs)]
    return sorted(rs, key=lambda r: r["config"][key])


def nstar_table(records):
    """Markdown table of measured (bisection) and predicted N*, their ratio, and the fitted
    log-log slopes of both along each sweep."""
    lines = ["| sweep | V | d | L | measured N* | predicted N* | measured / predicted |",
             "|---|---|---|---|---|---|---|"]
    slopes = {}
    for key in ("d", "V"):
        xs, meas, pred = [], [], []
        for r in nstar_sweep(records, key):
            c = r["config"]
            p = theory.critical_N(c["V"], c["d"], c["L"], c["q"], c["tau"])
            m = r["result"]["nstar"]
            xs.append(c[key])
            meas.append(np.nan if m is None else m)
            pred.append(p)
            ratio = f"{m / p:.2f}" if m is not None and math.isfinite(p) else "-"
            lines.append(f"| {key} | {c['V']} | {c['d']} | {c['L']} | {m} | {p:.0f} | {ratio} |")
        slopes[key] = (theory.loglog_slope(xs, meas), theory.loglog_slope(xs, pred))
    for key, (sm, sp) in slopes.items():
        lines.append(f"\nN* ~ {key}^a: fitted a = {sm:+.2f} (measured), {sp:+.2f} (predicted)")
    return "\n".join(lines)


# Figure 3: random versus orthogonal embeddings.

@experiment("b_embed", "paper B, experiment 3: one-hot (d = V + 2) versus random embeddings (d < V)",
            [("--q", "positive_float", 10.0, "query norm (attention sharpness)")])
def run_b_embed(out=RESULTS, scale="small", jobs=1, seed=0, q=10.0):
    V, L = {"tiny": (8, 4), "small": (64, 8), "full": (256, 16)}[scale]
    Ns = _geom(V, 64 * V, {"tiny": 2, "small": 7, "full": 10}[scale])
    seeds = [seed + s for s in range(1 if scale == "tiny" else 2)]
    cfgs = [_b_cfg(V, V + 2, L, N, sd, q=q, kind="onehot") for N in Ns for sd in seeds]
    cfgs += [_b_cfg(V, d, L, N, sd, q=q) for d in (V // 4, V // 2, V + 2) for N in Ns
             for sd in seeds]
    return sweep("b_embed", cfgs, run_retrieval_one, out, jobs)


# Figure 4: attention-only versus attention + fixed random MLP of width m.

@experiment("b_mlp", "paper B, experiment 4: attention-only vs attention + fixed MLP, accuracy vs m d",
            [("--q", "positive_float", 10.0, "query norm (attention sharpness)")])
def run_b_mlp(out=RESULTS, scale="small", jobs=1, seed=0, q=10.0):
    if scale == "tiny":
        V, L, N, ds, ms = 16, 4, 200, [8], [8, 32]
    elif scale == "small":
        V, L, N, ds, ms = 64, 8, 4000, [32, 64], [16, 64, 256, 1024]
    else:
        V, L, N, ds, ms = 256, 8, 32000, [16, 32, 64], [16, 32, 64, 128, 256, 512, 1024, 2048]
    seeds = [seed + s for s in range(1 if scale == "tiny" else 2)]
    cfgs = [_b_cfg(V, d, L, N, sd, q=q, m=m) for d in ds for m in ms for sd in seeds]
    cfgs += [_b_cfg(V, d, L, N, sd, q=q) for d in ds for sd in seeds]
    return sweep("b_mlp", cfgs, run_retrieval_one, out, jobs)


# Figure 5: three steps versus long training, N* read off accuracy-versus-N curves.

@experiment("b_long", "paper B, experiment 5: three steps versus long (Adam) training, accuracy and N*",
            [("--steps", "positive_int", 150, "full-batch Adam steps"),
             ("--lr", "positive_float", 0.02, "Adam learning rate")])
def run_b_long(out=RESULTS, scale="small", jobs=1, seed=0, steps=150, lr=0.02):
    V, L = {"tiny": (16, 4), "small": (64, 8), "full": (128, 16)}[scale]
    ds = {"tiny": [8, 16], "small": [32, 64, 128], "full": [32, 64, 128, 256]}[scale]
    Ns = _geom(V // 4, 128 * V, {"tiny": 3, "small": 8, "full": 13}[scale])
    if scale == "tiny":
        steps = min(steps, 10)
    cfgs = [_b_cfg(V, d, L, N, seed, q=10.0) for d in ds for N in Ns]
    # Adam reaches the coverage bound long before 8 V samples; larger N would only cost time
    cfgs += [_b_cfg(V, d, L, N, seed, method="adam", steps=steps, lr=lr)
             for d in ds for N in Ns if N <= 8 * V]
    recs = sweep("b_long", cfgs, run_retrieval_one, out, jobs)
    print(long_table(recs))
    return recs


def crossing(xs, ys, tau):
    """First x where y reaches tau, interpolated in log x; None if never."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if y0 < tau <= y1:
            t = (tau - y0) / (y1 - y0)
            return float(np.exp(np.log(x0) + t * (np.log(x1) - np.log(x0))))
    return float(xs[0]) if len(ys) and ys[0] >= tau else None


def long_curve(records, d, method):
    """Accuracy versus N of one learner ("three_step" or "adam") at one d: (Ns, accuracies)."""
    rs = sorted([r for r in records if r["config"]["d"] == d and r["config"]["method"] == method],
                key=lambda r: r["config"]["N"])
    return [r["config"]["N"] for r in rs], [r["result"]["accuracy"] for r in rs]


def long_table(records, taus=(0.3, 0.5)):
    """N* (accuracy >= tau, interpolated on the N grid) for three steps and for Adam, per d."""
    lines = ["| d | tau | N* three steps | N* predicted (three steps) | N* Adam | coverage bound N |",
             "|---|---|---|---|---|---|"]
    for d in sorted({r["config"]["d"] for r in records}):
        for tau in taus:
            row = {}
            for method in ("three_step", "adam"):
                Ns, accs = long_curve(records, d, method)
                ns = crossing(Ns, accs, tau) if Ns else None
                row[method] = "-" if ns is None else f"{ns:.0f}"
            c = records[0]["config"]
            q = next(r["config"]["q"] for r in records if r["config"]["method"] == "three_step")
            pred = theory.critical_N(c["V"], d, c["L"], q, tau)
            cov = math.log(1 - tau) / math.log(1 - 1 / c["V"]) - 1     # coverage_bound = tau
            lines.append(f"| {d} | {tau} | {row['three_step']} | {pred:.0f} | {row['adam']} | "
                         f"{cov:.0f} |")
    return "\n".join(lines)


# Figure 6: where L enters.

@experiment("b_length", "paper B, experiment 6: accuracy and attention on the informative token vs L",
            [("--q", "positive_float", 5.0, "query norm (attention sharpness)")])
def run_b_length(out=RESULTS, scale="small", jobs=1, seed=0, q=5.0):
    V, d, N = {"tiny": (16, 16, 200), "small": (128, 64, 6000), "full": (256, 128, 32000)}[scale]
    Ls = {"tiny": [2, 8], "small": [2, 4, 8, 16, 32, 64, 128, 256],
          "full": [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]}[scale]
    seeds = [seed + s for s in range(1 if scale == "tiny" else 2)]
    cfgs = [_b_cfg(V, d, L, N, sd, q=qq) for qq in (q, 2 * q) for L in Ls for sd in seeds]
    return sweep("b_length", cfgs, run_retrieval_one, out, jobs)


# Each noise term against simulation: the three-step memory is split by the parts of the pooled
# vectors, phi = p (e_x + z_trig) + nu, and the variance over wrong labels of each part's logits
# is compared with the matching term of theory.retrieval_noise_terms (typical token).

def _pooled_parts(fixed, tokens, pos, a):
    """phi = p e_x + p z_trig + nu, as three (N, d) arrays; a (N, L) is the attention."""
    E, z = fixed["E"], fixed["z_trig"]
    N, L = tokens.shape
    rows = np.arange(N)
    p = a[rows, pos]                                                  # (N,)
    nu = np.zeros((N, E.shape[1]))
    for i in range(L):
        w = np.where(pos == i, 0.0, a[:, i])
        nu += w[:, None] * E[tokens[:, i]]                            # (N, d)
    return p[:, None] * E[tokens[rows, pos]], p[:, None] * z[None, :], nu


def run_terms_one(cfg):
    """Measured variance / S^2 of the logit parts of the three-step model (attention only):
    'e_e' test token & distractors x train tokens (theory: overlap + crosstalk), 'z_ze' test
    trigger x train token + trigger (mean bias), 'x_nu' anything x train distractors (distractor);
    sigma2 of the whole logit, and the theory's terms at the typical token."""
    rng = np.random.default_rng(cfg["seed"])
    task = rc.make_retrieval(cfg["V"], cfg["d"], cfg["L"], rng)
    fixed = rc.retrieval_fixed(task)
    tokens, pos, labels = rc.sample_retrieval(task, cfg["N"], rng)
    tt, tp, ty = rc.sample_retrieval(task, cfg["n_test"], rng)
    params = three_step(fixed, tokens, pos, labels, cfg["eta"], query_norm=cfg["q"])
    a_tr = rc.retrieval_forward(params, fixed, (tokens, pos))[1][2]   # (N, L)
    a_te = rc.retrieval_forward(params, fixed, (tt, tp))[1][2]        # (n, L)
    Re, Rz, Rnu = _pooled_parts(fixed, tokens, pos, a_tr)
    Te, Tz, Tnu = _pooled_parts(fixed, tt, tp, a_te)
    U = fixed["U"]
    R = U[labels] - U.mean(0)                                         # (N, d) r_n
    logit = lambda T, Rp: (T @ (Rp.T @ R)) @ U.T                      # (n, V)
    n = len(ty)
    rows = np.arange(n)
    wrong = np.ones((n, cfg["V"]), bool)
    wrong[rows, ty] = False
    def var_wrong(x):
        return float(np.mean(x[wrong].reshape(n, -1).var(1)))
    full = logit(Te + Tz + Tnu, Re + Rz + Rnu)
    S = float(np.mean(full[rows, ty] - full[wrong].reshape(n, -1).mean(1)))
    parts = {"e_e": logit(Te + Tnu, Re), "z_ze": logit(Tz, Rz + Re), "x_nu": logit(Te + Tz + Tnu, Rnu)}
    out = {k: var_wrong(x) / S ** 2 for k, x in parts.items()}
    out["sigma2"] = var_wrong(full) / S ** 2
    out["accuracy"] = float((full.argmax(1) == ty).mean())
    out["attention"] = float(a_te[rows, tp].mean())
    z2 = float(fixed["z_trig"] @ fixed["z_trig"])
    acc, T = theory.retrieval_accuracy(cfg["V"], cfg["N"], cfg["d"], cfg["L"], cfg["q"], z2=z2,
                                       terms=True)
    out["theory"] = {k: float(v) for k, v in T.items()}
    out["theory_accuracy"] = float(acc)
    return out


TERMS_GRID = [(128, 64, 8, 4000, 10.0), (256, 128, 8, 8000, 10.0), (128, 64, 32, 4000, 4.0),
              (128, 128, 16, 8000, 5.0), (128, 64, 128, 8000, 10.0)]


@experiment("b_terms", "paper B: each noise term of the accuracy formula against simulation (table)")
def run_b_terms(out=RESULTS, scale="small", jobs=1, seed=0):
    grid = TERMS_GRID if scale != "tiny" else [(16, 16, 4, 200, 5.0)]
    n_test = 200 if scale == "tiny" else 1000
    cfgs = [{"V": V, "d": d, "L": L, "N": N, "q": q, "seed": seed, "eta": 1e-3, "n_test": n_test}
            for V, d, L, N, q in grid]
    recs = sweep("b_terms", cfgs, run_terms_one, out, jobs)
    print(terms_table(recs))
    return recs


def terms_table(records):
    lines = ["| V | d | L | N | q | attention | e.e measured | overlap + crosstalk | "
             "z.(z+e) measured | mean bias | x.nu measured | distractor | sigma^2 measured | "
             "sigma^2 predicted |", "|" + "---|" * 14]
    for r in records:
        c, m, t = r["config"], r["result"], r["result"]["theory"]
        lines.append(f"| {c['V']} | {c['d']} | {c['L']} | {c['N']} | {c['q']:g} | "
                     f"{m['attention']:.2f} | {m['e_e']:.3f} | {t['overlap'] + t['crosstalk']:.3f} | "
                     f"{m['z_ze']:.3f} | {t['mean_bias']:.3f} | {m['x_nu']:.4f} | "
                     f"{t['distractor']:.4f} | {m['sigma2']:.3f} | {sum(t.values()):.3f} |")
    return "\n".join(lines)


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
positive_float = _checked(float, lambda v: v > 0 and math.isfinite(v), "a positive number")


def dtype_name(text):
    if text not in ("float64", "float32"):
        raise argparse.ArgumentTypeError(f"expected float64 or float32, got {text!r}")
    return text


_TYPES = {"positive_int": positive_int, "nonneg_int": nonneg_int,
          "positive_float": positive_float, "dtype": dtype_name, "str": str}


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
                       help="small: laptop defaults (seconds to a minute); full: the "
                            "paper's grid where known, else larger grids (hours or more)")
        p.add_argument("--jobs", type=positive_int, default=1,
                       help="configurations run in parallel (processes); results do not depend on it")
        p.add_argument("--seed", type=nonneg_int, default=0, help="base random seed")
        p.add_argument("--out", default=RESULTS, help="results folder (default: results)")
        p.add_argument("--list", action="store_true",
                       help="print the configurations (index, done/todo, config) and exit")
        p.add_argument("--only", type=nonneg_int, default=None, metavar="I",
                       help="run only configuration I (one independent command per "
                            "configuration, e.g. for a job array)")
        for flag, typ, default, h in options:
            p.add_argument(flag, type=_TYPES[typ], default=default, help=f"{h} (default: {default})")
    return parser


def main(argv=None):
    parser = build_parser()
    args = vars(parser.parse_args(argv))
    name = args.pop("experiment")
    SELECT["list"], SELECT["only"] = args.pop("list"), args.pop("only")
    fn = EXPERIMENTS[name][0]
    t0 = time.time()
    try:
        records = fn(**args)
    except ValueError as e:                        # a bad combination of option values
        parser.error(str(e))
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{name}: interrupted; finished runs are saved in {args['out']}/{name}/"
                         ", rerun to continue\n")
        sys.exit(130)
    if not SELECT["list"]:
        print(f"{name}: {len(records)} records in {args['out']}/{name}/ ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
