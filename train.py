"""Optimizers, training loops, capacity search, and the runner behind `python train.py --help`."""
import os

# One BLAS thread per process, set before numpy is imported; parallelism is --jobs (RESULTS.md).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse           # noqa: E402
import ctypes             # noqa: E402
import glob               # noqa: E402
import hashlib            # noqa: E402
import json               # noqa: E402
import math               # noqa: E402
import multiprocessing as mp   # noqa: E402
import signal             # noqa: E402
import sys                # noqa: E402
import time               # noqa: E402

import numpy as np        # noqa: E402

import recall as rc       # noqa: E402
import theory             # noqa: E402

try:   # glibc hands large freed arrays back to the OS and page-faults them in again at every
    _libc = ctypes.CDLL("libc.so.6")   # step (a third of a transformer step's CPU time): keep them
    _libc.mallopt(-3, 32 << 20)        # M_MMAP_THRESHOLD
    _libc.mallopt(-1, 256 << 20)       # M_TRIM_THRESHOLD
except (OSError, AttributeError):      # not glibc: nothing to do
    pass


def sgd_step(params, grads, lr):
    for k in params:
        params[k] -= lr * grads[k]


def adam_init(params):
    return {"t": 0, "m": {k: np.zeros_like(p) for k, p in params.items()},
            "v": {k: np.zeros_like(p) for k, p in params.items()}}


def adam_step(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Adam with bias correction, in place; eps is added outside the square root:
        m <- b1 m + (1-b1) g,  v <- b2 v + (1-b2) g^2,
        p <- p - lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1-b1^t),  v_hat = v / (1-b2^t)."""
    t = state["t"] = state["t"] + 1
    for k in params:
        m, v, g = state["m"][k], state["v"][k], grads[k]
        m[:] = b1 * m + (1 - b1) * g                 # in place: the state keeps its arrays
        v[:] = b2 * v + (1 - b2) * g * g
        params[k] -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


def memoised(fn):
    cache = {}

    def call(n):
        return cache[n] if n in cache else cache.setdefault(n, fn(n))
    return call, cache


WIDEN = 64     # a capacity search widens its bracket up to WIDEN times its first top


def bisect_capacity(succeeds, lo, hi, ratio=1.01, widen=WIDEN):
    """Largest n with succeeds(n) (monotone in n), by bisection in log scale to hi/lo <= ratio
    from a guess [lo, hi] that widens to at most [1, widen * hi]; the caller reports either edge.
    lo is tried first (cheap: a trial that succeeds stops early), hi only if no probe failed."""
    lo, hi = int(lo), int(hi)
    if lo < 1 or hi < lo:
        raise ValueError(f"need 1 <= lo <= hi, got lo={lo}, hi={hi}")
    succeeds, top = memoised(succeeds)[0], widen * hi
    while lo > 1 and not succeeds(lo):
        lo, hi = max(1, lo // 2), lo
    while True:                                     # lo succeeds, or is 1
        a, b = theory.bisect_log(succeeds, lo, hi, ratio, integer=True, at_lo=True)
        if b < hi or not succeeds(hi):
            return a
        if hi == top:
            return hi
        lo, hi = hi, min(top, 2 * hi)


def fit_memory(forward, backward, params, fixed, y, lr, steps, stop_at=1.0, patience=None):
    """Full-batch Adam on the items x = 0..N-1 with labels y (N,) until the accuracy reaches
    stop_at, `steps` run out or ([ours]) it has not improved for `patience` steps."""
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
    """Train W (d, d) by full-batch Adam on N sphere embeddings, f(i) = i (A1); see fit_memory."""
    rng = np.random.default_rng([seed, d, N])
    fixed = {"E": rc.embeddings(N, d, rng, "sphere"), "U": rc.embeddings(N, d, rng, "sphere")}
    params = {"W": np.zeros((d, d))}                               # [ours] zero init
    out = fit_memory(rc.linear_memory_forward, rc.linear_memory_backward, params, fixed,
                     np.arange(N), lr, steps)                      # item i -> class i
    if not np.isfinite(params["W"]).all():
        raise FloatingPointError(f"linear memory diverged at N={N}, d={d}, lr={lr}")
    return dict(out, N=N)


def hebbian_accuracy(N, d, seed):
    """Accuracy of the untrained memory W = sum_i e_i u_i^T = E^T U, on the trial's draw."""
    rng = np.random.default_rng([seed, d, N])
    E, U = rc.embeddings(N, d, rng, "sphere"), rc.embeddings(N, d, rng, "sphere")
    logits = (E @ (E.T @ U)) @ U.T                                 # (N, N)  E W U^T, W = E^T U
    return rc.accuracy(logits, np.arange(N))


