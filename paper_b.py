"""paper_b.py -- paper B's experiments (Vural, Bietti, Soltanolkotabi, Wu, ICLR 2026), in
the blocks of paper_a.py: a grid per scale, configs, one run, a summary.

Every experiment here runs draws_one: one learner on many independent draws of
embeddings, permutation, training and test set, paired across settings (MODEL.md 3).
The model and the formula are this project's own instance of the paper's setting."""
import hashlib
import itertools
import json
import math
import os

import numpy as np

import recall as rc
import theory
import train

LEARNERS = {"three_step": "three steps", "gradinfo": "gradient information", "adam": "Adam"}
DRAWS = {"tiny": 3, "small": 20}      # independent draws per point


# ------------------------------------------------------------------ one learner, many draws

def draws_config(V, d, L, Ns, seed, draws, q=10.0, m=None, kind="gaussian",
                 method="three_step", n_test=2000, Lmax=None, dtype="float32", **extra):
    """One paper-B config, checked (steps, lr: Adam's only; MODEL.md 3: float64 for the
    gradient information, whose pseudo-inverses fail in float32)."""
    Lmax = Lmax or L
    if draws < 2 or n_test < 1 or min(Ns, default=0) < 1 or Lmax < L:
        raise ValueError(f"need draws >= 2, n_test >= 1, every N >= 1 and Lmax >= L; got "
                         f"draws={draws}, n_test={n_test}, Ns={Ns}, L={L}, Lmax={Lmax}")
    if method != "adam":
        extra = {k: v for k, v in extra.items() if k not in ("steps", "lr")}
    cfg = dict(V=V, d=d, L=L, Ns=[int(N) for N in Ns], seed=seed, draws=draws, q=q, kind=kind,
               method=method, n_test=n_test, Lmax=Lmax, dtype=dtype, **extra)
    if method == "gradinfo":
        cfg["dtype"] = "float64"
    return cfg if m is None else dict(cfg, m=m)


def draw(cfg, k):
    """Draw k of a config (MODEL.md 3): the fixed arrays (rng [seed, k, 0]), max(Ns)
    training samples, nested in N ([seed, k, 1]), the test set ([seed, k, 2])."""
    rng = np.random.default_rng([cfg["seed"], k, 0])
    task = rc.make_retrieval(cfg["V"], cfg["d"], cfg["L"], rng, cfg.get("m"), cfg["kind"])
    rng = np.random.default_rng([cfg["seed"], k, 1])
    task["perm"] = rng.permutation(cfg["V"])
    samples = rc.sample_retrieval(task, max(cfg["Ns"]), rng, cfg["Lmax"])
    test_rng = np.random.default_rng([cfg["seed"], k, 2])
    test = rc.sample_retrieval(task, cfg["n_test"], test_rng, cfg["Lmax"])
    return rc.retrieval_fixed(task, cfg["dtype"]), samples, test


def draws_one(cfg, learner=None):
    """The test accuracy and attention of the learner (learner_logits unless given) for
    cfg["draws"] draws at each N of cfg["Ns"], and each draw's |z_trig|^2."""
    learner = learner or learner_logits
    out = {"accuracy": [], "attention": [], "z2": []}
    for k in range(cfg["draws"]):
        fixed, samples, test = draw(cfg, k)
        decode = None
        if cfg["method"] == "gradinfo":                    # its pseudo-inverses, once a draw
            decode = train.gradinfo_decoder(fixed, cfg["L"])
        runs = [learner(cfg, fixed, [x[:N] for x in samples], test, decode) for N in cfg["Ns"]]
        out["accuracy"].append([rc.accuracy(logits, test[2]) for logits, _ in runs])
        out["attention"].append([attention for _, attention in runs])
        out["z2"].append(float(fixed["z_trig"] @ fixed["z_trig"]))
    return out


def learner_logits(cfg, fixed, samples, test, decode):
    """Train cfg["method"] on the samples: the test logits (n_test, V) and the attention on
    the marked position.  "gradinfo": G = grad_WV at zero, decoded per token (decode) and
    read at the marked position, given (its attention: nan)."""
    tokens, pos, _ = test
    rows = np.arange(len(pos))
    if cfg["method"] == "gradinfo":
        G = rc.label_gradient(fixed, *samples, np.full(samples[0].shape, 1 / cfg["L"]))
        return np.eye(cfg["V"])[decode(G)[tokens[rows, pos]]], math.nan
    if cfg["method"] == "adam":
        params = train.retrieval_adam(fixed, *samples, cfg["steps"], cfg["lr"])
    else:
        params = train.three_step_limit(fixed, *samples, query_norm=cfg["q"])
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
B_AGREE["full"] = B_AGREE["small"]


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
            out.append(draws_config(p["V"], p["d"], p["L"], [p["N"]], seed, draws,
                                    q=float(p.get("q", 10.0)), n_test=grid["n_test"],
                                    theory=version, bias_draws=grid["bias_draws"],
                                    m=p.get("m"), bias_lift=grid["bias_lift"], hidden=hidden))
    return out


