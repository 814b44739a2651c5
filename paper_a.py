"""paper_a.py -- paper A's experiments (Nichani, Lee, Bietti, ICLR 2025), one block each:

    NAME = {"small": {...}, "tiny": {...}, "full": {...}}   its grid per scale
    name_configs(grid, seed) -> [config]                    one config per run
    name_one(config) -> result                              runs one config
    name_summary(records) -> str                            the table it prints

`python run.py NAME` runs one (EXPERIMENTS, at the end).  Setups A1-A5: MODEL.md."""
import itertools
import math

import numpy as np

import recall as rc
import theory
import train


# ------------------------------------------------------------------ fig5: Fig. 5 (A5)

FIG5 = {"small": dict(S=16, R=4, D=8, T=32, lr=0.1, batch=1024, init=1e-5, steps=8192,
                      n_test=4096, eval_every=64, dtype="float32", seeds=5)}
FIG5["tiny"] = dict(FIG5["small"], lr=0.3, batch=256, steps=2048, n_test=1024,
                    eval_every=32, seeds=2)


def fig5_configs(grid, seed):
    """One run per seed (seed, seed + 1, ...): task, test set and batches all follow it."""
    return [dict(grid, seed=s) for s in range(seed, seed + grid["seeds"])]


def fig5_one(cfg):
    """A5: one-hot linear attention by SGD from a tiny init; fig5_losses every eval_every."""
    rng = np.random.default_rng(cfg["seed"])
    dt = np.dtype(cfg["dtype"])
    task = rc.make_facts(cfg["S"], cfg["R"], cfg["D"], rng, T=cfg["T"], structured=True)
    d = task["vocab"]                                           # one-hot: d = vocab = 41
    fixed = {"E": rc.embeddings(d, d, rng, "onehot").astype(dt)}
    params = {"A": np.full((d, d), cfg["init"], dtype=dt),
              "WV": np.full((d, task["n_answers"]), cfg["init"], dtype=dt)}
    test_x, test_y = rc.sample_facts(task, cfg["n_test"], rng)

    def evaluate(params):
        logits, _ = rc.linear_attention_forward(params, fixed, test_x)
        total, relation, subject = fig5_losses(logits, test_y, cfg["D"])
        return {"total": round(float(total), 6), "relation": round(float(relation), 6),
                "subject": round(float(subject), 6), "accuracy": rc.accuracy(logits, test_y)}

    return train.linear_attention_sgd(task, params, fixed, cfg["lr"], cfg["batch"],
                                      cfg["steps"], rng, evaluate, cfg["eval_every"])