def mlp_memory_trial(N, d, m, M, seed, lr, steps, patience=None, dtype="float64"):
    """Train the MLP memory (A2) by full-batch Adam on N sphere embeddings until 99% recalled."""
    rng = np.random.default_rng([seed, d, m, M or 0, N])
    fixed = {"E": rc.embeddings(N, d, rng, "sphere"),
             "U": rc.embeddings(N if M is None else M, d, rng, "sphere")}
    params = {"W1": rng.standard_normal((d, m)) / np.sqrt(d), "b1": np.zeros(m),
              "W2": rng.standard_normal((m, d)) / np.sqrt(m)}
    fixed, params = ({k: v.astype(dtype) for k, v in x.items()} for x in (fixed, params))
    y = np.arange(N) if M is None else (np.arange(N) * M) // N    # (N,)
    out = fit_memory(rc.mlp_memory_forward, rc.mlp_memory_backward, params, fixed, y, lr, steps,
                     0.99, patience)
    return {"N": N, "first99": out["first99"], "best": out["best"], "steps": out["steps"]}


def transformer_trial(S, cfg):
    """transformer_run at each lr of cfg["lrs"] in turn, until one reaches 99% on fresh prompts."""
    runs = []
    for lr in cfg["lrs"]:
        runs.append(transformer_run(S, cfg, lr))
        if runs[-1]["first_fresh99"] is not None:
            break
    return {"S": S, "facts": S * S, "runs": runs, "fresh99": runs[-1]["first_fresh99"] is not None}


def transformer_run(S, cfg, lr):
    """Adam on fresh facts (S = R subjects/relations, D answers), lr cosine-decayed to 0 ([ours]),
    accuracy on n_test fresh prompts every eval_every steps.  Stops at 99% if prompts_per_fact = 0,
    else when each fact is right on that many, at `steps` or ([ours]) `patience` steps flat (A4)."""
    d, H, dh, m, dt = cfg["d"], cfg["H"], cfg["dh"], cfg["m"], np.dtype(cfg["dtype"])
    rng = np.random.default_rng([cfg["seed"], d, H, dh, m, S])
    task = rc.make_facts(S, S, cfg["D"], rng, T=cfg["T"])
    fixed = {"E": rc.embeddings(task["vocab"], d, rng).astype(dt),     # float32: same math
             "U": rc.embeddings(task["n_answers"], d, rng).astype(dt)}
    params = {k: v.astype(dt) for k, v in rc.init_transformer(d, H, dh, m, rng).items()}
    state = adam_init(params)
    k = cfg["prompts_per_fact"]
    every = (np.repeat(np.arange(S), S * k), np.tile(np.repeat(np.arange(S), k), S))  # (S S k,)

    def accuracy(facts=None):            # on n_test fresh prompts, or on `every` fact k times
        x, y = rc.sample_facts(task, cfg["n_test"] if facts is None else len(facts[0]), rng,
                               *(facts or ()))
        return rc.accuracy(rc.transformer_forward(params, fixed, x)[0], y)

    run = {"lr": lr, "first_fresh99": None}
    best, best_step = 0.0, 0
    for step in range(cfg["steps"] + 1):
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            run["fresh_acc"] = acc = accuracy()
            best_step, best = (step if acc > best + 0.005 else best_step), max(best, acc)
            if cfg["patience"] and step - best_step >= cfg["patience"] and best < 0.99:
                break                                              # [ours] no progress
            if acc >= 0.99:
                if run["first_fresh99"] is None:
                    run["first_fresh99"] = step
                if k == 0 or accuracy(every) == 1.0:       # k = 0: 99% is all facts asks
                    break
        if step == cfg["steps"]:
            break
        x, y = rc.sample_facts(task, cfg["batch"], rng)           # (B, T), (B,)
        logits, cache = rc.transformer_forward(params, fixed, x)
        _, dlogits = rc.cross_entropy(logits, y)
        lr_t = lr * (0.5 + 0.5 * math.cos(math.pi * step / cfg["steps"]))
        adam_step(params, rc.transformer_backward(dlogits, cache), state, lr_t)
    run["steps"] = step
    return run