def _bad_point_keys(p):
    """The keys of a b_agree point that are wrong, missing or unknown, sorted."""
    bad = set(p) ^ {"V", "d", "L", "N"}
    bad -= {"q", "m"}
    for k, v in p.items():
        if k == "m" and v is None:
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
    set 0: tuning, 1: tuning with an MLP, 2: hidden."""
    rows = []
    for r in records:
        c, res = r["config"], r["result"]
        m = c.get("m")                                           # None without an MLP
        acc = np.array(res["accuracy"])[:, 0]
        predicted = np.array(res["predicted"])                   # (draws, 2): mean, sd
        sd_b = np.sqrt(np.mean(predicted[:, 1] ** 2))
        if c.get("hidden"):
            which = 2
        else:
            which = 1 if m else 0
        rows.append(dict(
            key=(c["V"], c["Ns"][0], c["d"], c["L"], c["q"], m), set=which,
            att=np.mean(res["attention"]), meas=acc.mean(), meas_sd=acc.std(ddof=1),
            draws=len(acc), sd_b=sd_b, pred=predicted[:, 0].mean(),
            pred_sd=np.sqrt(sd_b ** 2 + predicted[:, 0].var()), fresh=np.mean(res["fresh"]),
            se=(predicted[:, 0] - acc).std(ddof=1) / len(acc) ** 0.5))
    return sorted(rows, key=lambda w: [w["set"] == 2] + [v or 0 for v in w["key"]])


def b_agree_summary(records):
    rows = agreement_rows(records)
    lines = ["| set | V | N | d | L | q | m | attention | measured | predicted (frozen bias) | "
             "diff ± se | sd with |z_trig|² fixed | fresh-noise formula |", "|" + "---|" * 13]
    for w in rows:
        name = "hidden" if w["set"] == 2 else "tuning"
        key = " | ".join(f"{v:g}" if v else "-" for v in w["key"])
        lines.append(f"| {name} | {key} | {w['att']:.2f} | {w['meas']:.3f} ± "
                     f"{w['meas_sd']:.3f} | {w['pred']:.3f} ± {w['pred_sd']:.3f} | "
                     f"{w['pred'] - w['meas']:+.3f} ± {w['se']:.3f} | {w['sd_b']:.3f} | "
                     f"{w['fresh']:.3f} |")
    for which, name in enumerate(("tuning", "tuning, MLP", "hidden")):
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
    se = ""
    if n > 1:
        se = f" ± {diff.std(ddof=1) / n ** .5:.4f} (sd of the diffs / sqrt {n})"
    plural = "s" if n > 1 else ""
    return (f"\n{name}: {n} point{plural}, {rows[0]['draws']} draws each: mean |predicted "
            f"- measured| = {np.abs(diff).mean():.3f} (largest {np.abs(diff).max():.3f}), "
            f"mean signed {diff.mean():+.4f}{se} (fresh-noise formula: "
            f"{np.abs(fresh).mean():.3f}, {fresh.mean():+.3f}); predicted / measured sd: "
            f"median {np.median(ratio):.2f}, {within} of {n} within 30%")


# ------------------------------------------------------------------ b_embed

B_EMBED = {"small": dict(V=64, L=8, n_N=7, q=10.0, draws=DRAWS["small"])}
B_EMBED["tiny"] = dict(B_EMBED["small"], V=8, L=4, n_N=2, draws=DRAWS["tiny"])
B_EMBED["full"] = B_EMBED["small"]


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
B_MLP["full"] = B_MLP["small"]


def b_mlp_configs(grid, seed):
    """Per d, on the same draws: three steps (N samples) with attention only, then each m
    plain and centred; Adam (adam_N samples, adam_draws draws), attention only and each m."""
    arms = [{"method": "three_step", "m": None, "centred": False}]
    for m in grid["m"]:
        arms.append({"method": "three_step", "m": m, "centred": False})
        arms.append({"method": "three_step", "m": m, "centred": True})
    for m in [None] + grid["m"]:
        arms.append({"method": "adam", "m": m, "centred": False})
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


# ------------------------------------------------------------------ b_scaling

B_SCALING = {"small": dict(
    V0=256, L0=8, d0=128, d=[16, 24, 32, 48, 64, 96, 128], d_contrast=256,
    L=[2, 4, 8, 16, 32, 64], V=[96, 128, 181, 256, 362], three_step_Nmax=32768, top=32,
    tau=0.1, q=5.0, n_test=1000, draws=DRAWS["small"], gradinfo_Nmax=4096, adam_draws=5,
    adam_steps=150, adam_lr=0.02, adam_Nmax=256)}
B_SCALING["tiny"] = dict(B_SCALING["small"], V0=32, d0=16, d=[8, 16], d_contrast=32,
                         L=[2, 8], V=[24, 32], three_step_Nmax=512, gradinfo_Nmax=512,
                         draws=3, adam_draws=2, adam_steps=20, adam_Nmax=64)
B_SCALING["full"] = B_SCALING["small"]


def b_scaling_configs(grid, seed):
    """Panels: d at (V0, L0) with a d >= V contrast, L at (V0, d0), V at d = V/2; every
    learner on N = 16, 32, ... (Adam 8, ...) to its cap and top V^2/d (MODEL.md 4.8)."""
    if not 1 / min(grid["V"] + [grid["V0"]]) < grid["tau"] < 1 or grid["d_contrast"] < grid["V0"]:
        raise ValueError(f"need 1/V < tau < 1 at every V, d_contrast >= V0; got {grid}")
    points = [(grid["V0"], d, grid["L0"]) for d in grid["d"] + [grid["d_contrast"]]]
    points += [(grid["V0"], grid["d0"], L) for L in grid["L"]]
    points += [(V, V // 2, grid["L0"]) for V in grid["V"]]
    out = []
    for (V, d, L), method in itertools.product(points, ("three_step", "gradinfo", "adam")):
        first = 8 if method == "adam" else 16              # Adam nears the coverage bound
        top = min(grid[method + "_Nmax"], grid["top"] * V * V / d)
        Ns = [first * 2 ** k for k in range(24) if first * 2 ** k <= top]
        draws = grid["adam_draws"] if method == "adam" else grid["draws"]
        version = theory_version() if method == "three_step" else None   # the formula's N*
        out.append(draws_config(V, d, L, Ns, seed, draws, q=grid["q"], method=method,
                                n_test=grid["n_test"], tau=grid["tau"], V0=grid["V0"],
                                d0=grid["d0"], L0=grid["L0"], steps=grid["adam_steps"],
                                lr=grid["adam_lr"], Lmax=max(grid["L"] + [grid["L0"]]),
                                theory=version))
    return out


def b_scaling_one(cfg):
    """draws_one; for three steps also the formula's N* and its accuracy as N -> inf."""
    res = draws_one(cfg)
    if cfg["method"] == "three_step":
        args = (cfg["V"], cfg["d"], cfg["L"], cfg["q"])
        res["predicted_N"] = theory.critical_N(*args, cfg["tau"])
        res["predicted_limit"] = theory.retrieval_accuracy_frozen(args[0], 1e9, *args[1:])[0]
    return res


