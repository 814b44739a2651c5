"""paper_b.py -- paper B's experiments (Vural, Bietti, Soltanolkotabi, Wu, ICLR 2026), in
the blocks of paper_a.py: a grid per scale, configs, one run, a summary.

Every experiment here runs draws_one: one learner on many independent draws of
embeddings, permutation, training and test set, paired across settings (MODEL.md 3).
The model and the formula are this project's own instance of the paper's setting."""
import hashlib
import json
import math
import os

import numpy as np

import recall as rc
import theory
import train

LEARNERS = {"three_step": "three steps", "best_q": "three steps, best q",
            "literal": "three steps, literal (fixed η, γ)", "gradinfo": "gradient information",
            "assign": "gradient information, assigned", "adam": "Adam"}
DRAWS = {"tiny": 3, "small": 20}      # independent draws per point


# ------------------------------------------------------------------ one learner, many draws

def draws_config(V, d, L, Ns, seed, draws, q=10.0, m=None, kind="gaussian",
                 method="three_step", n_test=2000, Lmax=None, dtype="float32", **extra):
    """A paper-B config, checked (steps, lr: Adam's; float64 for pseudo-inverses: MODEL.md 3)."""
    Lmax = Lmax or L
    if draws < 2 or n_test < 1 or min(Ns, default=0) < 1 or Lmax < L:
        raise ValueError(f"need draws >= 2, n_test >= 1, every N >= 1 and Lmax >= L; got "
                         f"draws={draws}, n_test={n_test}, Ns={Ns}, L={L}, Lmax={Lmax}")
    if method != "adam":
        extra = {k: v for k, v in extra.items() if k not in ("steps", "lr")}
    dtype = "float64" if method in ("gradinfo", "assign") else dtype
    cfg = dict(V=V, d=d, L=L, Ns=[int(N) for N in Ns], seed=seed, draws=draws, q=q, kind=kind,
               method=method, n_test=n_test, Lmax=Lmax, dtype=dtype, **extra)
    return cfg if m is None else dict(cfg, m=m)


def draw(cfg, k):
    """Draw k (MODEL.md 3): fixed arrays, nested training samples, test set ([seed, k, 0-2])."""
    rng = np.random.default_rng([cfg["seed"], k, 0])
    task = rc.make_retrieval(cfg["V"], cfg["d"], cfg["L"], rng, cfg.get("m"), cfg["kind"])
    rng = np.random.default_rng([cfg["seed"], k, 1])
    task["perm"] = rng.permutation(cfg["V"])
    samples = rc.sample_retrieval(task, max(cfg["Ns"]), rng, cfg["Lmax"])
    test_rng = np.random.default_rng([cfg["seed"], k, 2])
    test = rc.sample_retrieval(task, cfg["n_test"], test_rng, cfg["Lmax"])
    return rc.retrieval_fixed(task, cfg["dtype"]), samples, test


def draws_one(cfg, learner=None):
    """Test accuracy and attention of a learner per draw and N, and each draw's |z_trig|^2."""
    out = {"accuracy": [], "attention": [], "z2": []}
    for k in range(cfg["draws"]):
        fixed, samples, test = draw(cfg, k)
        decode = train.gradinfo_decoder(fixed, cfg["L"])     # its pseudo-inverses, once
        runs = [(learner or learner_logits)(cfg, fixed, [x[:N] for x in samples], test, decode)
                for N in cfg["Ns"]]
        out["accuracy"].append([rc.accuracy(logits, test[2]) for logits, _ in runs])
        out["attention"].append([attention for _, attention in runs])
        out["z2"].append(float(fixed["z_trig"] @ fixed["z_trig"]))
    return out


def learner_logits(cfg, fixed, samples, test, decode):
    """Train cfg["method"] on the samples: the test logits (n_test, V), the attention on the
    marked position ("gradinfo": G decoded per token, read at the given position)."""
    tokens, pos, _ = test
    rows, method = np.arange(len(pos)), cfg["method"]
    if method == "gradinfo":
        G = rc.label_gradient(fixed, *samples, np.full(samples[0].shape, 1 / cfg["L"]))
        return np.eye(cfg["V"])[decode(G).argmax(1)[tokens[rows, pos]]], math.nan
    if method == "adam":
        params = train.retrieval_adam(fixed, *samples, cfg["steps"], cfg["lr"])
    elif method in ("three_step", "literal"):
        gamma_eta = cfg["gamma_eta"] if method == "literal" else None
        q = None if method == "literal" else cfg["q"]
        params = train.three_step_limit(fixed, *samples, query_norm=q, gamma_eta=gamma_eta)
    else:
        raise ValueError(f"{method}: not a learner of this experiment")
    logits, cache = rc.retrieval_forward(params, fixed, (tokens, pos))
    return logits, float(cache["a"][rows, pos].mean())