def retrieval_grad(params, fixed, tokens, pos, labels, chunk=4096):
    """Mean cross-entropy and its gradient on tokens (N, L), pos (N,), labels (N,), in chunks."""
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


def zero_params(fixed):
    d, vdim, dt = fixed["E"].shape[1], fixed.get("W_mlp", fixed["E"]).shape[1], fixed["E"].dtype
    return {"WKQ": np.zeros((d, d), dt), "WV": np.zeros((vdim, d), dt)}


def three_step(fixed, tokens, pos, labels, eta, gamma=None, query_norm=None, chunk=4096):
    """The paper's three full-batch GD steps from zero on the same N samples:
        WV1  = -eta   grad_WV  L(WV=0,   WKQ=0)
        WKQ1 = -gamma grad_WKQ L(WV=WV1, WKQ=0)
        WV2  = WV1 - gamma grad_WV L(WV=WV1, WKQ=WKQ1)
    Returns {"WKQ": WKQ1 (d, d), "WV": WV2 (d, d) or (m, d)}.  Instead of gamma, query_norm = q
    sets gamma so that the learned query w = WKQ1 z_eos has norm q (WKQ1 is linear in gamma)."""
    if (gamma is None) == (query_norm is None):
        raise ValueError("give exactly one of gamma and query_norm")
    p0 = zero_params(fixed)  # exercise 7
    _, g0 = retrieval_grad(p0, fixed, tokens, pos, labels, chunk)
    WV1 = -eta * g0["WV"]
    _, g1 = retrieval_grad({"WKQ": p0["WKQ"], "WV": WV1}, fixed, tokens, pos, labels, chunk)
    if gamma is None:
        gamma = query_norm / np.linalg.norm(g1["WKQ"] @ fixed["z_eos"])
    WKQ1 = -gamma * g1["WKQ"]
    _, g2 = retrieval_grad({"WKQ": WKQ1, "WV": WV1}, fixed, tokens, pos, labels, chunk)
    return {"WKQ": WKQ1, "WV": WV1 - gamma * g2["WV"]}


def label_gradient(fixed, tokens, pos, labels, a):
    """grad_WV (float64) at attention a (N, L) while the softmax over labels is 1/V (WV = 0, or
    O(eta)): dZ_n = -Uc[y_n] / N (Uc = U - u_bar) gives -(E^T C + z_trig b^T) Uc / N, C[v, y] the
    attention on token v summed over rows labelled y, b[y] that on the marked position."""
    if "W_mlp" in fixed:
        raise ValueError("label_gradient: attention only (an MLP's features are not linear in C)")
    E, U, z = (fixed[k].astype(float) for k in ("E", "U", "z_trig"))
    V, rows = len(E), np.arange(len(labels))
    C = np.bincount((tokens * V + labels[:, None]).ravel(), a.ravel(), V * V).reshape(V, V)
    return -(E.T @ C + np.outer(z, np.bincount(labels, a[rows, pos], V))) @ (U - U.mean(0)) / len(a)