def crossing(xs, ys, tau):
    """The first x where y reaches tau, interpolated in log x (xs[0] if there already);
    None if never."""
    if len(ys) and ys[0] >= tau:
        return float(xs[0])
    for i in range(len(xs) - 1):
        x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
        if y0 < tau <= y1:
            t = (tau - y0) / (y1 - y0)
            return float(np.exp(np.log(x0) + t * (np.log(x1) - np.log(x0))))
    return None


def nstar_bootstrap(records, resamples=200, seed=0):
    """N* of each record (its mean accuracy's crossing of tau; nan: never): row 0 on the
    draws as run, then a row per bootstrap resample of the draws, shared by the records."""
    rng = np.random.default_rng(seed)
    n = min(r["config"]["draws"] for r in records)
    picks = [np.arange(n)] + [rng.integers(0, n, n) for _ in range(resamples)]
    table = np.full((len(picks), len(records)), np.nan)
    for j, r in enumerate(records):
        acc = np.array(r["result"]["accuracy"])                 # (draws, len(Ns))
        for i, k in enumerate(picks):
            x = crossing(r["config"]["Ns"], acc[k].mean(0), r["config"]["tau"])
            if x is not None:
                table[i, j] = x
    return table


def slope_interval(x, boot):
    """The log-log slope of N* against x (points with an N* as run), its 95% bootstrap
    interval over the resamples where each has one, and how many resamples lack one."""
    fit = np.isfinite(boot[0])
    slopes = []
    for row in boot:
        if np.isfinite(row[fit]).all():
            slopes.append(theory.loglog_slope(x[fit], row[fit]))
        else:
            slopes.append(math.nan)
    slopes = np.array(slopes)
    ok = slopes[1:][np.isfinite(slopes[1:])]
    lo, hi = math.nan, math.nan
    if len(ok):
        lo, hi = np.percentile(ok, [2.5, 97.5])
    return slopes[0], lo, hi, len(slopes) - 1 - len(ok)


