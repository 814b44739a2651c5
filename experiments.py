"""experiments.py -- every experiment of the two papers, each as one block of data and code:

    NAME = {"tiny": {...}, "small": {...}, "full": {...}}   its grid per scale, named fields
    name_configs(grid, seed) -> [config]                    one config per run
    name_one(config) -> result                              runs one config
    name_summary(records) -> str                            the table it prints

`python train.py NAME --scale S --set FIELD=VALUE` runs it (train.sweep); EXPERIMENTS at the end
lists them.  Setups A1..A5 and paper B's model: MODEL.md; [ours] marks a choice of this project."""
import hashlib
import itertools
import math

import numpy as np

import recall as rc
import theory
import train

SCALES = ("tiny", "small", "full")
HELP = {}          # experiment name -> its line of command-line help, given where its block begins


def by_scale(small, **changes):
    """The grid per scale: `small` as given, tiny and full as small with their changes."""
    return {"tiny": dict(small, **changes.get("tiny", {})), "small": small,
            "full": dict(small, **changes.get("full", {}))}


HELP["fig5"] = "paper A Fig. 5 (setup A5): sequential learning and the hallucination stage"

FIG5 = by_scale(dict(S=16, R=4, D=8, T=32, lr=0.1, batch=1024, init=1e-5, steps=8192,
                     n_test=4096, eval_every=64, dtype="float32", seeds=5),
                tiny=dict(lr=0.3, batch=256, steps=2048, n_test=1024, eval_every=32, seeds=2))


def fig5_configs(g, seed):
    """One run per seed (seed, seed + 1, ...): task, test set and batches all follow it."""
    return [dict(g, seed=s) for s in range(seed, seed + g["seeds"])]


def fig5_one(cfg):
    """A5: one-hot linear attention, SGD from a tiny init; its fig5_losses every eval_every."""
    rng = np.random.default_rng(cfg["seed"])
    dt = np.dtype(cfg["dtype"])
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
            losses = [round(float(v), 6) for v in fig5_losses(logits, test_y, cfg["D"])]
            for k, v in zip(curve, [step, *losses, rc.accuracy(logits, test_y)]):
                curve[k].append(v)
        if step < cfg["steps"]:
            x, y = rc.sample_facts(task, cfg["batch"], rng)
            logits, cache = rc.linear_attention_forward(params, fixed, x)
            _, dlogits = rc.cross_entropy(logits, y)
            train.sgd_step(params, rc.linear_attention_backward(dlogits, cache), cfg["lr"])
    return curve