def three_step_limit(fixed, tokens, pos, labels, query_norm):
    """three_step (above) as eta -> 0 at query norm q: the same WKQ1 and, up to a positive scale,
    the same WV2 (MODEL.md 3), in O(N L + V^2 d).  gamma ~ 1/eta at fixed q, so WV2 ~ -gamma G2;
    steps 1 and 3 are label_gradients (attention 1/L, then WKQ1's), step 2 reads h . dphi from
    the (V, V) table E dphi^T.  An MLP is not linear in C: with one, three_step at eta = 1e-6."""
    if "W_mlp" in fixed:
        return three_step(fixed, tokens, pos, labels, 1e-6, query_norm=query_norm)
    E, U, z, z_eos = (fixed[k].astype(float) for k in ("E", "U", "z_trig", "z_eos"))
    (N, L), rows = tokens.shape, np.arange(len(labels))
    G0 = label_gradient(fixed, tokens, pos, labels, np.full((N, L), 1.0 / L))   # at zero
    dphi = (U - U.mean(0)) @ G0.T / N    # G1 = grad_WKQ at WV = -G0: dphi_n = dZ_n (-G0)^T
    da = (E @ dphi.T)[tokens, labels[:, None]]                     # (N, L)  h_ni . dphi_n
    da[rows, pos] += (dphi @ z)[labels]
    ds = (da - da.mean(1, keepdims=True)) / L                      # softmax backward at 1/L
    dw = E.T @ np.bincount(tokens.ravel(), ds.ravel(), len(E)) + ds[rows, pos].sum() * z
    w = -query_norm * dw / np.linalg.norm(dw)      # the query WKQ1 z_eos: G1 = dw z_eos^T
    WKQ1 = np.outer(w, z_eos) / (z_eos @ z_eos)
    s = (E @ w)[tokens]                                            # scores, as the forward's
    s[rows, pos] += z @ w
    G2 = label_gradient(fixed, tokens, pos, labels, rc.softmax(s, axis=1))   # float64 inside
    return {k: v.astype(fixed["E"].dtype) for k, v in (("WKQ", WKQ1), ("WV", -G2))}


def retrieval_adam(fixed, tokens, pos, labels, steps, lr, chunk=4096):
    """Longer training of the same model from zero: full-batch Adam on the same N samples."""
    params = zero_params(fixed)
    state = adam_init(params)
    for _ in range(steps):
        _, grads = retrieval_grad(params, fixed, tokens, pos, labels, chunk)
        adam_step(params, grads, state, lr)
    return params


def gradinfo_decoder(fixed, L):
    """[ours] decode(G): labels (V,) from G = grad_WV at zero alone (MODEL.md 3): token x's is
    argmax_v C_hat[x, v], C_hat = (E~^T)^+ (-G) Uc^+, E~ = E + z_trig / L, Uc = U - u_bar."""
    E, U = fixed["E"], fixed["U"]
    left, right = np.linalg.pinv((E + fixed["z_trig"] / L).T), np.linalg.pinv(U - U.mean(0))
    return lambda G: (left @ -G @ right).argmax(1)


RESULTS = "results"         # the default folder of the records


def config_key(config):
    blob = json.dumps(config, sort_keys=True, default=float)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def unique(configs):          # the configs in order, each once: identical configs are one run
    return list({config_key(c): c for c in configs}.values())


def save_json(path, obj):
    """Write then rename, so no reader sees half a file; NumPy values are written as lists."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=lambda o: o.tolist())
    os.replace(tmp, path)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def load_records(out, experiment, scale=None):
    """The finished records of the newest sweep of `experiment` at `scale` (None: any) in `out`,
    and that sweep's _set-<scale>.json (scale, overrides, keys); ([], None) if there is none."""
    folder = os.path.join(out, experiment)
    sets = sorted(glob.glob(os.path.join(folder, f"_set-{scale or '*'}.json")),
                  key=os.path.getmtime)
    if not sets:
        return [], None
    listed = read_json(sets[-1])
    paths = [os.path.join(folder, key + ".json") for key in listed["keys"]]
    return [read_json(p) for p in paths if os.path.exists(p)], listed


def _run_record(job):
    path, experiment, run_one, config = job
    t0 = time.time()
    result = run_one(config)
    return path, {"experiment": experiment, "config": config, "result": result,
                  "seconds": round(time.time() - t0, 3)}