def _panel_member(config, over):
    """Whether a b_scaling config belongs to the panel over d, L or V."""
    if over == "d":
        return config["V"] == config["V0"] and config["L"] == config["L0"]
    if over == "L":
        return config["V"] == config["V0"] and config["d"] == config["d0"]
    return config["d"] == config["V"] // 2 and config["L"] == config["L0"]


def scaling_points(records, over, method):
    """One learner's panel over "d", "L" or "V" (None if empty): x, N*, its 95% interval,
    the formula's N*, the bootstrap rows, d < V, bounds (at the first N), the fitted."""
    recs = [r for r in records
            if r["config"]["method"] == method and _panel_member(r["config"], over)]
    recs.sort(key=lambda r: r["config"][over])
    if not recs:
        return None
    boot = nstar_bootstrap(recs)
    resampled = np.sort(np.where(np.isnan(boot[1:]), np.inf, boot[1:]), axis=0)
    lo = resampled[int(0.025 * (len(resampled) - 1))]           # nan (never) sorts as inf
    hi = resampled[math.ceil(0.975 * (len(resampled) - 1))]
    pred = np.array([r["result"].get("predicted_N", math.nan) for r in recs], float)
    below = np.array([r["config"]["d"] < r["config"]["V"] for r in recs])
    bound = boot[0] == [r["config"]["Ns"][0] for r in recs]
    return dict(x=np.array([r["config"][over] for r in recs], float), n=boot[0], lo=lo,
                hi=hi, pred=pred, boot=boot, below=below, bound=bound,
                fit=below & ~bound & np.isfinite(boot[0]), recs=recs)


def scaling_table(records, over):
    """N* per learner against `over`, the formula's, the exponents over the d < V points."""
    panels = {}
    for method in LEARNERS:
        p = scaling_points(records, over, method)
        if p is not None and len(p["x"]) > 1:
            panels[method] = p
    c = records[0]["config"]
    names = " | ".join(LEARNERS[m] for m in panels)
    lines = [f"\nN* against {over} (mean accuracy {c['tau']:g}, log-interpolated; [95% "
             "interval]; - : none in its N grid, or never; <= : at the first N; blank: not "
             "run)",
             f"| {over} | d/V | {names} | predicted (three steps) | predicted / measured |",
             "|---" * (len(panels) + 4) + "|"]
    three = panels["three_step"]
    for i, r in enumerate(three["recs"]):
        cells = "".join(f" | {nstar_cell(p, r['config'][over])}" for p in panels.values())
        lines.append(f"| {r['config'][over]} | {r['config']['d'] / r['config']['V']:.3g}"
                     f"{cells} | {_predicted_cells(three, i)} |")
    for method, p in panels.items():
        lines.append(f"{LEARNERS[method]}: {_exponent_text(p, over)}")
    lines.append(_formula_line(three, over))
    return "\n".join(lines)


def _predicted_cells(three, i):
    """The formula's N* and its ratio to the measured one; where it has none, its limit."""
    r = three["recs"][i]
    pred = three["pred"][i]
    n = math.nan if three["bound"][i] else three["n"][i]           # a bound: no ratio
    if np.isfinite(pred):
        ratio = f"{pred / n:.2f}" if np.isfinite(n) else "-"
        return f"{pred:.0f} | {ratio}"
    acc = np.array(r["result"]["accuracy"]).mean(0)   # the formula's ceiling, measured best
    best_N = r["config"]["Ns"][acc.argmax()]
    return (f"- | predicted accuracy -> {r['result']['predicted_limit']:.3f} as N -> inf; "
            f"measured best mean {acc.max():.3f} at N = {best_N}")


