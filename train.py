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
import hashlib
import json
import math
import multiprocessing as mp
import signal
import sys
import time

import numpy as np

import recall as rc


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
    """One line on stderr: done/total, elapsed, estimated remaining."""

    def __init__(self, label, total, done=0):
        self.label, self.total, self.done, self.t0 = label, total, done, time.time()
        self.start_done = done
        self.enabled = sys.stderr.isatty() or os.environ.get("RECALL_PROGRESS") == "1"

    def update(self, n=1):
        self.done += n
        if not self.enabled:
            return
        el = time.time() - self.t0
        new = self.done - self.start_done
        eta = el / new * (self.total - self.done) if new else float("nan")
        sys.stderr.write(f"\r{self.label}: {self.done}/{self.total} done, "
                         f"{el:.0f}s elapsed, ~{eta:.0f}s left   ")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
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
    progress = _Progress(experiment, len(configs), len(configs) - len(todo))
    try:
        if jobs == 1 or len(todo) <= 1:
            for p, *args in todo:
                save_json(p, _run_record(*args))
                progress.update()
        else:
            pool = mp.Pool(min(jobs, len(todo)), initializer=_ignore_sigint)
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
             ("--dtype", "dtype", "float64", "float64 or float32")])
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


# ----------------------------------------------------------------------------- paper B, token retrieval


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
        p.add_argument("--scale", choices=["small", "full"], default="small",
                       help="small: laptop defaults (minutes); full: the paper's grid (hours)")
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