def paired_table(base, records, name, against):
    """Per record and N: attention, accuracy mean ± sd over draws and the paired difference
    record - base (mean ± sd over draws, its standard error); records share their draws."""
    lines = [f"| setting | N | attention | accuracy | minus {against} (paired) | its standard "
             "error |", "|---|---|---|---|---|---|"]
    base_acc = np.array(base["result"]["accuracy"])
    for r in records:
        acc = np.array(r["result"]["accuracy"])
        att = np.array(r["result"]["attention"])
        setting = name.format(**{"m": "-", **r["config"]})
        for j, N in enumerate(r["config"]["Ns"]):
            x = acc[:, j] - base_acc[:, j]
            sd = x.std(ddof=1)
            lines.append(f"| {setting} | {N} | {att[:, j].mean():.3f} | {acc[:, j].mean():.3f} "
                         f"± {acc[:, j].std(ddof=1):.3f} | {x.mean():+.3f} ± {sd:.3f} | "
                         f"{sd / np.sqrt(len(x)):.3f} |")
    return "\n".join(lines)


def theory_version():              # a hash of theory.py, in configs: an edited formula reruns
    with open(theory.__file__, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:8]


# ------------------------------------------------------------------ b_agree

POINTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                           "b_agree_points.json")
with open(POINTS_FILE) as _f:
    _POINTS = json.load(_f)
B_AGREE = {"small": dict(points=_POINTS["points"], hidden=_POINTS["hidden"], draws=40,
                         hidden_draws=60, bias_draws=8, n_test=2000, bias_lift=0.31)}
B_AGREE["tiny"] = dict(B_AGREE["small"], draws=9, hidden_draws=3,
                       points=[{"V": 16, "N": 200, "d": 16, "L": 4},
                               {"V": 16, "N": 200, "d": 16, "L": 4, "q": 10, "m": 8}],
                       hidden=[{"V": 24, "N": 300, "d": 12, "L": 4, "q": 5}])
B_AGREE["full"] = dict(B_AGREE["small"], hidden=_POINTS["hidden"] + _POINTS["high"])


def b_agree_configs(grid, seed):
    """A config per point (hidden: hidden_draws); q and m default to 10 and none."""
    version = theory_version()                         # once: every config carries it
    for p in grid["points"] + grid["hidden"]:
        bad = _bad_point_keys(p)
        if bad:
            raise ValueError(f"a point has integers V, d, L, N >= 1, optionally m >= 1, "
                             f"q > 0; got {p}: check {', '.join(bad)}")
    out = []
    for hidden in (False, True):
        draws = grid["hidden_draws"] if hidden else grid["draws"]
        for p in grid["hidden"] if hidden else grid["points"]:
            extra = {"set": p["set"]} if "set" in p else {}
            out.append(draws_config(p["V"], p["d"], p["L"], [p["N"]], seed, draws,
                                    q=float(p.get("q", 10.0)), n_test=grid["n_test"],
                                    theory=version, bias_draws=grid["bias_draws"],
                                    m=p.get("m"), bias_lift=grid["bias_lift"], hidden=hidden,
                                    **extra))
    return out


def _bad_point_keys(p):
    """The keys of a b_agree point that are wrong, missing or unknown, sorted."""
    bad = set(p) ^ {"V", "d", "L", "N"}
    bad -= {"q", "m", "set"}
    for k, v in p.items():
        if (k == "m" and v is None) or (k == "set" and v == "high"):
            continue
        kinds = (int, float) if k == "q" else (int,)
        if type(v) not in kinds or v <= 0:
            bad.add(k)
    return sorted(bad)


def b_agree_one(cfg):
    """draws_one, and per draw (its |z_trig|^2) the frozen-bias and fresh-noise formulas."""
    res = draws_one(cfg, mlp_logits)                       # its tuning points have MLPs too
    args = (cfg["V"], cfg["Ns"][0], cfg["d"], cfg["L"], cfg["q"], cfg.get("m"))
    res["predicted"] = []
    for k, z2 in enumerate(res["z2"]):
        res["predicted"].append(theory.retrieval_accuracy_frozen(
            *args, z2=z2, draws=cfg["bias_draws"], n_test=cfg["n_test"],
            seed=[cfg["seed"], k, 3], bias_lift=cfg["bias_lift"]))
    res["fresh"] = [theory.retrieval_accuracy(*args, z2=z2) for z2 in res["z2"]]
    return res