def _exponent_text(p, over):
    s, lo, hi, out = slope_interval(p["x"][p["fit"]], p["boot"][:, p["fit"]])
    k = int(p["fit"].sum())                                  # fitted points have an N*
    if k < 2:
        return "no fit (< 2 N*, bounds left out)"
    return (f"N* ~ {over}^({s:+.2f}) [{lo:+.2f}, {hi:+.2f}] over {k} points with d < V "
            f"(bounds left out; {out} of {len(p['boot']) - 1} resamples without an N*)")


def _formula_line(three, over):
    has = np.isfinite(three["n"]) & ~three["bound"]
    log_ratio = np.log(three["pred"][has] / three["n"][has])
    close = int(np.sum(abs(log_ratio) <= math.log(1.5)))
    s = theory.loglog_slope(three["x"][three["fit"]], three["pred"][three["fit"]])  # nan: < 2
    fitted = f"N* ~ {over}^({s:+.2f})" if np.isfinite(s) else "no fit"
    return (f"predicted (three steps): {fitted} over the points three steps' fit uses; "
            f"predicted / measured within 1.5x at {close} of {has.sum()} points with a "
            "measured N* (d = V included, bounds left out)")


def nstar_cell(p, x):
    """One learner's N* at x as text: "N* [lo, hi]", "<= N* [...]" for a bound, or "-"."""
    j = np.flatnonzero(p["x"] == x)
    if not len(j):
        return ""                                                # not run
    j = j[0]
    if not np.isfinite(p["n"][j]):
        return "-"
    values = [p["n"][j], p["lo"][j], p["hi"][j]]
    n, lo, hi = (f"{v:.0f}" if np.isfinite(v) else "-" for v in values)
    at_most = "<= " if p["bound"][j] else ""                     # reached at once: a bound
    return f"{at_most}{n} [{lo}, {hi}]"


def collapse_points(records):
    """Per (N, d, L) of three steps at V0: theory.retrieval_snr and the accuracy's mean
    and sd over draws; and the rms distance of the means from theory.snr_accuracy."""
    V = records[0]["config"]["V0"]
    points = []
    for r in records:
        c = r["config"]
        if c["method"] != "three_step" or c["V"] != V:
            continue
        acc = np.array(r["result"]["accuracy"])
        for N, mean, sd in zip(c["Ns"], acc.mean(0), acc.std(0, ddof=1)):
            snr = theory.retrieval_snr(V, N, c["d"], c["L"], c["q"])
            points.append((snr, mean, sd, c["d"], c["L"], N))
    distances = [(a - theory.snr_accuracy(V, x)) ** 2 for x, a, *_ in points]
    return points, math.sqrt(np.mean(distances))


def b_scaling_summary(records):
    c = records[0]["config"]
    points, rms = collapse_points(records)
    tables = "".join(scaling_table(records, over) for over in ("d", "L", "V"))
    mean_sd = np.mean([p[2] for p in points])
    return (tables + f"\n\naccuracy against E_Z Phi(snr + Z)^(V-1) at V = {c['V0']}: rms "
            f"distance {rms:.3f} over {len(points)} (N, d, L) points; mean sd of one run "
            f"{mean_sd:.3f}\ncoverage bound (any learner): no N* below "
            f"{theory.coverage_N(c['V0'], c['tau']):.1f} at V = {c['V0']}")


# ------------------------------------------------------------------ the list

CHOICES = {"dtype": ("float32", "float64"), "method": tuple(LEARNERS)}
EXPERIMENTS = {
    "b_agree": dict(help="paper B: predicted vs measured accuracy of three steps",
                    grid=B_AGREE, configs=b_agree_configs, one=b_agree_one,
                    summary=b_agree_summary, choices=CHOICES),
    "b_embed": dict(help="paper B: one-hot (d = V + 2) vs random embeddings",
                    grid=B_EMBED, configs=b_embed_configs, one=draws_one,
                    summary=b_embed_summary, choices=CHOICES),
    "b_mlp": dict(help="paper B: attention only vs + fixed MLP, three steps and Adam",
                  grid=B_MLP, configs=b_mlp_configs, one=b_mlp_one, summary=b_mlp_summary,
                  choices=CHOICES),
    "b_scaling": dict(help="paper B: N* against d, L and V at d < V for three learners",
                      grid=B_SCALING, configs=b_scaling_configs, one=b_scaling_one,
                      summary=b_scaling_summary, choices=CHOICES),
}