def sweep(experiment, configs, run_one, out=RESULTS, jobs=1, scale="custom", overrides=None,
          only=None):
    """Run run_one(config) -> result for each config (or config `only`) that has no record yet,
    saving OUT/<experiment>/<key>.json as each finishes; return the records.  Configs carry their
    seeds, so results depend neither on `jobs` nor on order; run_one must be module-level."""
    configs = unique(configs)
    keys = [config_key(c) for c in configs]
    folder = os.path.join(out, experiment)
    listing = (os.path.join(folder, f"_set-{scale}.json"),   # the record set a figure draws
               {"experiment": experiment, "scale": scale, "set": overrides or {}, "keys": keys})
    if only is not None:                   # main checks it before --list; this for Python callers
        if not 0 <= only < len(configs):
            raise ValueError(f"only must be in [0, {len(configs)}), got {only}")
        configs, keys = [configs[only]], [keys[only]]
    paths = [os.path.join(folder, k + ".json") for k in keys]
    todo = [(p, experiment, run_one, c) for c, p in zip(configs, paths) if not os.path.exists(p)]
    if not todo:
        save_json(*listing)
        sys.stderr.write(f"{experiment}: nothing to run, every record is in {folder}/\n")
    pool = (mp.Pool(min(jobs, len(todo)), signal.signal, (signal.SIGINT, signal.SIG_IGN))
            if jobs > 1 and len(todo) > 1 else None)  # the workers leave Ctrl-C to the parent
    show, t0, done = sys.stderr.isatty() and todo, time.time(), len(configs) - len(todo)
    try:
        runs = pool.imap_unordered(_run_record, todo) if pool else map(_run_record, todo)
        for n, (path, record) in enumerate(runs, 1):
            save_json(path, record)
            save_json(*listing)     # not before a record: a run that fails at once keeps the last
            if show:
                el = time.time() - t0
                sys.stderr.write(f"\r{experiment}: {done + n}/{len(configs)} done, {el:.0f} s, "
                                 f"~{el / n * (len(todo) - n):.0f} s left   ")
    finally:
        if pool:
            pool.terminate()                 # all runs are in, or Ctrl-C: drop those in flight
        if show:
            sys.stderr.write("\n")
    return [read_json(p) for p in paths]


def parse_value(key, text, current, choices=None):
    """A --set value: JSON (a plain word is text, `none` is null), of the type the grid field
    `key` has now (an int where a float is, a number where None is); a list field takes one
    value or a list.  Numbers stay > 0 (>= 0 where one is 0 now); a text stays in `choices`."""
    try:
        value = json.loads("null" if text.lower() == "none" else text)
    except ValueError:
        value = text
    examples = current if isinstance(current, list) else [current]
    known = [x for x in examples if x is not None]
    kinds = {type(x) for x in examples}                    # NoneType where None is
    if float in kinds or kinds <= {type(None)}:            # an int for a float, a number for None
        kinds |= {int, float}
    positive = all(type(x) in (int, float) and x >= 0 for x in known)   # numbers, none below 0
    sign = " non-negative" if 0 in known else " positive"
    want = (f"one of {', '.join(choices)}" if choices else "a positive number or none" if not known
            else f"a{sign * positive} {type(known[0]).__name__} like {json.dumps(known[0])}"
            + " or a list of them" * isinstance(current, list))
    values = value if isinstance(value, list) else [value]
    for v in values:
        if type(v) not in kinds or (positive and type(v) in (int, float) and (
                v < 0 or v == 0 not in known)) or (choices and v not in choices):
            quote = " (as JSON, in single quotes)" * (value is text and not choices)
            raise ValueError(f"--set {key}={text}: expected {want}{quote}")
    if known and all(type(x) is float for x in known):    # 1000 and 1000.0: one config, not two
        values = [v if v is None else float(v) for v in values]
    return values if isinstance(current, list) else values[0]