def agreement_rows(records):
    """Per point: the measured mean and sd, the se of the paired diff (draw k's predicted -
    measured), the pooled predicted sd (within-draw sd_b^2 + variance of the draw means);
    set 0: tuning, 1: tuning with an MLP, 2: hidden, 3: hidden at high accuracy."""
    rows = []
    for r in records:
        c, res = r["config"], r["result"]
        m = c.get("m")                                           # None without an MLP
        acc = np.array(res["accuracy"])[:, 0]
        predicted = np.array(res["predicted"])                   # (draws, 2): mean, sd
        sd_b = np.sqrt(np.mean(predicted[:, 1] ** 2))
        which = 1 if m else 0
        if c.get("hidden"):
            which = 3 if c.get("set") == "high" else 2
        rows.append(dict(
            key=(c["V"], c["Ns"][0], c["d"], c["L"], c["q"], m), set=which,
            att=np.mean(res["attention"]), meas=acc.mean(), meas_sd=acc.std(ddof=1),
            draws=len(acc), sd_b=sd_b, pred=predicted[:, 0].mean(),
            pred_sd=np.sqrt(sd_b ** 2 + predicted[:, 0].var()), fresh=np.mean(res["fresh"]),
            se=(predicted[:, 0] - acc).std(ddof=1) / len(acc) ** 0.5))
    return sorted(rows, key=lambda w: [w["set"] >= 2] + [v or 0 for v in w["key"]])


def b_agree_summary(records):
    rows = agreement_rows(records)
    lines = ["| set | V | N | d | L | q | m | attention | measured | predicted (frozen bias) | "
             "diff ± se | sd with |z_trig|² fixed | fresh-noise formula |", "|" + "---|" * 13]
    for w in rows:
        name = "hidden" if w["set"] >= 2 else "tuning"
        key = " | ".join(f"{v:g}" if v else "-" for v in w["key"])
        lines.append(f"| {name} | {key} | {w['att']:.2f} | {w['meas']:.3f} ± "
                     f"{w['meas_sd']:.3f} | {w['pred']:.3f} ± {w['pred_sd']:.3f} | "
                     f"{w['pred'] - w['meas']:+.3f} ± {w['se']:.3f} | {w['sd_b']:.3f} | "
                     f"{w['fresh']:.3f} |")
    for which, name in enumerate(("tuning", "tuning, MLP", "hidden", "hidden, high accuracy")):
        members = [w for w in rows if w["set"] == which]
        if members:
            lines.append(agreement_stats(members, name))
    return "\n".join(lines)


def agreement_stats(rows, name):
    """A set's line: the errors of both formulas, the sd ratios."""
    diff = np.array([w["pred"] - w["meas"] for w in rows])
    fresh = np.array([w["fresh"] - w["meas"] for w in rows])
    ratio = np.array([w["pred_sd"] / max(w["meas_sd"], 1e-12) for w in rows])
    n = len(rows)
    within = int((abs(ratio - 1) <= 0.3).sum())
    se = f" ± {diff.std(ddof=1) / n ** .5:.4f} (sd of the diffs / sqrt {n})" if n > 1 else ""
    return (f"\n{name}: {n} point{'s' if n > 1 else ''}, {rows[0]['draws']} draws each: "
            f"mean |predicted - measured| = {np.abs(diff).mean():.3f} (largest "
            f"{np.abs(diff).max():.3f}), mean signed {diff.mean():+.4f}{se} (fresh-noise "
            f"formula: {np.abs(fresh).mean():.3f}, {fresh.mean():+.3f}); predicted / measured "
            f"sd: median {np.median(ratio):.2f}, {within} of {n} within 30%")


# ------------------------------------------------------------------ b_embed

B_EMBED = {"small": dict(V=64, L=8, n_N=7, q=10.0, draws=DRAWS["small"])}
B_EMBED["tiny"] = dict(B_EMBED["small"], V=8, L=4, n_N=2, draws=DRAWS["tiny"])