def fig5_losses(logits, y, D):
    """Total, relation-only and subject-only cross-entropy (means over rows).
    relation-only: -log sum_{a in y's relation block} p(a)   (is the relation known?)
    subject-only:  -log sum_{a = y mod D} p(a)               (is the subject's slot known?)"""
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))        # (B, D R) log-softmax
    rows = np.arange(len(logp))
    blocks = logp.reshape(len(rows), -1, D)                         # (B, R, D)
    rel = np.logaddexp.reduce(blocks[rows, y // D], axis=1)         # (B,)
    sub = np.logaddexp.reduce(blocks[rows, :, y % D], axis=1)       # (B,)
    return -logp[rows, y].mean(), -rel.mean(), -sub.mean()


def fig5_stages(curve, n_answers, D):
    """The two stage ends (None: never; MODEL.md A5): the plateau's when the total loss first
    drops below the midpoint of ln(n_answers) and ln D, the hallucination stage's below ln(D)/2."""
    step, tot = np.asarray(curve["step"]), np.asarray(curve["total"])
    ends = [step[tot < th] for th in ((np.log(n_answers) + np.log(D)) / 2, np.log(D) / 2)]
    return tuple(int(e[0]) if len(e) else None for e in ends)


def fig5_summary(records):
    lines, ends = [], []
    for r in sorted(records, key=lambda r: r["config"]["seed"]):
        c, cfg = r["result"], r["config"]
        ends.append(fig5_stages(c, cfg["R"] * cfg["D"], cfg["D"]))
        lines.append(f"fig5 seed {cfg['seed']}: plateau until step {ends[-1][0]}, hallucination "
                     f"(total loss near ln {cfg['D']}) until step {ends[-1][1]}; final total "
                     f"loss {c['total'][-1]:.4f}, test accuracy {c['accuracy'][-1]:.3f}")
    if len(ends) > 1 and None not in sum(ends, ()):
        (m1, m2), (s1, s2) = np.mean(ends, 0), np.std(ends, 0, ddof=1)
        lines.append(f"fig5 over {len(ends)} seeds: plateau until step {m1:.0f} ± {s1:.0f}, "
                     f"hallucination until step {m2:.0f} ± {s2:.0f} (mean ± sd; the loss is "
                     f"read every {records[0]['config']['eval_every']} steps)")
    return "\n".join(lines)


HELP["linear"] = "paper A Fig. 1 left (setup A1): linear associative memory, trained and Hebbian"

LINEAR = by_scale(dict(d=[8, 11, 16, 22, 32], seeds=3, lr=1000.0, steps=1024, ratio=1.03,
                       c_lo=4.0, c_hi=0.8, dmax=256), tiny=dict(d=[8, 11, 16], seeds=2),
                  full=dict(d=[8, 11, 16, 22, 32, 45, 64, 90, 128, 181, 256], seeds=5,
                            steps=4096, ratio=1.01, c_lo=None, c_hi=None))


def linear_configs(g, seed):
    """One capacity search per (d, seed) in the bracket [d, d^2/2] (A1) if c_lo is None, else
    in [N(c_lo), N(c_hi)] with d^2 = c N ln N ([ours])."""
    out = []
    for d in (d for d in g["d"] if d <= g["dmax"]):
        lo, hi = d, d * d // 2
        if g["c_lo"] is not None:
            lo = max(2, int(theory.linear_capacity_N(d, g["c_lo"])))
            hi = min(hi, int(theory.linear_capacity_N(d, g["c_hi"])) + 1)
        lo, hi = sorted((lo, hi))         # N falls as c grows: c_lo > c_hi, else they swap
        out += [{"d": d, "seed": s, "lr": g["lr"], "steps": g["steps"], "ratio": g["ratio"],
                 "lo": lo, "hi": hi} for s in range(seed, seed + g["seeds"])]
    return out


def linear_one(cfg):
    """Capacity of one d x d linear memory, trained and Hebbian: 99%, then 100% from there down."""
    d, seed = cfg["d"], cfg["seed"]
    trial, memo = train.memoised(lambda N: train.linear_memory_trial(N, d, seed, cfg["lr"],
                                                                     cfg["steps"]))
    lo, hi = cfg["lo"], cfg["hi"]
    cap99 = train.bisect_capacity(lambda N: trial(N)["first99"] is not None, lo, hi, cfg["ratio"])
    cap100 = train.bisect_capacity(lambda N: trial(N)["first100"] is not None, cap99, cap99,
                                   cfg["ratio"], widen=1)
    hacc, heb = train.memoised(lambda N: train.hebbian_accuracy(N, d, seed))
    hebb99 = train.bisect_capacity(lambda N: hacc(N) >= 0.99, 2, max(3, d * d // 2), cfg["ratio"])
    hebb100 = train.bisect_capacity(lambda N: hacc(N) == 1.0, hebb99, hebb99, cfg["ratio"], widen=1)
    return {"cap99": cap99, "cap100": cap100, "hebb99": hebb99, "hebb100": hebb100,
            "lo_fails": trial(cap99)["first99"] is None, "hi_succeeds": cap99 == train.WIDEN * hi,
            "trials": [memo[N] for N in sorted(memo)],
            "hebbian_trials": [[N, heb[N]] for N in sorted(heb)]}


def linear_fits(records):
    """Per curve: c in d^2 = c N ln N (geometric mean over the (d, seed) points), its bits/param."""
    out = {}
    for key in ("cap99", "cap100", "hebb99", "hebb100"):
        pts = [(r["result"][key], r["config"]["d"]) for r in records if r["result"][key] > 1]
        if pts:
            N, d = np.array(pts, float).T
            c = theory.fit_constant(N * np.log(N), d * d)
            ci = seed_interval(d, lambda k: theory.fit_constant(N[k] * np.log(N[k]), d[k] ** 2))
            out[key] = {"c": c, "bits_per_param": theory.bits_per_param_linear(c), "c_95": ci}
    return out


def linear_summary(records):
    rows = ["| d | seeds | capacity N: trained 99% | trained 100% | Hebbian 100% | "
            "c = d^2/(N ln N), 99% |", "|---|---|---|---|---|---|"]
    for d in sorted({r["config"]["d"] for r in inside(records)}):
        res = [r["result"] for r in inside(records) if r["config"]["d"] == d]
        N = {k: np.mean([x[k] for x in res]) for k in ("cap99", "cap100", "hebb100")}  # c: inf if 1
        rows.append(f"| {d} | {len(res)} | {N['cap99']:.1f} | {N['cap100']:.1f} | "
                    f"{N['hebb100']:.1f} | {d * d / (N['cap99'] * np.log(N['cap99'])):.2f} |")
    return "\n".join(rows) + "\n" + fits_text("linear", linear_fits(inside(records)), records)


def inside(records):
    """The records whose capacity search ended inside its widened bracket (an edge is a bound)."""
    return [r for r in records if not (r["result"]["lo_fails"] or r["result"]["hi_succeeds"])]


def fits_text(name, fits, searches=()):
    """One line per fit; a pair [lo, hi], named *_95, is a 95% interval (seed_interval)."""
    def text(x):                       # an interval needs two seeds of every size
        return (("n/a (one seed)" if math.isnan(x[0]) else f"[{x[0]:.3g}, {x[1]:.3g}]")
                if isinstance(x, list) else x if isinstance(x, str) else f"{x:.3g}")
    lines = [f"{name} {key}: " + ", ".join(f"{k} = {text(x)}" for k, x in v.items())
             for key, v in fits.items()]
    if any(k.endswith("_95") for v in fits.values() for k in v):
        lines.append("(*_95: 95% bootstrap interval over seeds)")
    if len(inside(searches)) < len(searches):
        lines.append(f"{len(searches) - len(inside(searches))} of {len(searches)} searches end at "
                     "a bracket edge: bounds, left out of every mean, fit and figure")
    return "\n".join(lines)


def seed_interval(groups, stat, resamples=1000, seed=0):
    """95% bootstrap interval of stat(k) over index arrays k that redraw, with replacement, the
    runs of each group (one size, its seeds): rough with three seeds; [nan, nan] with one."""
    runs = [np.flatnonzero(np.asarray(groups) == g) for g in sorted(set(groups))]
    if min(map(len, runs)) < 2:
        return [math.nan, math.nan]
    rng = np.random.default_rng(seed)
    stats = [stat(np.concatenate([rng.choice(k, len(k)) for k in runs])) for _ in range(resamples)]
    return [float(v) for v in np.nanpercentile(stats, [2.5, 97.5])]


HELP["mlp"] = "paper A Fig. 1 right, Fig. 6 (setup A2): MLP associative memory capacity"

MLP = by_scale(dict(d=[8, 11, 16], alpha=[1, 2, 4, 8], M=[None, 32], max_md=1024, seeds=3,
                    lr=0.03, steps=2048, patience=256, ratio=1.04, dmax=90, dtype="float32"),
               tiny=dict(d=[8, 16], max_md=256, steps=1024, ratio=1.1, seeds=1),
               full=dict(d=[8, 11, 16, 22, 32, 45, 64, 90], max_md=None, seeds=5, steps=32768,
                         patience=None, ratio=1.01))


def mlp_configs(g, seed):
    """One capacity search per (M, d, alpha, seed) with m d <= max_md, biggest first (better
    packing); M = None: f(i) = i; M = 32: f(i) = i M // N; first bracket [ours] [Nref/2, 2 Nref]."""
    out = []
    for M, d, alpha in itertools.product(g["M"], g["d"], g["alpha"]):
        md, regime = alpha * d * d, "M=N" if M is None else "M=32"
        if d > g["dmax"] or (g["max_md"] is not None and md > g["max_md"]):
            continue
        ref = theory.mlp_reference_N(md, regime)
        lo, hi = max(2, int(ref / 2)), int(2 * ref) + 1
        out += [{"d": d, "alpha": alpha, "M": M, "regime": regime, "seed": s, "lr": g["lr"],
                 "steps": g["steps"], "patience": g["patience"], "ratio": g["ratio"],
                 "dtype": g["dtype"], "lo": lo, "hi": hi} for s in range(seed, seed + g["seeds"])]
    return sorted(out, key=lambda c: -c["alpha"] * c["d"] ** 2)


def mlp_one(cfg):
    """Capacity (99% criterion) of one MLP memory relu(E[x] W1 + b1) W2 U^T, width m = alpha d."""
    d, m, M = cfg["d"], cfg["alpha"] * cfg["d"], cfg["M"]
    trial, memo = train.memoised(lambda N: train.mlp_memory_trial(
        N, d, m, M, cfg["seed"], cfg["lr"], cfg["steps"], cfg["patience"], cfg["dtype"]))
    cap = train.bisect_capacity(lambda N: trial(N)["first99"] is not None, cfg["lo"], cfg["hi"],
                                cfg["ratio"])
    return {"cap99": cap, "m": m, "md": m * d, "lo_fails": trial(cap)["first99"] is None,
            "hi_succeeds": cap == train.WIDEN * cfg["hi"],
            "trials": [memo[N] for N in sorted(memo)]}


def mlp_fits(records):
    """Per regime: c of the authors' form (m d = c N ln N for M = N, m d = c N for M = 32), the
    bits per parameter it implies (params = 2 m d), and the log-log slope of N against m d."""
    out = {}
    for regime in ("M=N", "M=32"):
        rs = [r for r in records if r["config"]["regime"] == regime and r["result"]["cap99"] > 1]
        if len(rs) < 2:
            continue
        N, md = np.array([(r["result"]["cap99"], r["result"]["md"]) for r in rs], float).T
        def fit(k):
            return theory.fit_constant(N[k] * np.log(N[k]) if regime == "M=N" else N[k], md[k])
        c, size = fit(np.arange(len(N))), [f"{r['config']['d']} {r['config']['alpha']}" for r in rs]
        out[regime] = {"c": c, "bits_per_param": theory.bits_per_param_mlp(c, regime),
                       "loglog_slope": theory.loglog_slope(md, N), "c_95": seed_interval(size, fit),
                       "slope_95": seed_interval(size, lambda k: theory.loglog_slope(md[k], N[k]))}
    return out


def mlp_summary(records):
    return fits_text("mlp", mlp_fits(inside(records)), records)


HELP["facts"] = "paper A Fig. 4 left (A3, A4): facts stored vs parameters of the transformer"

FACTS = by_scale(dict(d=[16, 20, 24, 28, 32], a=[1], b=[1], H=None, D=8, T=32, lrs=[3e-2],
                      steps=3000, batch=256, eval_every=50, patience=None, n_test=1024,
                      prompts_per_fact=0, bracket=[0.07, 0.14], dtype="float32", dmax=64, seeds=3),
                 tiny=dict(d=[16, 20], steps=800, batch=128, patience=300, bracket=[0.025, 0.1],
                           seeds=1),
                 full=dict(d=[16, 32, 64], a=[4, 2, 1, 0.5, 0.25], b=[4, 2, 1, 0.5, 0.25],
                           lrs=[1e-3, 3e-3, 1e-2], steps=16384, batch=1024))


def facts_configs(g, seed):
    """One bisection on S per size: dh = a d / H, m = b d, H = 8 (d/4 if 8 does not divide d)
    unless given; first bracket [ours] S in sqrt(bracket * params) (the search widens)."""
    if g["H"] is not None and g["H"] != int(g["H"]):
        raise ValueError(f"H must be a whole number of heads, got {g['H']}")
    keep = {k: g[k] for k in ("D", "T", "lrs", "steps", "batch", "eval_every", "patience",
                              "n_test", "prompts_per_fact", "dtype")}
    out = []
    for d, a, b in ((d, a, b) for d in g["d"] if d <= g["dmax"] for a in g["a"] for b in g["b"]):
        H = int(g["H"] or (8 if d % 8 == 0 else d // 4))
        dh, m = a * d / H, b * d
        if dh != int(dh) or dh < 1 or m != int(m):
            continue
        P = theory.transformer_params(d, H, int(dh), int(m))
        lo, hi = (math.sqrt(c * P) for c in g["bracket"])
        out += [dict(keep, d=d, H=H, dh=int(dh), m=int(m), a=a, b=b, seed=s, lo=max(1, int(lo)),
                     hi=int(math.ceil(hi))) for s in range(seed, seed + g["seeds"])]
    return sorted(out, key=lambda c: -theory.transformer_params(c["d"], c["H"], c["dh"], c["m"]))


def facts_one(cfg):
    """Capacity in facts S^2 of one size, by bisection on S: the paper's >= 99% on fresh prompts."""
    trial, memo = train.memoised(lambda S: train.transformer_trial(S, cfg))
    S99 = train.bisect_capacity(lambda S: trial(S)["fresh99"], cfg["lo"], cfg["hi"], 1.0)
    P = theory.transformer_params(cfg["d"], cfg["H"], cfg["dh"], cfg["m"])
    return {"params": P, "S_fresh99": S99, "facts_fresh99": S99 * S99,
            "lo_fails": not trial(S99)["fresh99"], "hi_succeeds": S99 == train.WIDEN * cfg["hi"],
            "trials": [memo[S] for S in sorted(memo)]}


def facts_family(record):
    """The family a record belongs to: a = dh H / d and b = m / d, as text."""
    return f"a={record['config']['a']:g} b={record['config']['b']:g}"


def facts_fits(records):
    """Per family that stored a fact: k in facts = k params (geometric mean), bits per parameter
    k log2 D, the log-log slope of facts against params (1 = linear); 95% intervals over seeds."""
    out = {}
    for fam in sorted({facts_family(r) for r in records}, reverse=True):   # attention first
        pts = [(r["result"]["params"], r["result"]["facts_fresh99"]) for r in records
               if facts_family(r) == fam and r["result"]["facts_fresh99"] > 0]
        if not pts:
            continue
        P, F = np.array(pts, float).T
        k = theory.fit_constant(P, F)
        out[fam] = {
            "facts_per_param": k, "bits_per_param": k * math.log2(records[0]["config"]["D"]),
            "loglog_slope": theory.loglog_slope(P, F),
            "facts_per_param_95": seed_interval(P, lambda i: theory.fit_constant(P[i], F[i])),
            "slope_95": seed_interval(P, lambda i: theory.loglog_slope(P[i], F[i]))}
    return out


def facts_summary(records):
    rows = ["| family: dh H = a d, m = b d | d | H | dh | m | params | seed | S (fresh 99%) | "
            "facts/param (facts S^2) |", "|---" * 9 + "|"]
    for r in sorted(records, key=lambda r: (r["config"]["b"], r["result"]["params"],
                                            r["config"]["seed"])):
        c, x = r["config"], r["result"]
        edge = " (edge: at most)" if x["lo_fails"] else " (edge: at least)" * x["hi_succeeds"]
        rows.append(f"| {facts_family(r)} | {c['d']} | {c['H']} | {c['dh']} | {c['m']} | "
                    f"{x['params']} | {c['seed']} | {x['S_fresh99']}{edge} | "
                    f"{x['facts_fresh99'] / x['params']:.3f} |")
    return "\n".join(rows) + "\n" + fits_text("facts", facts_fits(inside(records)), records)


HELP["families"] = "paper A (A4): facts vs parameters, attention- or MLP-dominated"

PER_FAMILY = ("a", "b", "H")      # facts' fields that each family sets
FAMILIES = by_scale(dict({k: v for k, v in FACTS["small"].items() if k not in PER_FAMILY},
                         d=[16, 24, 32, 48],
                         families=[[4, 0.25, None], [1, 1, None], [0.25, 4, 1]]),
                    tiny=dict({k: v for k, v in FACTS["tiny"].items() if k not in PER_FAMILY},
                              families=[[4, 0.25, None], [0.25, 4, 1]]))


def families_configs(g, seed):
    """facts' runs per family [a, b, H] (None: facts' H; H = 1: the least attention that routes)."""
    if any(len(f) != 3 or (f[2] is not None and not 1 <= f[2] == int(f[2])) for f in g["families"]):
        raise ValueError(f"each family is [a, b, H] with H null or a whole number >= 1, got "
                         f"{g['families']}")
    return [c for a, b, H in g["families"] for c in facts_configs(dict(g, a=[a], b=[b], H=H), seed)]


families_one, families_summary = facts_one, facts_summary    # the same runs, per family


HELP["tradeoff"] = "paper A Fig. 4 right (A4): attention vs MLP parameters, fixed facts"

TRADEOFF = by_scale(dict(d=16, dh=4, S=8, H=[1, 2, 3, 4, 6], m=[1, 2, 4, 8, 16, 64, 256], D=8,
                         T=32, lrs=[3e-2, 1e-2], steps=1500, batch=256, eval_every=50, patience=300,
                         n_test=1024, prompts_per_fact=4, dtype="float32", seeds=3),
                    tiny=dict(H=[1, 4], m=[1, 8], steps=400, seeds=1),
                    full=dict(d=32, dh=8, S=32, H=[1, 2, 4, 8, 16, 32],
                              m=[1, 2, 4, 8, 16, 32, 64, 128], lrs=[1e-3, 3e-3, 1e-2],
                              steps=16384, batch=1024, patience=None))


def tradeoff_configs(g, seed):
    """One run per (H, m, seed); the full grid is the paper's (d = 32, dh = 8, S = R = 32)."""
    out = [dict(g, H=H, m=m, seed=s) for H in g["H"] for m in g["m"]
           for s in range(seed, seed + g["seeds"])]
    return sorted(out, key=lambda c: -c["H"] * c["dh"] - c["m"])


def tradeoff_one(cfg):
    """One cell of the heatmap: H heads, MLP width m, one fact table; its best learning rate."""
    t = train.transformer_trial(cfg["S"], cfg)
    run = max(t["runs"], key=lambda r: r["fresh_acc"])
    return {"attn_params": cfg["d"] * cfg["dh"] * cfg["H"], "mlp_params": cfg["d"] * cfg["m"],
            "facts": t["facts"], "fresh_acc": run["fresh_acc"], "fresh99": t["fresh99"],
            "runs": t["runs"]}


def tradeoff_cells(records):
    """{(attention params, MLP params): (mean, sd over seeds) of the accuracy on fresh prompts}."""
    cells = {}
    for x in (r["result"] for r in records):
        cells.setdefault((x["attn_params"], x["mlp_params"]), []).append(x["fresh_acc"])
    return {k: (float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0)
            for k, v in cells.items()}


def tradeoff_frontier(records):
    """The frontier: [(attention size, least MLP size with mean accuracy >= 0.99, or None)]."""
    cells = tradeoff_cells(records)
    return [(a, min((m for (a2, m), (acc, _) in cells.items() if a2 == a and acc >= 0.99),
                    default=None)) for a in sorted({a for a, _ in cells})]


def tradeoff_fits(records):
    """[ours] Parameters per fact of each side: the least-squares c_attn, c_mlp of attn / c_attn
    + mlp / c_mlp = facts through the measured frontier (the authors' frontier: 4.49, 2.25)."""
    facts = records[0]["result"]["facts"]
    front = [(a, m) for a, m in tradeoff_frontier(records) if m is not None]
    falls = all(m1 >= m2 for (_, m1), (_, m2) in zip(front, front[1:]))   # more attention, less MLP
    out = {"facts": facts, "frontier points": len(front), "monotone": "yes" if falls else "no"}
    if len(front) < 2:                                   # one point: no line, and no order
        return {"frontier": dict(out, monotone="n/a", fit="needs two frontier points")}
    inv = np.linalg.lstsq(np.array(front, float), np.full(len(front), float(facts)), rcond=None)[0]
    out["attn_params_per_fact"], out["mlp_params_per_fact"] = (float(1 / v) for v in inv)
    return {"frontier": out}


def tradeoff_summary(records):
    c, cells = records[0]["config"], tradeoff_cells(records)
    attn, mlp = sorted({a for a, _ in cells}), sorted({m for _, m in cells}, reverse=True)
    seeds = len({r["config"]["seed"] for r in records})
    rows = [f"| MLP \\ attention (seeds: {seeds}) | "
            + " | ".join(f"{a} (H={a // (c['d'] * c['dh'])})" for a in attn) + " |",
            "|---" * (len(attn) + 1) + "|"]
    cell = "{:.3f} ± {:.3f}" if seeds > 1 else "{:.3f}"          # mean ± sd over seeds
    for m in mlp:
        accs = [cell.format(*cells[a, m]) if (a, m) in cells else "" for a in attn]
        rows.append(f"| {m} (m={m // c['d']}) | " + " | ".join(accs) + " |")
    return "\n".join(rows) + "\n" + fits_text("tradeoff", tradeoff_fits(records))


# ---------------------------- paper B: every experiment runs draws_one, one learner on many draws

LEARNERS = {"three_step": "three steps", "gradinfo": "gradient information", "adam": "Adam"}
CHOICES = {"dtype": ("float32", "float64"), "method": tuple(LEARNERS)}   # text fields' values
DRAWS = {"tiny": 3, "small": 20}      # independent draws per point; paper B's full grid is small's


def draws_config(V, d, L, Ns, seed, draws, q=10.0, m=None, kind="gaussian",
                 method="three_step", n_test=2000, Lmax=None, dtype="float32", **extra):
    """One paper-B config (steps, lr: Adam's only; dtype: MODEL.md 3), checked for a bad --set."""
    if draws < 2 or n_test < 1 or min(Ns, default=0) < 1 or (Lmax or L) < L:
        raise ValueError(f"need draws >= 2, n_test >= 1, every N >= 1 and Lmax >= L; got "
                         f"draws={draws}, n_test={n_test}, Ns={Ns}, L={L}, Lmax={Lmax}")
    extra = {k: v for k, v in extra.items() if method == "adam" or k not in ("steps", "lr")}
    cfg = {"V": V, "d": d, "L": L, "Ns": [int(N) for N in Ns], "seed": seed, "draws": draws,
           "q": q, "kind": kind, "method": method, "n_test": n_test, "Lmax": Lmax or L,
           "dtype": "float64" if method == "gradinfo" else dtype, **extra}   # pinv: MODEL.md 3
    return cfg if m is None else dict(cfg, m=m)


def draws_one(cfg):
    """Accuracy and attention of one learner for cfg["draws"] draws at each N of cfg["Ns"]
    (nested), paired across settings (MODEL.md section 3, "Draws"), and each draw's |z_trig|^2."""
    out = {"accuracy": [], "attention": [], "z2": []}
    for k in range(cfg["draws"]):
        rng = np.random.default_rng([cfg["seed"], k, 0])
        task = rc.make_retrieval(cfg["V"], cfg["d"], cfg["L"], rng, cfg.get("m"), cfg["kind"])
        fixed = rc.retrieval_fixed(task, cfg["dtype"])
        rng = np.random.default_rng([cfg["seed"], k, 1])
        if cfg.get("centred") and cfg.get("m"):
            features = np.maximum((fixed["E"] + fixed["z_trig"]) @ fixed["W_mlp"], 0)   # (V, m)
            fixed["mlp_centre"] = features.mean(0)
        task["perm"] = rng.permutation(cfg["V"])
        seqs = rc.sample_retrieval(task, max(cfg["Ns"]), rng, cfg["Lmax"])   # training, nested
        test = rc.sample_retrieval(task, cfg["n_test"], np.random.default_rng([cfg["seed"], k, 2]),
                                   cfg["Lmax"])                   # whatever the N grid
        decode = train.gradinfo_decoder(fixed, cfg["L"]) if cfg["method"] == "gradinfo" else None
        runs = [learner_logits(cfg, fixed, [x[:N] for x in seqs], test, decode) for N in cfg["Ns"]]
        out["accuracy"].append([rc.accuracy(logits, test[2]) for logits, _ in runs])
        out["attention"].append([att for _, att in runs])
        out["z2"].append(float(fixed["z_trig"] @ fixed["z_trig"]))
    return out


def learner_logits(cfg, fixed, train_set, test, decode=None):
    """Train cfg["method"] on train_set ("three_step": eta -> 0 at query norm q; "gradinfo": G
    decoded, read at the marked token: given pos): test logits (n_test, V), attention on pos."""
    tokens, pos, labels = test
    rows = np.arange(len(pos))
    if cfg["method"] == "gradinfo":
        G = train.label_gradient(fixed, *train_set, np.full(train_set[0].shape, 1 / cfg["L"]))
        decoded = (decode or train.gradinfo_decoder(fixed, cfg["L"]))(G)          # (V,)
        return np.eye(cfg["V"])[decoded[tokens[rows, pos]]], math.nan
    adam = cfg["method"] == "adam"
    params = (train.retrieval_adam(fixed, *train_set, cfg["steps"], cfg["lr"]) if adam else
              train.three_step_limit(fixed, *train_set, cfg["q"]))
    logits, cache = rc.retrieval_forward(params, fixed, (tokens, pos))
    return logits, float(cache["a"][rows, pos].mean())          # a: the attention (n_test, L)


def paired_table(base, records, name, against):
    """Per record and N: attention, accuracy mean +- sd over draws and the paired difference
    record - base (mean +- sd over draws, standard error); the records share their draws."""
    lines = [f"| setting | N | attention | accuracy | minus {against} (paired) | its standard "
             "error |", "|---|---|---|---|---|---|"]
    b = np.array(base["result"]["accuracy"])
    for r in records:
        acc, att = np.array(r["result"]["accuracy"]), np.array(r["result"]["attention"])
        for j, N in enumerate(r["config"]["Ns"]):
            x = acc[:, j] - b[:, j]
            lines.append(f"| {name.format(**{'m': '-', **r['config']})} | {N} | "
                         f"{att[:, j].mean():.3f} | {acc[:, j].mean():.3f} ± "
                         f"{acc[:, j].std(ddof=1):.3f} | {x.mean():+.3f} ± {x.std(ddof=1):.3f} | "
                         f"{x.std(ddof=1) / np.sqrt(len(x)):.3f} |")
    return "\n".join(lines)


HELP["b_agree"] = "paper B: predicted vs measured accuracy of three steps"


def _points(*rows):
    return [dict(zip(("V", "N", "d", "L", "q", "m"), row)) for row in rows]


B_AGREE = by_scale(dict(points=_points(   # the last 24: examined to derive MODEL.md 4.4 and 4.7
    (64, 1000, 64, 8), (64, 4000, 64, 16, 4), (64, 8000, 128, 8), (128, 1000, 128, 8),
    (128, 2000, 64, 8), (128, 4000, 32, 8), (128, 4000, 64, 8, 2), (128, 4000, 64, 8, 3),
    (128, 4000, 64, 32, 4), (128, 4000, 64, 32, 6), (128, 4000, 128, 8), (128, 4000, 128, 64, 5),
    (128, 8000, 64, 8), (128, 8000, 64, 8, 10, 64), (128, 8000, 64, 8, 10, 512),
    (128, 8000, 128, 16, 5), (128, 8000, 256, 8), (128, 16000, 32, 8), (128, 16000, 256, 8),
    (256, 8000, 128, 8), (96, 3000, 48, 8), (112, 8100, 56, 8), (136, 10000, 68, 8, 8),
    (144, 5000, 192, 16, 6), (160, 6600, 64, 2, 5), (168, 10000, 80, 4, 8), (176, 9000, 64, 4, 6),
    (184, 9300, 92, 12), (192, 3500, 96, 16), (200, 14000, 72, 12), (208, 5000, 104, 16, 5),
    (216, 14000, 96, 16, 8), (224, 1700, 320, 8, 5), (240, 12000, 120, 8), (248, 9800, 124, 6),
    (256, 17000, 80, 8), (272, 10000, 96, 32, 8), (288, 5000, 144, 64), (304, 13000, 144, 16, 8),
    (320, 13000, 160, 32, 5), (336, 14000, 160, 8, 6), (352, 16000, 176, 8, 5),
    (384, 18000, 128, 8, 5), (448, 7600, 224, 4)),
    hidden=_points((48, 320, 24, 4), (80, 2800, 40, 8, 5), (104, 640, 52, 8, 5),   # never tuned on
    (120, 13000, 60, 16, 8), (152, 7200, 48, 6, 6), (232, 12000, 96, 12), (280, 29000, 96, 24, 5),
    (400, 21000, 200, 8, 8), (56, 2200, 23, 6), (72, 1700, 34, 16, 5), (88, 3200, 38, 4, 5),
    (100, 2000, 45, 12, 6), (132, 7300, 45, 4, 6), (180, 15300, 89, 8, 8), (264, 5600, 105, 12),
    (360, 7900, 142, 4, 5), (60, 1800, 28, 16, 8), (84, 1600, 31, 6, 8), (116, 3500, 50, 24, 8),
    (148, 2500, 47, 6, 10), (196, 15100, 73, 12, 10), (228, 19400, 111, 12, 6),
    (300, 10000, 140, 16, 8), (420, 50400, 164, 24, 6), (28, 770, 11, 8), (36, 1000, 15, 16, 8),
    (44, 180, 22, 4, 8), (52, 1600, 21, 4, 5), (68, 420, 33, 24, 8), (92, 8800, 35, 4, 5),
    (140, 1500, 59, 8), (212, 12000, 95, 12, 8), (26, 390, 12, 6, 8), (30, 5700, 13, 4, 6),
    (34, 660, 17, 4, 6), (38, 1600, 18, 4), (46, 2200, 21, 12, 5), (76, 1600, 36, 6, 8),
    (124, 6600, 54, 24, 8), (188, 20000, 79, 8, 6)),
    draws=40, hidden_draws=60, bias_draws=8, n_test=2000, bias_lift=0.31),
    tiny=dict(points=_points((16, 200, 16, 4), (16, 200, 16, 4, 10, 8)), draws=9,
              hidden=_points((24, 300, 12, 4, 5)), hidden_draws=3))


def theory_version():        # a hash of theory.py: in a config, an edited theory reruns its records
    with open(theory.__file__, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:8]


def b_agree_configs(g, seed):
    """One config per point (`draws` draws, `hidden_draws` if hidden); q, m default to 10, none."""
    version = theory_version()                         # once: every config carries it
    for p in g["points"] + g["hidden"]:                # draws_config checks the draws
        bad = [k for k, v in p.items() if not (k == "m" and v is None or type(v) in
                                                ((int, float) if k == "q" else (int,)) and v > 0)]
        bad += (set(p) ^ {"V", "d", "L", "N"}) - {"q", "m"}          # unknown or missing keys
        if bad:
            raise ValueError(f"a point has integers V, d, L, N >= 1, optionally m >= 1, q > 0; "
                             f"got {p}: check {', '.join(sorted(set(bad)))}")
    return [draws_config(p["V"], p["d"], p["L"], [p["N"]], seed,
                         g["hidden_draws" if hidden else "draws"], q=float(p.get("q", 10.0)),
                         n_test=g["n_test"], theory=version, bias_draws=g["bias_draws"],
                         m=p.get("m"), bias_lift=g["bias_lift"], hidden=hidden)
            for hidden in (False, True) for p in g["hidden" if hidden else "points"]]


def b_agree_one(cfg):
    """draws_one, plus per draw k (at its |z_trig|^2) the frozen-bias and fresh-noise formulas."""
    res = draws_one(cfg)
    args = (cfg["V"], cfg["Ns"][0], cfg["d"], cfg["L"], cfg["q"], cfg.get("m"))
    res["predicted"] = [theory.retrieval_accuracy_frozen(
        *args, z2=z, draws=cfg["bias_draws"], n_test=cfg["n_test"], seed=[cfg["seed"], k, 3],
        bias_lift=cfg["bias_lift"]) for k, z in enumerate(res["z2"])]
    res["fresh"] = [theory.retrieval_accuracy(*args, z2=z) for z in res["z2"]]
    return res


def agreement_rows(records):
    """Per point: measured mean, sd, se of the paired diff (draw k's predicted - measured), pooled
    predicted sd (within-draw sd_b^2 + variance of draw means); set: 0, 1 (MLP) tuning, 2 hidden."""
    rows = []
    for r in records:
        c, res, m = r["config"], r["result"], r["config"].get("m")    # m: None without an MLP
        acc, pr = np.array(res["accuracy"])[:, 0], np.array(res["predicted"])
        sd_b = np.sqrt(np.mean(pr[:, 1] ** 2))
        rows.append(dict(key=(c["V"], c["Ns"][0], c["d"], c["L"], c["q"], m),
                         att=np.mean(res["attention"]), meas=acc.mean(), draws=len(acc), sd_b=sd_b,
                         meas_sd=acc.std(ddof=1), se=(pr[:, 0] - acc).std(ddof=1) / len(acc) ** .5,
                         pred=pr[:, 0].mean(), pred_sd=np.sqrt(sd_b ** 2 + pr[:, 0].var()),
                         fresh=np.mean(res["fresh"]), set=2 if c.get("hidden") else int(bool(m))))
    return sorted(rows, key=lambda w: [w["set"] == 2] + [v or 0 for v in w["key"]])


def b_agree_summary(records):
    rows = agreement_rows(records)
    lines = ["| set | V | N | d | L | q | m | attention | measured | predicted (frozen bias) | "
             "diff ± se | sd with |z_trig|² fixed | fresh-noise formula |", "|" + "---|" * 13]
    for w in rows:
        lines.append(f"| {'hidden' if w['set'] == 2 else 'tuning'} | "
                     + " | ".join(f"{v:g}" if v else "-" for v in w["key"])
                     + f" | {w['att']:.2f} | {w['meas']:.3f} ± {w['meas_sd']:.3f} | "
                     f"{w['pred']:.3f} ± {w['pred_sd']:.3f} | {w['pred'] - w['meas']:+.3f} ± "
                     f"{w['se']:.3f} | {w['sd_b']:.3f} | {w['fresh']:.3f} |")
    sets = [[r for r in rows if r["set"] == i] for i in range(3)]     # as fig_b_agree's sets
    lines += [agreement_stats(w, n) for w, n in zip(sets, ("tuning", "tuning, MLP", "hidden")) if w]
    return "\n".join(lines)


def agreement_stats(rows, name):
    """One set's line: errors of the prediction and of the fresh-noise formula, the sd ratios."""
    diff, fresh = (np.array([w[a] - w["meas"] for w in rows]) for a in ("pred", "fresh"))
    ratio = np.array([w["pred_sd"] / max(w["meas_sd"], 1e-12) for w in rows])
    n, within = len(rows), int((abs(ratio - 1) <= 0.3).sum())
    se = f" ± {diff.std(ddof=1) / n ** .5:.4f} (sd of the diffs / sqrt {n})" if n > 1 else ""
    return (f"\n{name}: {n} point{'s' * (n > 1)}, {rows[0]['draws']} draws each: mean |predicted "
            f"- measured| = {np.abs(diff).mean():.3f} (largest {np.abs(diff).max():.3f}), mean "
            f"signed {diff.mean():+.4f}{se} (fresh-noise formula: {np.abs(fresh).mean():.3f}, "
            f"{fresh.mean():+.3f}); predicted / measured sd: median {np.median(ratio):.2f}, "
            f"{within} of {n} within 30%")


HELP["b_embed"] = "paper B: one-hot (d = V + 2) vs random embeddings"

B_EMBED = by_scale(dict(V=64, L=8, n_N=7, q=10.0, draws=DRAWS["small"]),
                   tiny=dict(V=8, L=4, n_N=2, draws=DRAWS["tiny"]))


def b_embed_configs(g, seed):
    V = g["V"]
    Ns = [int(round(x)) for x in np.geomspace(V, 64 * V, g["n_N"])]
    ds = ((V + 2, "onehot"), (V // 4 or 1, "gaussian"), (V // 2, "gaussian"), (V + 2, "gaussian"))
    return [draws_config(V, d, g["L"], Ns, seed, g["draws"], q=g["q"], kind=kind) for d, kind in ds]


def b_embed_summary(records):
    one = next(r for r in records if r["config"]["kind"] == "onehot")
    return paired_table(one, [r for r in records if r is not one], "random d={d}", "one-hot")


HELP["b_mlp"] = "paper B: attention only vs + fixed MLP, three steps and Adam"

B_MLP = by_scale(dict(V=256, L=4, N=8000, d=[12, 16, 24], m=[32, 128, 512], q=10.0,
                      n_test=1000, draws=DRAWS["small"], adam_N=1000, adam_draws=5,
                      adam_steps=150, adam_lr=0.02),
                 tiny=dict(V=16, N=200, d=[8], m=[8, 32], draws=DRAWS["tiny"], adam_N=100,
                           adam_draws=2, adam_steps=20))


def b_mlp_configs(g, seed):
    """Per d, on the same draws: three steps (N samples) with attention only, then each m plain
    and centred; Adam (adam_N samples, adam_draws draws) with attention only and each m plain."""
    arms = [("three_step", None, False)] + [("three_step", m, centred) for m in g["m"]
                                            for centred in (False, True)]
    arms += [("adam", m, False) for m in [None] + g["m"]]
    return [draws_config(g["V"], d, g["L"], [g["adam_N" if a == "adam" else "N"]], seed,
                         g["adam_draws" if a == "adam" else "draws"], q=g["q"], m=m,
                         n_test=g["n_test"], centred=centred, method=a, steps=g["adam_steps"],
                         lr=g["adam_lr"]) for d in g["d"] for a, m, centred in arms]


def b_mlp_summary(records):
    """Per d and learner: paired differences to attention only; three steps' predicted accuracy."""
    out = []
    for d, a in sorted({(r["config"]["d"], r["config"]["method"]) for r in records},
                       key=lambda da: (da[0], da[1] != "three_step")):    # three steps, then Adam
        rs = sorted((r for r in records if r["config"]["d"] == d and r["config"]["method"] == a),
                    key=lambda r: (r["config"].get("m", 0), r["config"]["centred"]))
        out.append(paired_table(rs[0], rs, LEARNERS[a] + ": d={d}, m={m}, centred={centred}",
                                "attention only"))
        if a == "three_step":                                      # the formula's learner
            c = rs[0]["config"]                                    # attention only
            args = (c["V"], c["Ns"][0], d, c["L"], c["q"])
            mlps = [f"+ MLP m={m} {theory.retrieval_accuracy(*args, m):.3f}"
                    for m in sorted({r["config"]["m"] for r in rs if "m" in r["config"]})]
            out.append(f"predicted by the fresh-noise formula (no centred variant): attention "
                       f"only {theory.retrieval_accuracy(*args):.3f}, " + ", ".join(mlps))
        out[-1] += "\n"
    return "\n".join(out)


HELP["b_scaling"] = "paper B: N* against d, L and V at d < V for three learners"

B_SCALING = by_scale(dict(V0=256, L0=8, d0=128, d=[16, 24, 32, 48, 64, 96, 128], d_contrast=256,
                          L=[2, 4, 8, 16, 32, 64], V=[96, 128, 181, 256, 362], Nmax=32768, top=32,
                          tau=0.1, q=5.0, n_test=1000, draws=DRAWS["small"], gradinfo_Nmax=4096,
                          adam_draws=5, adam_steps=150, adam_lr=0.02, adam_Nmax=256),
                     tiny=dict(V0=32, d0=16, d=[8, 16], d_contrast=32, L=[2, 8], V=[24, 32],
                               Nmax=512, gradinfo_Nmax=512, draws=3,
                               adam_draws=2, adam_steps=20, adam_Nmax=64))


def b_scaling_configs(g, seed):
    """Three panels: d at (V0, L0) and a d >= V contrast; L at (V0, d0); V at d = V/2, L0.  Each
    point runs three steps, gradient information and Adam on N = 16, 32, ... (Adam 8, 16, ...) up
    to top V^2/d (MODEL.md 4.8) and each learner's cap; Lmax = the longest L (paired over L)."""
    if not 1 / min(g["V"] + [g["V0"]]) < g["tau"] < 1 or g["d_contrast"] < g["V0"]:
        raise ValueError(f"need 1/V < tau < 1 at every V, d_contrast >= V0 (set both); got tau="
                         f"{g['tau']}, V0={g['V0']}, V={g['V']}, d_contrast={g['d_contrast']}")
    pts = [(g["V0"], d, g["L0"]) for d in g["d"] + [g["d_contrast"]]]
    pts += [(g["V0"], g["d0"], L) for L in g["L"]] + [(V, V // 2, g["L0"]) for V in g["V"]]
    version = theory_version()                  # three steps' records store the formula's N*
    runs = [(V, d, L, m, n, g[top], n0) for V, d, L in pts for m, n, top, n0 in (  # n0: first N
        ("three_step", g["draws"], "Nmax", 16), ("gradinfo", g["draws"], "gradinfo_Nmax", 16),
        ("adam", g["adam_draws"], "adam_Nmax", 8))]     # Adam near the coverage bound, ≈ V tau
    return [draws_config(V, d, L, [n0 * 2 ** k for k in range(24)
                                   if n0 * 2 ** k <= min(top, g["top"] * V * V / d)], seed,
                         n, q=g["q"], method=m, n_test=g["n_test"], tau=g["tau"], V0=g["V0"],
                         d0=g["d0"], L0=g["L0"], steps=g["adam_steps"], lr=g["adam_lr"],
                         Lmax=max(g["L"] + [g["L0"]]),
                         theory=version if m == "three_step" else None)
            for V, d, L, m, n, top, n0 in runs]


def b_scaling_one(cfg):
    """draws_one; for three steps also the formula's N* and its accuracy at N = 1e9 (N -> inf)."""
    res = draws_one(cfg)
    if cfg["method"] == "three_step":
        args = (cfg["V"], cfg["d"], cfg["L"], cfg["q"])
        res["predicted_N"] = theory.critical_N(*args, cfg["tau"])
        res["predicted_limit"] = theory.retrieval_accuracy_frozen(cfg["V"], 1e9, *args[1:])[0]
    return res


def crossing(xs, ys, tau):
    """First x where y reaches tau, interpolated in log x; None if never (xs[0] if already)."""
    if len(ys) and ys[0] >= tau:                    # already there at the first x: a bound
        return float(xs[0])
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if y0 < tau <= y1:
            t = (tau - y0) / (y1 - y0)
            return float(np.exp(np.log(x0) + t * (np.log(x1) - np.log(x0))))


def nstar_bootstrap(recs, resamples=200, seed=0):
    """N* of each record (crossing of its mean accuracy over draws with tau; nan: none), row 0
    on the draws as run, then a row per bootstrap resample of the draws, shared by the records."""
    rng, n = np.random.default_rng(seed), min(r["config"]["draws"] for r in recs)
    picks = [np.arange(n)] + [rng.integers(0, n, n) for _ in range(resamples)]
    acc = [np.array(r["result"]["accuracy"]) for r in recs]      # (draws, len(Ns)) each
    return np.array([[crossing(r["config"]["Ns"], A[k].mean(0), r["config"]["tau"]) or np.nan
                      for r, A in zip(recs, acc)] for k in picks])


def slope_interval(x, boot):
    """Log-log slope of N* against x over the points with an N* on the draws as run, its 95%
    bootstrap interval over the resamples where each of them has one, and how many lack one."""
    fit = np.isfinite(boot[0])
    slopes = np.array([theory.loglog_slope(x[fit], row[fit]) if np.isfinite(row[fit]).all()
                       else math.nan for row in boot])
    ok = slopes[1:][np.isfinite(slopes[1:])]
    lo, hi = np.percentile(ok, [2.5, 97.5]) if len(ok) else (math.nan, math.nan)
    return slopes[0], lo, hi, len(slopes) - 1 - len(ok)


def scaling_points(records, over, method):
    """One learner's panel (over = "d", "L" or "V"; None if empty), sorted by over: x, N* (draws
    as run), its 95% interval (lo, hi), the formula's N* (three steps, else nan), the bootstrap
    rows, which x have d < V, which N* are bounds (reached at the first N) and which are fitted."""
    c = records[0]["config"]
    member = {"d": lambda r: r["V"] == c["V0"] and r["L"] == c["L0"],
              "L": lambda r: r["V"] == c["V0"] and r["d"] == c["d0"],
              "V": lambda r: r["d"] == r["V"] // 2 and r["L"] == c["L0"]}[over]
    recs = sorted((r for r in records if r["config"]["method"] == method and member(r["config"])),
                  key=lambda r: r["config"][over])
    if not recs:
        return None
    boot = nstar_bootstrap(recs)
    srt = np.sort(np.where(np.isnan(boot[1:]), np.inf, boot[1:]), axis=0)   # nan: beyond grid
    lo, hi = srt[int(0.025 * (len(srt) - 1))], srt[math.ceil(0.975 * (len(srt) - 1))]
    pred = [r["result"].get("predicted_N", math.nan) for r in recs]
    below = np.array([r["config"]["d"] < r["config"]["V"] for r in recs])
    bound = boot[0] == [r["config"]["Ns"][0] for r in recs]
    return dict(x=np.array([r["config"][over] for r in recs], float), n=boot[0], lo=lo, hi=hi,
                pred=np.array(pred, float), boot=boot, below=below, bound=bound,
                fit=below & ~bound & np.isfinite(boot[0]), recs=recs)


def scaling_table(records, over):
    """N* per learner against `over`, the formula's N* (or limit) and exponents (d < V points)."""
    pts = {m: p for m in LEARNERS if (p := scaling_points(records, over, m)) and len(p["x"]) > 1}
    c = records[0]["config"]
    lines = [f"\nN* against {over} (mean accuracy {c['tau']:g}, log-interpolated; [95% interval];"
             " - : none in its N grid, or never; <= : at the first N; blank: not run)",
             f"| {over} | d/V | " + " | ".join(LEARNERS[m] for m in pts)
             + " | predicted (three steps) | predicted / measured |", "|---" * (len(pts) + 4) + "|"]
    three = pts["three_step"]
    for i, r in enumerate(three["recs"]):
        cfg, pred = r["config"], three["pred"][i]
        n = math.nan if three["bound"][i] else three["n"][i]          # a bound: no ratio
        if np.isfinite(pred):
            tail = f"{pred:.0f} | " + (f"{pred / n:.2f}" if np.isfinite(n) else "-")
        else:                 # the formula's ceiling; the best mean accuracy over the N grid
            A = np.array(r["result"]["accuracy"]).mean(0)
            tail = (f"- | predicted accuracy -> {r['result']['predicted_limit']:.3f} as N -> inf; "
                    f"measured best mean {A.max():.3f} at N = {cfg['Ns'][A.argmax()]}")
        cells = "".join(f" | {nstar_cell(p, cfg[over])}" for p in pts.values())
        lines.append(f"| {cfg[over]} | {cfg['d'] / cfg['V']:.3g}{cells} | {tail} |")
    for m, p in pts.items():
        s, lo, hi, out = slope_interval(p["x"][p["fit"]], p["boot"][:, p["fit"]])
        k = int(p["fit"].sum())                                  # fitted points have an N*
        fitted = (f"N* ~ {over}^({s:+.2f}) [{lo:+.2f}, {hi:+.2f}] over {k} points with d < V "
                  f"(bounds left out; {out} of {len(p['boot']) - 1} resamples without an N*)")
        lines.append(f"{LEARNERS[m]}: " + (fitted if k > 1 else "no fit (< 2 N*, bounds left out)"))
    has = np.isfinite(three["n"]) & ~three["bound"]
    close = int(np.sum(abs(np.log(three["pred"][has] / three["n"][has])) <= math.log(1.5)))
    s = theory.loglog_slope(three["x"][three["fit"]], three["pred"][three["fit"]])   # nan: < 2
    lines.append("predicted (three steps): " + (f"N* ~ {over}^({s:+.2f})" if np.isfinite(s) else
                 "no fit") + f" over the points three steps' fit uses; predicted / measured "
                 f"within 1.5x at {close} of {has.sum()} points with a measured N* (d = V "
                 "included, bounds left out)")
    return "\n".join(lines)


def nstar_cell(p, x):                  # one learner's N* at x as text: "N* [lo, hi]", or "-"
    j = np.flatnonzero(p["x"] == x)
    if not len(j):
        return ""
    n, lo, hi = p["n"][j[0]], p["lo"][j[0]], p["hi"][j[0]]
    f = lambda v: f"{v:.0f}" if np.isfinite(v) else "-"          # noqa: E731
    at_most = "<= " if p["bound"][j[0]] else ""                    # reached at once: a bound
    return "-" if not np.isfinite(n) else f"{at_most}{f(n)} [{f(lo)}, {f(hi)}]"


def collapse_points(records):
    """Per (N, d, L) of three steps at V0: theory.retrieval_snr, the accuracy's mean and sd over
    draws; and the rms distance of the means from the one-snr curve theory.snr_accuracy."""
    V, pts = records[0]["config"]["V0"], []
    for r in records:
        c = r["config"]
        if c["method"] == "three_step" and c["V"] == V:
            A = np.array(r["result"]["accuracy"])
            pts += [(theory.retrieval_snr(V, N, c["d"], c["L"], c["q"]), a, s, c["d"], c["L"], N)
                    for N, a, s in zip(c["Ns"], A.mean(0), A.std(0, ddof=1))]
    rms = math.sqrt(np.mean([(a - theory.snr_accuracy(V, x)) ** 2 for x, a, *_ in pts]))
    return pts, rms


def b_scaling_summary(records):
    c = records[0]["config"]
    pts, rms = collapse_points(records)
    return ("".join(scaling_table(records, over) for over in ("d", "L", "V"))
            + f"\n\naccuracy against E_Z Phi(snr + Z)^(V-1) at V = {c['V0']}: rms distance "
            f"{rms:.3f} over {len(pts)} (N, d, L) points; mean sd of one run "
            f"{np.mean([p[2] for p in pts]):.3f}\ncoverage bound (any learner): no N* below "
            f"{theory.coverage_N(c['V0'], c['tau']):.1f} at V = {c['V0']}")


def experiment(name, help):
    """Experiment `name` for the runner: NAME, name_configs, name_one (draws_one), name_summary."""
    block = globals()
    return {"help": help, "grid": block[name.upper()], "configs": block[f"{name}_configs"],
            "one": block.get(f"{name}_one", draws_one), "summary": block[f"{name}_summary"]}


EXPERIMENTS = {name: experiment(name, text) for name, text in HELP.items()}