class _Parser(argparse.ArgumentParser):        # a usage error: one line, exit status 2
    def error(self, message):       # an unquoted --set value that the shell split into words
        unquoted = "unrecognized" in message and "--set" in sys.argv
        hint = " (put a --set value in single quotes: --set 'KEY=VALUE')" * unquoted
        self.exit(2, f"{self.prog}: error: {message}{hint} (see --help)\n")


def build_parser(experiments):
    parser = _Parser(prog="train.py", description="Run one experiment: OUT/<experiment>/*.json.")
    sub = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name, e in experiments.items():
        p = sub.add_parser(name, help=e["help"], description=e["help"])
        p.add_argument("--scale", choices=["tiny", "small", "full"], default="small")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help=f"set a field of {name.upper()} (experiments.py) to single-quoted "
                       f"JSON (read by {name}_configs): {', '.join(sorted(e['grid']['small']))}")
        p.add_argument("--jobs", type=int, default=1, help="configurations run in parallel")
        p.add_argument("--seed", type=int, default=0, help="base random seed (default 0)")
        p.add_argument("--out", default=RESULTS, help="results folder (default: results)")
        p.add_argument("--list", action="store_true", help="print the configurations and exit")
        p.add_argument("--only", type=int, metavar="I", help="run only configuration I")
    return parser


def main(argv=None):
    import experiments as ex          # the experiments import this module, so import them here
    if hasattr(signal, "SIGPIPE"):    # `--list | head` ends quietly, as a Unix tool does
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = build_parser(ex.EXPERIMENTS)
    args = parser.parse_args(argv)
    name, e = args.experiment, ex.EXPERIMENTS[args.experiment]
    texts = {k.strip(): v.strip() for k, _, v in (s.partition("=") for s in args.set)}  # "d = 8"
    grid = e["grid"][args.scale]
    try:
        if args.seed < 0 or args.jobs < 1:
            raise ValueError(f"--seed {args.seed} --jobs {args.jobs}: need a seed >= 0, jobs >= 1")
        unknown = sorted(set(texts) - set(grid))
        if unknown or len(texts) < len(args.set):       # a field given twice: which one counts?
            raise ValueError(f"--set {unknown[0]}: not a field of {name}'s grid; its fields are "
                             f"{', '.join(sorted(grid))}" if unknown else
                             f"--set names a field twice ({' '.join(args.set)}): give each once")
        sets = {k: parse_value(k, t, grid[k], ex.CHOICES.get(k)) for k, t in texts.items()}
        configs = unique(e["configs"](dict(grid, **sets), args.seed))   # as sweep runs them
        if not configs or not 0 <= (args.only or 0) < len(configs):
            raise ValueError(f"no configuration of {name} is left with these settings (the rules "
                             f"that drop some: {name}_configs in experiments.py)" if not configs
                             else f"--only must be in [0, {len(configs)}), got {args.only}")
        if args.list:
            for i, c in enumerate(configs):
                done = os.path.exists(os.path.join(args.out, name, config_key(c) + ".json"))
                if args.only in (None, i):
                    print(f"{i}\t{'done' if done else 'todo'}\t{json.dumps(c, sort_keys=True)}")
            return
        t0 = time.time()
        records = sweep(name, configs, e["one"], args.out, args.jobs, args.scale, sets, args.only)
    except ValueError as err:                            # a bad combination of option values
        parser.error(str(err))
    except OSError as err:                               # e.g. --out names a file
        parser.error(f"cannot write the results: {err}")
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{name}: interrupted; finished runs are saved in {args.out}/{name}/,"
                         " rerun to continue\n")
        sys.exit(130)
    print(e["summary"](records) if args.only is None else f"{name}: configuration {args.only} "
          "done; a run without --only runs the others and prints the summary")
    print(f"{name}: {len(records)} record{'s' * (len(records) != 1)} in {args.out}/{name}/ "
          f"({time.time() - t0:.1f}s); draw them: python plots.py {name} --scale {args.scale}"
          + (f" --results {args.out}" if args.out != RESULTS else ""))


if __name__ == "__main__":
    main()