def b_embed_configs(grid, seed):
    """One-hot (d = V + 2) and random embeddings of d = V/4, V/2, V + 2, on the same draws."""
    V = grid["V"]
    Ns = [int(round(x)) for x in np.geomspace(V, 64 * V, grid["n_N"])]
    kinds = [(V + 2, "onehot"), (V // 4 or 1, "gaussian"), (V // 2, "gaussian"),
             (V + 2, "gaussian")]
    return [draws_config(V, d, grid["L"], Ns, seed, grid["draws"], q=grid["q"], kind=kind)
            for d, kind in kinds]


def b_embed_summary(records):
    onehot = next(r for r in records if r["config"]["kind"] == "onehot")
    random = [r for r in records if r is not onehot]
    return paired_table(onehot, random, "random d={d}", "one-hot")


# ------------------------------------------------------------------ b_mlp

B_MLP = {"small": dict(V=256, L=4, N=8000, d=[12, 16, 24], m=[32, 128, 512], q=10.0,
                       n_test=1000, draws=DRAWS["small"], adam_N=1000, adam_draws=5,
                       adam_steps=150, adam_lr=0.02)}
B_MLP["tiny"] = dict(B_MLP["small"], V=16, N=200, d=[8], m=[8, 32], draws=DRAWS["tiny"],
                     adam_N=100, adam_draws=2, adam_steps=20)


def b_mlp_configs(grid, seed):
    """Per d, on the same draws: three steps (N samples) with attention only, then each m
    plain and centred; Adam (adam_N samples, adam_draws draws), attention only and each m."""
    arms = [{"method": "three_step", "m": None, "centred": False}]
    arms += [{"method": "three_step", "m": m, "centred": centred}
             for m in grid["m"] for centred in (False, True)]
    arms += [{"method": "adam", "m": m, "centred": False} for m in [None] + grid["m"]]
    out = []
    for d in grid["d"]:
        for arm in arms:
            adam = arm["method"] == "adam"
            N = grid["adam_N"] if adam else grid["N"]
            draws = grid["adam_draws"] if adam else grid["draws"]
            out.append(draws_config(grid["V"], d, grid["L"], [N], seed, draws, q=grid["q"],
                                    n_test=grid["n_test"], steps=grid["adam_steps"],
                                    lr=grid["adam_lr"], **arm))
    return out


def b_mlp_one(cfg):
    return draws_one(cfg, mlp_logits)


def mlp_logits(cfg, fixed, samples, test, decode):
    """learner_logits, with three steps through the fixed MLP (not linear in the counts:
    the literal steps at eta = 1e-6), its features centred if cfg["centred"]."""
    if "m" not in cfg:
        return learner_logits(cfg, fixed, samples, test, decode)
    if cfg.get("centred"):
        features = np.maximum((fixed["E"] + fixed["z_trig"]) @ fixed["W_mlp"], 0)   # (V, m)
        fixed = dict(fixed, mlp_centre=features.mean(0))
    if cfg["method"] == "adam":
        params = train.retrieval_adam(fixed, *samples, cfg["steps"], cfg["lr"])
    else:
        params = train.three_step_small_eta(fixed, *samples, query_norm=cfg["q"])
    logits, cache = rc.retrieval_forward(params, fixed, test[:2])
    return logits, float(cache["a"][np.arange(len(test[1])), test[1]].mean())


def b_mlp_summary(records):
    """Per d and learner: paired differences to attention only; three steps' formula."""
    out = []
    pairs = {(r["config"]["d"], r["config"]["method"]) for r in records}
    for d, method in sorted(pairs, key=lambda p: (p[0], p[1] != "three_step")):
        rs = [r for r in records if r["config"]["d"] == d and r["config"]["method"] == method]
        rs.sort(key=lambda r: (r["config"].get("m", 0), r["config"]["centred"]))
        name = LEARNERS[method] + ": d={d}, m={m}, centred={centred}"
        out.append(paired_table(rs[0], rs, name, "attention only"))
        if method == "three_step":                                 # the formula's learner
            c = rs[0]["config"]                                    # attention only
            args = (c["V"], c["Ns"][0], d, c["L"], c["q"])
            widths = sorted({r["config"]["m"] for r in rs if "m" in r["config"]})
            mlps = [f"+ MLP m={m} {theory.retrieval_accuracy(*args, m):.3f}" for m in widths]
            out.append(f"predicted by the fresh-noise formula (no centred variant): attention "
                       f"only {theory.retrieval_accuracy(*args):.3f}, " + ", ".join(mlps))
        out[-1] += "\n"
    return "\n".join(out)


# ------------------------------------------------------------------ N*
# b_scaling, b_literal, b_ceiling: each panel varies one of V, L, d (the first that is a
# list; V's panel may list d too) around the others; every learner runs on N = 16, 32, ...
# (Adam 8, ...) up to its cap and top V^2/d; N* is where the mean accuracy over draws
# reaches tau (MODEL.md 4.8).

B_SCALING = {"small": dict(
    panels=[{"V": 256, "L": 8, "d": [16, 24, 32, 48, 64, 96, 128, 256]},
            {"V": 256, "d": 128, "L": [2, 4, 8, 16, 32, 64]},
            {"V": [96, 128, 181, 256, 362], "d": [48, 64, 90, 128, 181], "L": 8}],
    learners=["three_step", "gradinfo", "adam"], taus=[0.1], q=5.0, q_grid=[], adam_lr=0.02,
    gamma_eta=1e8, Lmax=64, top=32, n_test=1000, draws=20, adam_draws=5, adam_steps=150,
    Nmax={"three_step": 32768, "literal": 32768, "gradinfo": 4096, "assign": 4096, "adam": 256})}
B_SCALING["tiny"] = dict(B_SCALING["small"], draws=3, adam_draws=2, adam_steps=20,
                         Nmax=dict.fromkeys(B_SCALING["small"]["Nmax"], 512),
                         panels=[{"V": 32, "L": 8, "d": [8, 16, 32]},
                                 {"V": 32, "d": 16, "L": [2, 8]},
                                 {"V": [24, 32], "d": [12, 16], "L": 8}])


def nstar_configs(grid, seed):
    """A config per point and learner ("best_q": three steps at q and at every q of q_grid);
    a point in several panels runs once, its config naming them all."""
    configs = {}
    for panel in grid["panels"]:
        over = next(k for k in "VLd" if isinstance(panel[k], list))
        fixed = [f"{k}={panel[k]}" for k in "VdL" if not isinstance(panel[k], list)]
        for i in range(len(panel[over])):
            V, d, L = (panel[k][i] if isinstance(panel[k], list) else panel[k] for k in "VdL")
            for method in panel.get("learners", grid["learners"]):
                for q in [grid["q"]] + (grid["q_grid"] if method == "best_q" else []):
                    cfg = _nstar_config(grid, seed, V, d, L, method, q, panel)
                    same = configs.setdefault(json.dumps(cfg, sort_keys=True), dict(cfg, panels={}))
                    same["panels"][f"{over} at {', '.join(fixed)}"] = over
    return list(configs.values())


def _nstar_config(grid, seed, V, d, L, method, q, panel):
    if not 1 / V < min(grid["taus"]) <= max(grid["taus"]) < 1:
        raise ValueError(f"need 1/V < tau < 1 at every V; got taus {grid['taus']}, V = {V}")
    method = "three_step" if method == "best_q" else method
    first = 8 if method == "adam" else 16                 # Adam nears the coverage bound
    top = min(grid["Nmax"][method], grid["top"] * V * V / d)
    draws = grid["adam_draws"] if method == "adam" else grid["draws"]
    extra = {"gamma_eta": grid["gamma_eta"]} if method == "literal" else {}
    if method == "three_step" and q == grid["q"]:
        extra["theory"] = theory_version()            # its records store the formula's N*
    return draws_config(V, d, L, [first * 2 ** k for k in range(30) if first * 2 ** k <= top],
                        seed, draws, q=q, method=method, n_test=grid["n_test"],
                        taus=grid["taus"], steps=grid["adam_steps"], lr=grid["adam_lr"],
                        Lmax=panel.get("Lmax", grid["Lmax"]), **extra)


def nstar_one(cfg, learner=None):
    """draws_one; at q also the formula's N*, its limit as N -> inf, the bound's N*."""
    res = draws_one(cfg, learner)
    if cfg.get("theory"):
        V, d, L, q = cfg["V"], cfg["d"], cfg["L"], cfg["q"]
        res["predicted_N"] = [theory.critical_N(V, d, L, q, tau) for tau in cfg["taus"]]
        res["predicted_limit"] = theory.retrieval_accuracy_frozen(V, 1e9, d, L, q)[0]
        res["bound_N"] = [theory.first_gradient_N(V, d, L, tau) for tau in cfg["taus"]]
    return res


def crossing(xs, ys, tau):
    """The first x where y reaches tau, interpolated in log x; None if never."""
    if len(ys) and ys[0] >= tau:
        return float(xs[0])
    for i in range(len(xs) - 1):
        x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
        if y0 < tau <= y1:
            t = (tau - y0) / (y1 - y0)
            return float(np.exp(np.log(x0) + t * (np.log(x1) - np.log(x0))))
    return None


def learner_points(records, panel, learner):
    """A panel's points for one learner, sorted along its axis: [(x, config, [records])],
    several records for "best_q" (its q grid at a point), else one."""
    axis = records_axis(records, panel)
    points = {}
    for r in records:
        c = r["config"]
        best_q = learner == "best_q" and c["method"] == "three_step"
        at_q = learner != "three_step" or c.get("theory")             # three steps: at q
        if panel in c["panels"] and (c["method"] == learner or best_q) and at_q:
            points.setdefault(c[axis], []).append(r)
    if learner == "best_q" and all(len(rs) < 2 for rs in points.values()):
        return []                                                    # no q grid ran
    return [(x, rs[0]["config"], rs) for x, rs in sorted(points.items())]


def panels_of(records):
    return list(dict.fromkeys(p for r in records for p in r["config"]["panels"]))


def records_axis(records, panel):
    return next(r["config"]["panels"][panel] for r in records if panel in r["config"]["panels"])


def nstar_bootstrap(groups, tau, resamples=200, seed=0):
    """N* of each group of records (where the best of their mean curves reaches tau; nan:
    never): row 0 on the draws as run, a row per bootstrap resample (shared by the groups)."""
    rng = np.random.default_rng(seed)
    n = min(r["config"]["draws"] for rs in groups for r in rs)
    picks = [np.arange(n)] + [rng.integers(0, n, n) for _ in range(resamples)]
    table = np.full((len(picks), len(groups)), np.nan)
    for j, rs in enumerate(groups):
        acc = [np.array(r["result"]["accuracy"])[:n] for r in rs]      # (draws, len(Ns))
        for i, k in enumerate(picks):
            best = np.max([a[k].mean(0) for a in acc], axis=0)
            x = crossing(rs[0]["config"]["Ns"], best, tau)
            table[i, j] = np.nan if x is None else x
    return table


def fit_exponents(points, boot, axes="VdL"):
    """Exponents of N* ~ V^a L^b d^c (least squares, axes that vary) per row of boot with
    every N* finite: (names, the fit on row 0, its 95% interval lo, hi, rows left out)."""
    X = np.log(np.array(points, float).reshape(-1, 3))         # (points, 3): V, d, L
    names = [k for k, col in zip("VdL", X.T) if k in axes and len(col) and np.ptp(col) > 0]
    A = np.column_stack([np.ones(len(X))] + [X[:, "VdL".index(k)] for k in names])
    fits = []
    for row in boot:
        if np.isfinite(row).all() and len(names) and len(X) > len(names):
            fits.append(np.linalg.lstsq(A, np.log(row), rcond=None)[0][1:])
    if not fits:
        return names, None, None, None, len(boot)
    fits = np.array(fits)
    lo, hi = np.percentile(fits[1:], [2.5, 97.5], axis=0) if len(fits) > 1 else (fits[0],) * 2
    return names, fits[0], lo, hi, len(boot) - len(fits)


def nstar_panel(records, panel, tau):
    """Per learner of a panel: its points, N* (as run) with a 95% interval, the bounds
    (reached at the first N), its exponent along the axis (d < V, no bounds), the formula's N*."""
    out = {}
    ti = records[0]["config"]["taus"].index(tau)
    for learner in LEARNERS:
        pts = learner_points(records, panel, learner)
        if len(pts) < 2:
            continue
        boot = nstar_bootstrap([rs for _, _, rs in pts], tau)
        ranked = np.sort(np.where(np.isnan(boot[1:]), np.inf, boot[1:]), axis=0)
        keys = [(c["V"], c["d"], c["L"]) for _, c, _ in pts]
        bound = boot[0] == [c["Ns"][0] for _, c, _ in pts]
        fit = np.array([d < V for V, d, _ in keys]) & ~bound & np.isfinite(boot[0])
        exps = fit_exponents(np.array(keys)[fit], boot[:, fit], records_axis(records, panel))
        pred = [rs[0]["result"].get("predicted_N", [np.nan] * (ti + 1))[ti] for _, _, rs in pts]
        out[learner] = dict(x=np.array([x for x, _, _ in pts], float), n=boot[0], keys=keys,
                            lo=ranked[int(0.025 * (len(ranked) - 1))], bound=bound, fit=fit,
                            hi=ranked[math.ceil(0.975 * (len(ranked) - 1))], exps=exps,
                            pred=np.array(pred, float), recs=[rs[0] for _, _, rs in pts])
    return out


def nstar_table(records, panel, tau):
    """A panel's table at tau: N* per learner [95% interval], the formula's N*, the
    first-gradient and coverage bounds; then the exponents."""
    found = nstar_panel(records, panel, tau)
    first = next(iter(found.values()))
    lines = [f"\nN* against {panel}, tau = {tau:g} (mean accuracy, log-interpolated; [95% "
             "interval]; - : none in its N grid; <= : at the first N)",
             f"| {records_axis(records, panel)} | d/V | " + " | ".join(LEARNERS[m] for m in found)
             + " | formula | first-gradient bound | coverage |",
             "|---" * (len(found) + 5) + "|"]
    for i, (V, d, L) in enumerate(first["keys"]):
        cells = " | ".join(nstar_cell(p, (V, d, L)) for p in found.values())
        lines.append(f"| {first['x'][i]:g} | {d / V:.3g} | {cells} | "
                     f"{formula_cells(found.get('three_step'), (V, d, L), tau)} | "
                     f"{theory.coverage_N(V, tau):.0f} |")
    lines += [f"{LEARNERS[k]}: {exponent_text(f['exps'], sum(f['fit']))}" for k, f in found.items()]
    three = found.get("three_step")
    if three is not None:
        has = np.isfinite(three["pred"] * three["n"]) & ~three["bound"]
        close = np.sum(abs(np.log(three["pred"][has] / three["n"][has])) <= math.log(1.5))
        formula = fit_exponents(np.array(three["keys"])[three["fit"]],
                                three["pred"][None, three["fit"]], records_axis(records, panel))
        lines.append(f"formula: {exponent_text(formula, three['fit'].sum())}; within 1.5x of "
                     f"three steps at {close} of {has.sum()} points with a measured N*")
    return "\n".join(lines)


def formula_cells(three, key, tau):
    """The formula's N* (none: its limit is below tau), the first-gradient bound's N*."""
    if three is None or key not in three["keys"]:
        return "- | -"
    r = three["recs"][three["keys"].index(key)]
    pred = f"{three['pred'][three['keys'].index(key)]:.0f}"
    if pred == "inf":
        pred = f"none (limit {r['result']['predicted_limit']:.3f})"
    return f"{pred} | {r['result']['bound_N'][r['config']['taus'].index(tau)]:.0f}"


def exponent_terms(exps):
    """ "d^c [lo, hi], ..." of fit_exponents' result, or "no fit"."""
    names, fit, lo, hi, _ = exps
    if fit is None:
        return "no fit"
    return ", ".join(f"{k}^{f:.2f} [{a:.2f}, {b:.2f}]"
                     for k, f, a, b in zip(names, fit, lo, hi))


def exponent_text(exps, k):
    if exps[1] is None:
        return f"no fit ({k} points with an N*, d < V, bounds left out)"
    return f"N* ~ {exponent_terms(exps)} over {k} points ({exps[4]} resamples lack an N*)"


def nstar_cell(p, key):
    """A learner's N* at a point: "N* [lo, hi]", "<=" before a bound, "-" none, "" not run."""
    if key not in p["keys"]:
        return ""
    j = p["keys"].index(key)
    if not np.isfinite(p["n"][j]):
        return "-"
    n, lo, hi = (f"{v:.0f}" if np.isfinite(v) else "-" for v in (p["n"][j], p["lo"][j], p["hi"][j]))
    return f"{'<= ' if p['bound'][j] else ''}{n} [{lo}, {hi}]"


def product_table(records, tau):
    """Per learner, over every panel's points at tau: the exponents of N* ~ V^a L^b d^c and
    the product N* / (V^a L^b d^c) (exponents to 1/2) with 95% intervals: is it constant?"""
    lines = [f"\nall points, tau = {tau:g}: N* ~ V^a L^b d^c, and the product it supports"]
    panels = panels_of(records)
    for learner in LEARNERS:
        found = [nstar_panel(records, panel, tau).get(learner) for panel in panels]
        found = [p for p in found if p is not None]
        keys = list(dict.fromkeys(k for p in found for k, f in zip(p["keys"], p["fit"]) if f))
        if len(keys) < 3:
            continue
        pts = [learner_points(records, panel, learner) for panel in panels]
        groups = {(c["V"], c["d"], c["L"]): rs for ps in pts for _, c, rs in ps}
        boot = nstar_bootstrap([groups[k] for k in keys], tau)
        exps = fit_exponents(keys, boot)
        if exps[1] is None:
            continue
        power = {k: round(2 * f) / 2 for k, f in zip(exps[0], exps[1])}
        a, b, c = (power.get(k, 0) for k in "VLd")
        V, d, L = np.array(keys, float).T
        prod = boot / (V ** a * L ** b * d ** c)
        lo, hi = np.nanpercentile(prod[1:], [2.5, 97.5], axis=0)
        lines.append(f"{LEARNERS[learner]}: {exponent_text(exps, len(keys))}; product "
                     f"N* / (V^{a:g} L^{b:g} d^{c:g}): max/min {prod[0].max() / prod[0].min():.2f}"
                     ", its intervals "
                     f"{'share' if lo.max() <= hi.min() else 'do not share'} a value")
        lines += [f"  (V, d, L) = {k}: {p:.3g} [{a:.3g}, {b:.3g}]"
                  for k, p, a, b in zip(keys, prod[0], lo, hi)]
    return "\n".join(lines)


def nstar_summary(records):
    panels = panels_of(records)
    lines = []
    for tau in records[0]["config"]["taus"]:
        lines += [nstar_table(records, panel, tau) for panel in panels]
        if len(panels) > 1:
            lines.append(product_table(records, tau))
    return "\n".join(lines)


B_LITERAL = {"small": dict(
    B_SCALING["small"], learners=["three_step", "literal", "best_q"], q_grid=[1.0, 2.0, 10.0, 20.0],
    panels=[{"V": 256, "d": 128, "L": [2, 4, 8, 16, 32, 64, 128]},
            {"V": 256, "d": 64, "L": [2, 4, 8, 16, 32, 64, 128]}], Lmax=128)}
B_LITERAL["tiny"] = dict(B_SCALING["tiny"], learners=B_LITERAL["small"]["learners"],
                         q_grid=[2.0], panels=[{"V": 32, "d": 16, "L": [2, 8]}] * 2)

B_CEILING = {"small": dict(
    B_SCALING["small"], learners=["three_step", "gradinfo", "assign"], q=10.0,
    taus=[0.1, 0.5, 0.9], Lmax=32, top=128, draws=12,
    Nmax={m: 2 ** 20 for m in ("three_step", "gradinfo", "assign")},
    panels=[{"V": 1024, "L": 8, "d": [128, 192, 256, 384, 512]},
            {"V": 1024, "d": 384, "L": [4, 8, 16, 32]},
            {"V": [1024, 1448], "d": 512, "L": 8}])}
B_CEILING["full"] = dict(B_CEILING["small"], panels=B_CEILING["small"]["panels"][:2]
                         + [{"V": [1024, 1448, 2048], "d": 512, "L": 8}])
B_CEILING["tiny"] = dict(B_SCALING["tiny"], learners=B_CEILING["small"]["learners"],
                         taus=[0.1, 0.5])


def b_ceiling_one(cfg):
    """nstar_one; "assign": the first gradient's statistic decoded with one label per token."""
    return nstar_one(cfg, assign_logits)


def assign_logits(cfg, fixed, samples, test, decode):
    if cfg["method"] != "assign":
        return learner_logits(cfg, fixed, samples, test, decode)
    G = rc.label_gradient(fixed, *samples, np.full(samples[0].shape, 1 / cfg["L"]))
    labels = train.assignment(decode(G))                          # (V,) a permutation
    tokens, pos, _ = test
    return np.eye(cfg["V"])[labels[tokens[np.arange(len(pos)), pos]]], math.nan


# ------------------------------------------------------------------ the list

def _entry(help, grid, configs, one, summary):
    return {"help": help, "grid": grid, "configs": configs, "one": one, "summary": summary}


EXPERIMENTS = {
    "b_agree": _entry("paper B: predicted vs measured accuracy of three steps",
                      B_AGREE, b_agree_configs, b_agree_one, b_agree_summary),
    "b_embed": _entry("paper B: one-hot (d = V + 2) vs random embeddings",
                      B_EMBED, b_embed_configs, draws_one, b_embed_summary),
    "b_mlp": _entry("paper B: attention only vs + fixed MLP, three steps and Adam",
                    B_MLP, b_mlp_configs, b_mlp_one, b_mlp_summary),
    "b_scaling": _entry("paper B: N* against d, L and V near the ceiling (d² ≈ V)",
                        B_SCALING, nstar_configs, nstar_one, nstar_summary),
    "b_literal": _entry("paper B: N* against L, the literal steps and the best q",
                        B_LITERAL, nstar_configs, nstar_one, nstar_summary),
    "b_ceiling": _entry("paper B: N* against V, L and d away from the ceiling (d² ≥ 16V)",
                        B_CEILING, nstar_configs, b_ceiling_one, nstar_summary),
}