def fig5_losses(logits, y, D):
    """Total, relation-only -log sum_{a in y's block} p(a), subject-only -log sum_{a = y
    mod D} p(a): is the relation known?  the subject's slot?  (means over rows)"""
    p = rc.softmax(logits)                                      # (B, D R)
    rows = np.arange(len(y))
    blocks = p.reshape(len(y), -1, D)                           # (B, R, D)
    relation = blocks[rows, y // D].sum(1)                      # (B,)
    subject = blocks[rows, :, y % D].sum(1)
    return -np.log(p[rows, y]).mean(), -np.log(relation).mean(), -np.log(subject).mean()


def fig5_stages(curve, n_answers, D):
    """Where the stages end (None: never; A5): the plateau, when the total loss drops below
    (ln n_answers + ln D)/2; the hallucination stage, below ln(D)/2."""
    step, total = np.asarray(curve["step"]), np.asarray(curve["total"])
    ends = []
    for threshold in ((np.log(n_answers) + np.log(D)) / 2, np.log(D) / 2):
        below = step[total < threshold]
        ends.append(int(below[0]) if len(below) else None)
    return tuple(ends)


def fig5_summary(records):
    lines, ends = [], []
    for r in sorted(records, key=lambda r: r["config"]["seed"]):
        curve, cfg = r["result"], r["config"]
        plateau, stage = fig5_stages(curve, cfg["R"] * cfg["D"], cfg["D"])
        ends.append((plateau, stage))
        lines.append(f"fig5 seed {cfg['seed']}: plateau until step {plateau}, hallucination "
                     f"(total loss near ln {cfg['D']}) until step {stage}; final total loss "
                     f"{curve['total'][-1]:.4f}, test accuracy {curve['accuracy'][-1]:.3f}")
    finished = all(None not in e for e in ends)
    if len(ends) > 1 and finished:
        mean, sd = np.mean(ends, 0), np.std(ends, 0, ddof=1)
        every = records[0]["config"]["eval_every"]
        lines.append(f"fig5 over {len(ends)} seeds: plateau until step {mean[0]:.0f} ± "
                     f"{sd[0]:.0f}, hallucination until step {mean[1]:.0f} ± {sd[1]:.0f} "
                     f"(mean ± sd; the loss is read every {every} steps)")
    return "\n".join(lines)


# ------------------------------------------------------------------ linear: Fig. 1 left (A1)

LINEAR = {"small": dict(d=[8, 11, 16, 22, 32], seeds=3, lr=1000.0, steps=1024, ratio=1.03,
                        c_lo=4.0, c_hi=0.8, dmax=256)}
LINEAR["tiny"] = dict(LINEAR["small"], d=[8, 11, 16], seeds=2)
LINEAR["full"] = dict(LINEAR["small"], d=[8, 11, 16, 22, 32, 45, 64, 90, 128, 181, 256],
                      seeds=5, steps=4096, ratio=1.01, c_lo=None, c_hi=None)


def linear_configs(grid, seed):
    """One capacity search per (d, seed): in the bracket [d, d^2/2] (A1) if c_lo is None,
    else in [N(c_lo), N(c_hi)] with d^2 = c N ln N ([ours])."""
    out = []
    for d in grid["d"]:
        if d > grid["dmax"]:
            continue
        lo, hi = d, d * d // 2
        if grid["c_lo"] is not None:
            lo = max(2, int(theory.linear_capacity_N(d, grid["c_lo"])))
            hi = min(hi, int(theory.linear_capacity_N(d, grid["c_hi"])) + 1)
        lo, hi = sorted((lo, hi))       # N falls as c grows: c_lo > c_hi, else they swap
        for s in range(seed, seed + grid["seeds"]):
            out.append({"d": d, "seed": s, "lr": grid["lr"], "steps": grid["steps"],
                        "ratio": grid["ratio"], "lo": lo, "hi": hi})
    return out


def linear_one(cfg):
    """A d x d linear memory's capacity: trained (99%, then 100%) and Hebbian (W = E^T U)."""
    d, seed, ratio = cfg["d"], cfg["seed"], cfg["ratio"]

    def run(N):
        return train.linear_memory_trial(N, d, seed, cfg["lr"], cfg["steps"])
    trial, memo = train.memoised(run)
    cap99 = train.bisect_capacity(lambda N: trial(N)["first99"] is not None,
                                  cfg["lo"], cfg["hi"], ratio)
    cap100 = train.bisect_capacity(lambda N: trial(N)["first100"] is not None,
                                   cap99, cap99, ratio, widen=1)
    hebbian, heb_memo = train.memoised(lambda N: train.hebbian_accuracy(N, d, seed))
    hebb99 = train.bisect_capacity(lambda N: hebbian(N) >= 0.99, 2, max(3, d * d // 2), ratio)
    hebb100 = train.bisect_capacity(lambda N: hebbian(N) == 1.0, hebb99, hebb99, ratio, widen=1)
    return {"cap99": cap99, "cap100": cap100, "hebb99": hebb99, "hebb100": hebb100,
            "lo_fails": trial(cap99)["first99"] is None,
            "hi_succeeds": cap99 == train.WIDEN * cfg["hi"],
            "trials": [memo[N] for N in sorted(memo)],
            "hebbian_trials": [[N, heb_memo[N]] for N in sorted(heb_memo)]}


def linear_fits(records):
    """Per curve: c of d^2 = c N ln N (a geometric mean), its bits/param and 95% interval."""
    out = {}
    for key in ("cap99", "cap100", "hebb99", "hebb100"):
        points = [(r["result"][key], r["config"]["d"]) for r in records if r["result"][key] > 1]
        if not points:
            continue
        N, d = np.array(points, float).T
        c = theory.fit_constant(N * np.log(N), d * d)
        out[key] = {"c": c, "bits_per_param": theory.bits_per_param_linear(c),
                    "c_95": seed_interval(d, theory.fit_constant, N * np.log(N), d * d)}
    return out


def linear_summary(records):
    rows = ["| d | seeds | capacity N: trained 99% | trained 100% | Hebbian 100% | "
            "c = d^2/(N ln N), 99% |", "|---|---|---|---|---|---|"]
    kept = inside(records)
    for d in sorted({r["config"]["d"] for r in kept}):
        res = [r["result"] for r in kept if r["config"]["d"] == d]
        N = {k: np.mean([x[k] for x in res]) for k in ("cap99", "cap100", "hebb100")}
        c = d * d / (N["cap99"] * np.log(N["cap99"]))           # inf if N = 1
        rows.append(f"| {d} | {len(res)} | {N['cap99']:.1f} | {N['cap100']:.1f} | "
                    f"{N['hebb100']:.1f} | {c:.2f} |")
    return "\n".join(rows) + "\n" + fits_text("linear", linear_fits(kept), records)


# ------------------------------------------------------------------ shared by the searches

def inside(records):
    """The records whose search ended inside its bracket (an edge is a bound, not a capacity)."""
    return [r for r in records if not (r["result"]["lo_fails"] or r["result"]["hi_succeeds"])]


def fits_text(name, fits, searches=()):
    """One line per fit; a pair [lo, hi], named *_95, is a 95% interval (seed_interval)."""
    lines = []
    for key, fit in fits.items():
        parts = [f"{k} = {_number_text(x)}" for k, x in fit.items()]
        lines.append(f"{name} {key}: " + ", ".join(parts))
    if any(k.endswith("_95") for fit in fits.values() for k in fit):
        lines.append("(*_95: 95% bootstrap interval over seeds)")
    edges = len(searches) - len(inside(searches))
    if edges:
        lines.append(f"{edges} of {len(searches)} searches end at a bracket edge: bounds, "
                     "left out of every mean, fit and figure")
    return "\n".join(lines)


def _number_text(x):
    if isinstance(x, str):
        return x
    if not isinstance(x, list):
        return f"{x:.3g}"
    if math.isnan(x[0]):                     # an interval needs two seeds of every size
        return "n/a (one seed)"
    return f"[{x[0]:.3g}, {x[1]:.3g}]"


def seed_interval(groups, stat, *arrays, resamples=1000, seed=0):
    """95% bootstrap interval of stat(*(a[k] for a in arrays)) over index arrays k that
    redraw each group's runs (a size's seeds): rough with three seeds, nan with one."""
    groups = np.asarray(groups)
    runs = [np.flatnonzero(groups == g) for g in sorted(set(groups.tolist()))]
    if min(len(k) for k in runs) < 2:
        return [math.nan, math.nan]
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(resamples):
        k = np.concatenate([rng.choice(k, len(k)) for k in runs])
        stats.append(stat(*(a[k] for a in arrays)))
    return [float(v) for v in np.nanpercentile(stats, [2.5, 97.5])]


# ------------------------------------------------------------------ mlp: Fig. 1 right, 6 (A2)

MLP = {"small": dict(d=[8, 11, 16], alpha=[1, 2, 4, 8], M=[None, 32], max_md=1024, seeds=3,
                     lr=0.03, steps=2048, patience=256, ratio=1.04, dmax=90, dtype="float32")}
MLP["tiny"] = dict(MLP["small"], d=[8, 16], max_md=256, steps=1024, ratio=1.1, seeds=1)
MLP["full"] = dict(MLP["small"], d=[8, 11, 16, 22, 32, 45, 64, 90], max_md=None, seeds=5,
                   steps=32768, patience=None, ratio=1.01)


def mlp_configs(grid, seed):
    """A capacity search per (M, d, alpha, seed), m d <= max_md, biggest first; M = None:
    f(i) = i, else i M // N; the bracket [ours] [Nref/2, 2 Nref] about the authors' line."""
    out = []
    for M, d, alpha in itertools.product(grid["M"], grid["d"], grid["alpha"]):
        md = alpha * d * d
        regime = "M=N" if M is None else "M=32"
        too_big = grid["max_md"] is not None and md > grid["max_md"]
        if d > grid["dmax"] or too_big:
            continue
        ref = theory.mlp_reference_N(md, regime)
        for s in range(seed, seed + grid["seeds"]):
            out.append({"d": d, "alpha": alpha, "M": M, "regime": regime, "seed": s,
                        "lr": grid["lr"], "steps": grid["steps"], "patience": grid["patience"],
                        "ratio": grid["ratio"], "dtype": grid["dtype"],
                        "lo": max(2, int(ref / 2)), "hi": int(2 * ref) + 1})
    return sorted(out, key=lambda c: -c["alpha"] * c["d"] ** 2)


def mlp_one(cfg):
    """Capacity (99% criterion) of one MLP memory relu(E[x] W1 + b1) W2 U^T, m = alpha d."""
    d, M = cfg["d"], cfg["M"]
    m = cfg["alpha"] * d

    def run(N):
        return train.mlp_memory_trial(N, d, m, M, cfg["seed"], cfg["lr"], cfg["steps"],
                                      cfg["patience"], cfg["dtype"])
    trial, memo = train.memoised(run)
    cap = train.bisect_capacity(lambda N: trial(N)["first99"] is not None, cfg["lo"],
                                cfg["hi"], cfg["ratio"])
    return {"cap99": cap, "m": m, "md": m * d, "lo_fails": trial(cap)["first99"] is None,
            "hi_succeeds": cap == train.WIDEN * cfg["hi"],
            "trials": [memo[N] for N in sorted(memo)]}


def mlp_fits(records):
    """Per regime: c of the authors' form (m d = c N ln N, or c N for M = 32), its bits per
    parameter, the log-log slope of N against m d; 95% intervals over seeds."""
    out = {}
    for regime in ("M=N", "M=32"):
        rs = [r for r in records if r["config"]["regime"] == regime and r["result"]["cap99"] > 1]
        if len(rs) < 2:
            continue
        N = np.array([r["result"]["cap99"] for r in rs], float)
        md = np.array([r["result"]["md"] for r in rs], float)
        size = [f"{r['config']['d']} {r['config']['alpha']}" for r in rs]
        stored = N * np.log(N) if regime == "M=N" else N        # the authors' form
        c = theory.fit_constant(stored, md)
        out[regime] = {"c": c, "bits_per_param": theory.bits_per_param_mlp(c, regime),
                       "loglog_slope": theory.loglog_slope(md, N),
                       "c_95": seed_interval(size, theory.fit_constant, stored, md),
                       "slope_95": seed_interval(size, theory.loglog_slope, md, N)}
    return out


def mlp_summary(records):
    return fits_text("mlp", mlp_fits(inside(records)), records)


# ------------------------------------------------------------------ facts: Fig. 4 left (A4)

FACTS = {"small": dict(d=[16, 24, 32, 40], a=[1], b=[1], H=8, D=8, T=32, lrs=[3e-2],
                       steps=3000, batch=256, eval_every=50, patience=None, n_test=1024,
                       prompts_per_fact=0, bracket=[0.07, 0.14], dtype="float32", dmax=64,
                       seeds=3)}
FACTS["tiny"] = dict(FACTS["small"], d=[16, 24], steps=800, batch=128, patience=300,
                     bracket=[0.025, 0.1], seeds=1)
FACTS["full"] = dict(FACTS["small"], d=[16, 32, 64], a=[4, 2, 1, 0.5, 0.25], H=8,
                     b=[4, 2, 1, 0.5, 0.25], lrs=[1e-3, 3e-3, 1e-2], steps=16384, batch=1024)
RUN_FIELDS = ("D", "T", "lrs", "steps", "batch", "eval_every", "patience", "n_test",
              "prompts_per_fact", "dtype")          # what transformer_run reads of a grid


def facts_configs(grid, seed):
    """A bisection on S per size: H heads of dh = a d / H, m = b d (sizes with a whole dh
    and m); the bracket [ours] S in sqrt(bracket * params), widened if need be."""
    keep = {k: grid[k] for k in RUN_FIELDS}
    out = []
    for d, a, b in itertools.product(grid["d"], grid["a"], grid["b"]):
        H, dh, m = grid["H"], a * d / grid["H"], b * d
        if d > grid["dmax"] or dh != int(dh) or dh < 1 or m != int(m) or m < 1:
            continue
        params = theory.transformer_params(d, H, int(dh), int(m))
        lo = max(1, int(math.sqrt(grid["bracket"][0] * params)))
        hi = int(math.ceil(math.sqrt(grid["bracket"][1] * params)))
        for s in range(seed, seed + grid["seeds"]):
            out.append(dict(keep, d=d, H=H, dh=int(dh), m=int(m), a=a, b=b, seed=s, lo=lo, hi=hi))
    return sorted(out, key=lambda c: -theory.transformer_params(c["d"], c["H"], c["dh"], c["m"]))


def facts_one(cfg):
    """One size's capacity in facts S^2, by bisection on S: >= 99% on fresh prompts."""
    trial, memo = train.memoised(lambda S: train.transformer_trial(S, cfg))
    S99 = train.bisect_capacity(lambda S: trial(S)["fresh99"], cfg["lo"], cfg["hi"], 1.0)
    params = theory.transformer_params(cfg["d"], cfg["H"], cfg["dh"], cfg["m"])
    return {"params": params, "S_fresh99": S99, "facts_fresh99": S99 * S99,
            "lo_fails": not trial(S99)["fresh99"], "hi_succeeds": S99 == train.WIDEN * cfg["hi"],
            "trials": [memo[S] for S in sorted(memo)]}


def facts_family(record):
    """The family of a record: its name in families, arms and budget; a and b in facts."""
    c = record["config"]
    return c.get("family", f"a={c['a']:g} b={c['b']:g}")


def grown_params(record):
    """The parameters a fit reads: all of them, or the part that grows along an arm."""
    c = record["config"]
    if c.get("x") == "mlp":
        return 2 * c["m"] * c["d"]
    if c.get("x") == "attention":
        return 4 * c["H"] * c["dh"] * c["d"]
    return record["result"]["params"]


def facts_fits(records):
    """Per family: k of facts = k params (geometric mean), bits/param k log2 D, the log-log
    slope (1 = linear); 95% intervals over seeds."""
    out = {}
    for family in dict.fromkeys(facts_family(r) for r in records):
        points = [(grown_params(r), r["result"]["facts_fresh99"]) for r in records
                  if facts_family(r) == family and r["result"]["facts_fresh99"] > 0]
        if not points:
            continue
        P, F = np.array(points, float).T
        k = theory.fit_constant(P, F)
        out[family] = {
            "facts_per_param": k, "bits_per_param": k * math.log2(records[0]["config"]["D"]),
            "loglog_slope": theory.loglog_slope(P, F),
            "facts_per_param_95": seed_interval(P, theory.fit_constant, P, F),
            "slope_95": seed_interval(P, theory.loglog_slope, P, F)}
    return out


def facts_summary(records):
    rows = ["| family | d | H | dh | m | params | seed | S (fresh 99%) | facts/param |",
            "|---" * 9 + "|"]
    for r in records:
        c, x = r["config"], r["result"]
        edge = " (edge: at most)" if x["lo_fails"] else ""
        if x["hi_succeeds"]:
            edge = " (edge: at least)"
        rows.append(f"| {facts_family(r)} | {c['d']} | {c['H']} | {c['dh']} | {c['m']} | "
                    f"{x['params']} | {c['seed']} | {x['S_fresh99']}{edge} | "
                    f"{x['facts_fresh99'] / x['params']:.3f} |")
    return "\n".join(rows) + "\n" + fits_text("facts", facts_fits(inside(records)), records)


# ------------------------------------------------------------------ families, arms, budget (A4)
# Each is facts' runs per family: a name and the facts fields it sets (a and b may be lists;
# x: "mlp" or "attention", the part whose parameters its fit reads).

FAMILIES = {"small": dict(FACTS["small"], d=[16, 24, 32, 48], families=[
    {"name": "attention-dominated", "a": 4, "b": 0.25, "H": 2},
    {"name": "balanced", "a": 1, "b": 1, "H": 2},
    {"name": "MLP-dominated", "a": 0.25, "b": 4, "H": 2},
    {"name": "balanced, 8 heads", "a": 1, "b": 1, "H": 8}])}
FAMILIES["tiny"] = dict(FACTS["tiny"], families=FAMILIES["small"]["families"][::2])
ARMS = {"small": dict(FACTS["small"], d=[16], families=[
    {"name": "MLP grows (one head, dh = 4)", "a": 0.25, "b": [1, 2, 4, 8, 16], "H": 1,
     "x": "mlp"},
    {"name": "MLP grows (two heads, dh = 8)", "a": 1, "b": [1, 2, 4, 8, 16], "H": 2, "x": "mlp"}]
    + [{"name": "attention grows (heads of dh = 4, m = 1)", "a": H / 4, "b": 0.0625, "H": H,
        "x": "attention"} for H in (1, 2, 4, 8, 16)])}            # one name: one arm, one fit
ARMS["tiny"] = dict(FACTS["tiny"], d=[16], families=[
    dict(f, **{k: f[k][:2] for k in "ab" if isinstance(f[k], list)})
    for f in ARMS["small"]["families"][:4]])
BUDGET = {"full": dict(FACTS["small"], d=[16, 32], H=8, lrs=[1e-3, 3e-3, 1e-2], eval_every=100,
                       families=[{"name": f"{steps} x {batch}", "steps": steps, "batch": batch}
                                 for steps, batch in ((3000, 256), (16384, 256), (16384, 1024))])}
BUDGET["small"] = dict(BUDGET["full"], families=BUDGET["full"]["families"][:2])
BUDGET["tiny"] = dict(FACTS["tiny"], families=[{"name": "400 x 64", "steps": 400, "batch": 64}])


def families_configs(grid, seed):
    """facts_configs per family, each config named by its family."""
    out = []
    for f in grid["families"]:
        sets = {k: v for k, v in f.items() if k not in ("name", "x")}
        if "name" not in f or not set(sets) <= set(grid) or f.get("x") not in (None, "mlp",
                                                                             "attention"):
            raise ValueError('each family is {"name": ..., and facts fields: a, b, H, '
                             f'steps, ...; "x": "mlp" or "attention"}}, got {f}')
        for k in ("a", "b"):
            if k in sets and not isinstance(sets[k], list):
                sets[k] = [sets[k]]
        for c in facts_configs(dict(grid, **sets), seed):
            out.append(dict(c, family=f["name"], **({"x": f["x"]} if "x" in f else {})))
    return out


# ------------------------------------------------------------------ tradeoff: Fig. 4 right

TRADEOFF = {"small": dict(d=16, dh=4, S=8, H=[1, 2, 3, 4, 6], m=[1, 2, 4, 8, 16, 64, 256],
                          D=8, T=32, lrs=[3e-2, 1e-2], steps=1500, batch=256, eval_every=50,
                          patience=300, n_test=1024, prompts_per_fact=4, dtype="float32",
                          seeds=3)}
TRADEOFF["tiny"] = dict(TRADEOFF["small"], H=[1, 4], m=[1, 8], steps=400, seeds=1)
TRADEOFF["full"] = dict(TRADEOFF["small"], d=32, dh=8, S=32, H=[1, 2, 4, 8], m=[1, 8, 32, 128],
                        lrs=[1e-3, 3e-3, 1e-2], steps=16384, batch=1024, patience=None)


def tradeoff_configs(grid, seed):
    """One run per (H, m, seed); full: the authors' instance (d = 32, dh = 8, S = R = 32) on
    4 x 4 of their H in 1..32, m in 1..128, at their budget."""
    out = []
    for H, m in itertools.product(grid["H"], grid["m"]):
        for s in range(seed, seed + grid["seeds"]):
            out.append(dict(grid, H=H, m=m, seed=s))
    return sorted(out, key=lambda c: -c["H"] * c["dh"] - c["m"])


def tradeoff_one(cfg):
    """One cell of the heat map: H heads, MLP width m, one fact table; its best lr."""
    trial = train.transformer_trial(cfg["S"], cfg)
    best = max(trial["runs"], key=lambda r: r["fresh_acc"])
    return {"attn_params": cfg["d"] * cfg["dh"] * cfg["H"], "mlp_params": cfg["d"] * cfg["m"],
            "facts": trial["facts"], "fresh_acc": best["fresh_acc"],
            "fresh99": trial["fresh99"], "runs": trial["runs"]}


def tradeoff_cells(records):
    """{(attention params, MLP params): (mean, sd) over seeds of the fresh-prompt accuracy}."""
    accs = {}
    for x in (r["result"] for r in records):
        accs.setdefault((x["attn_params"], x["mlp_params"]), []).append(x["fresh_acc"])
    return {key: (float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0)
            for key, v in accs.items()}


def tradeoff_frontier(records):
    """The frontier: [(attention size, least MLP size with mean accuracy >= 0.99, or None)]."""
    cells = tradeoff_cells(records)
    front = []
    for a in sorted({a for a, _ in cells}):
        enough = [m for (a2, m), (acc, _) in cells.items() if a2 == a and acc >= 0.99]
        front.append((a, min(enough, default=None)))          # None: no cell of a is
    return front


def tradeoff_fits(records):
    """[ours] Least-squares c_attn, c_mlp of attn/c_attn + mlp/c_mlp = facts through the
    measured frontier (the authors': 4.49, 2.25)."""
    facts = records[0]["result"]["facts"]
    front = [(a, m) for a, m in tradeoff_frontier(records) if m is not None]
    falls = all(m1 >= m2 for (_, m1), (_, m2) in zip(front, front[1:]))  # more attn, less MLP
    out = {"facts": facts, "frontier points": len(front), "monotone": "yes" if falls else "no"}
    if len(front) < 2:                                   # one point: no line, and no order
        out.update(monotone="n/a", fit="needs two frontier points")
        return {"frontier": out}
    target = np.full(len(front), float(facts))
    inverse = np.linalg.lstsq(np.array(front, float), target, rcond=None)[0]
    out["attn_params_per_fact"] = float(1 / inverse[0])
    out["mlp_params_per_fact"] = float(1 / inverse[1])
    return {"frontier": out}


def tradeoff_summary(records):
    c = records[0]["config"]
    cells = tradeoff_cells(records)
    attn = sorted({a for a, _ in cells})
    mlp = sorted({m for _, m in cells}, reverse=True)
    seeds = len({r["config"]["seed"] for r in records})
    heads = [f"{a} (H={a // (c['d'] * c['dh'])})" for a in attn]
    rows = [f"| MLP \\ attention (seeds: {seeds}) | " + " | ".join(heads) + " |",
            "|---" * (len(attn) + 1) + "|"]
    for m in mlp:
        texts = []
        for a in attn:
            if (a, m) not in cells:
                texts.append("")
            else:
                texts.append("{:.3f} ± {:.3f}".format(*cells[a, m]))   # mean ± sd over seeds
        rows.append(f"| {m} (m={m // c['d']}) | " + " | ".join(texts) + " |")
    return "\n".join(rows) + "\n" + fits_text("tradeoff", tradeoff_fits(records))


# ------------------------------------------------------------------ the list

def _entry(help, grid, configs, one, summary):
    return {"help": help, "grid": grid, "configs": configs, "one": one, "summary": summary}


EXPERIMENTS = {
    "fig5": _entry("paper A Fig. 5 (setup A5): sequential learning, hallucination stage",
                   FIG5, fig5_configs, fig5_one, fig5_summary),
    "linear": _entry("paper A Fig. 1 left (A1): linear associative memory",
                     LINEAR, linear_configs, linear_one, linear_summary),
    "mlp": _entry("paper A Fig. 1 right, Fig. 6 (A2): MLP associative memory",
                  MLP, mlp_configs, mlp_one, mlp_summary),
    "facts": _entry("paper A Fig. 4 left (A3, A4): facts stored vs parameters",
                    FACTS, facts_configs, facts_one, facts_summary),
    "families": _entry("paper A (A4): facts vs parameters split three ways, heads fixed",
                       FAMILIES, families_configs, facts_one, facts_summary),
    "arms": _entry("paper A (A4): attention or MLP grows, the other held at its least",
                   ARMS, families_configs, facts_one, facts_summary),
    "budget": _entry("paper A (A4): facts per parameter against the training budget",
                     BUDGET, families_configs, facts_one, facts_summary),
    "tradeoff": _entry("paper A Fig. 4 right (A4): attention vs MLP parameters",
                       TRADEOFF, tradeoff_configs, tradeoff_one, tradeoff_summary),
}
