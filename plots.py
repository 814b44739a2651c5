"""plots.py -- one function per figure; each reads results files only (see train.py).

    python plots.py                 draw every figure whose results exist
    python plots.py fig5 ...        draw the named figures

Figures go to figures/<name>.png.  Theory curves come from theory.py.
"""
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt   # noqa: E402
import numpy as np                # noqa: E402

import theory                     # noqa: E402
import train                      # noqa: E402
from train import FITS, RESULTS, crossing, fig5_stages, load_records   # noqa: E402

FIGURES = {}   # name -> function(results_dir, path)


def figure(name):
    def register(fn):
        FIGURES[name] = fn
        return fn
    return register


def _save(fig, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def _need(records, name, results):
    if not records:
        raise FileNotFoundError(f"no results for {name} in {results}/{name}/: "
                                f"run `python train.py {name}` first")
    return records


# ----------------------------------------------------------------------------- paper A, Fig. 5

@figure("fig5")
def plot_fig5(results=RESULTS, path="figures/fig5_sequential.png"):
    """Total, relation-only and subject-only test losses of linear attention under SGD."""
    rec = _need(load_records(results, "fig5"), "fig5", results)[-1]
    c, cfg = rec["result"], rec["config"]
    n_ans, D = cfg["R"] * cfg["D"], cfg["D"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(c["step"], c["total"], color="k", lw=2, label="total loss")
    ax.plot(c["step"], c["relation"], color="C0", label=r"relation-only: $-\log\sum_{a\in r}p(a)$")
    ax.plot(c["step"], c["subject"], color="C3", label=r"subject-only: $-\log\sum_{a\equiv y \,(\mathrm{mod}\,D)}p(a)$")
    ax.axhline(np.log(n_ans), ls="--", color="gray", lw=1)
    ax.axhline(np.log(D), ls="--", color="gray", lw=1)
    ax.text(0, np.log(n_ans), rf"$\ln {n_ans}$", va="bottom", ha="left", color="gray")
    ax.text(0, np.log(D), rf"$\ln {D}$", va="bottom", ha="left", color="gray")
    stages = fig5_stages(c, n_ans, D)
    colors = {"plateau": "gray", "hallucination": "C1", "recall": "C2"}
    for label, (a, b) in stages.items():
        if a is not None and b is not None and b > a:
            ax.axvspan(a, b, alpha=0.07, color=colors[label])
            ax.text((a + b) / 2, 0.22, label, ha="center", fontsize=8, color="0.3",
                    transform=ax.get_xaxis_transform())
    ax.set_xlabel("SGD step")
    ax.set_ylabel("test loss (nats)")
    ax.set_title(f"Sequential learning: S={cfg['S']}, R={cfg['R']}, D={D}, one-hot, linear attention",
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper right", bbox_to_anchor=(1.0, 0.9))
    return _save(fig, path)


# ----------------------------------------------------------------------------- paper A, capacity figures

def _one_scale(records, configs=None):
    """The records of one scale only, so a partial full-scale run never mixes with the
    default one: "full" if any full-scale record exists, else the rest.  With configs (a
    train.<x>_configs function), also drop stale records whose config the current code no
    longer builds (e.g. after a grid change), for any base seed present."""
    full = [r for r in records if r["config"].get("scale") == "full"]
    recs = full or [r for r in records if r["config"].get("scale") != "full"]
    single = [r for r in recs if r["config"].get("dtype") == "float32"]
    recs = single or recs                    # one precision too: float32 (the default) if any
    if configs is not None and recs and "scale" in recs[0]["config"]:
        scale = recs[0]["config"]["scale"]
        bare = lambda c: {k: v for k, v in c.items() if k != "dtype"}   # noqa: E731
        current = [bare(c) for b in {r["config"]["seed"] for r in recs} for c in configs(scale, b)]
        recs = [r for r in recs if bare(r["config"]) in current] or recs
    return recs


def _group(records, *keys):
    """Group records by config keys -> {tuple: [record, ...]}."""
    out = {}
    for r in records:
        out.setdefault(tuple(r["config"].get(k) for k in keys), []).append(r)
    return out


def _by(records, key):
    """Group records by config[key]: sorted keys and, per key, the list of results."""
    groups = {k: [r["result"] for r in rs] for (k,), rs in _group(records, key).items()}
    return sorted(groups), groups


def _band(ax, x, results, key, color, label):
    """Mean over seeds with a min-max band; returns the plotted (x, mean) for the tests."""
    vals = [[res[key] for res in rs] for rs in results]
    mean = np.array([np.mean(v) for v in vals])
    ax.fill_between(x, [min(v) for v in vals], [max(v) for v in vals], color=color, alpha=0.2, lw=0)
    ax.plot(x, mean, "o-", color=color, ms=3, label=label)
    return list(map(float, x)), mean.tolist()


def _save_with_data(fig, path, data):
    """Save the figure, and next to it (same name, .json) the numbers it plots and the fits,
    so tests and the README can check what the figure shows."""
    train.save_json(os.path.splitext(path)[0] + ".json", data)
    return _save(fig, path)


@figure("linear")
def plot_linear(results=RESULTS, path="figures/linear.png"):
    """N vs d^2 for the trained (99%, 100%) and Hebbian memories, with the theory lines."""
    recs = _one_scale(_need(load_records(results, "linear"), "linear", results),
                      train.linear_configs)
    ds, groups = _by(recs, "d")
    fits = FITS["linear"](recs)
    x = np.array(ds, float) ** 2
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    plotted = {}
    for key, color, label in [("cap99", "C0", "trained, 99%"), ("cap100", "C2", "trained, 100%"),
                              ("hebb100", "C3", r"Hebbian $W=\sum_x e_x u_x^\top$, 100%")]:
        c = fits.get(key, {}).get("c", float("nan"))
        plotted[key] = _band(ax, x, [groups[d] for d in ds], key, color,
                             f"{label} (fit $c$={c:.2f})")
    dd = np.geomspace(min(ds), max(ds), 50)
    for c, style, label in [(theory.C_SHARP_LINEAR, "k--", r"$d^2 = 2\,N\ln N$ (sharp top-1)"),
                            (theory.C_AUTHORS_LINEAR, "k:", r"$d^2 = 1.3\,N\ln N$ (authors)")]:
        ax.plot(dd ** 2, [theory.linear_capacity_N(v, c) for v in dd], style, lw=1, label=label)
    ax.plot(dd ** 2, [theory.counting_bound_N(v * v) for v in dd], "-", color="gray", lw=1,
            label=r"2 bits per parameter (Gardner): $N\log_2 N = 2d^2$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"parameters $d^2$")
    ax.set_ylabel(r"capacity $N$ (associations)")
    ax.set_title(r"Linear memory $\arg\max_y\, e_x^\top W u_y$: capacity by bisection", fontsize=9)
    ax.legend(fontsize=7)
    return _save_with_data(fig, path, {"plotted": plotted, "fits": fits})


@figure("mlp")
def plot_mlp(results=RESULTS, path="figures/mlp.png"):
    """N vs m d for both output regimes, one colour per alpha = m/d, with the authors' lines."""
    recs = _one_scale(_need(load_records(results, "mlp"), "mlp", results),
                      train.mlp_configs)
    fits = FITS["mlp"](recs)
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2))
    plotted = {}
    for ax, regime in zip(axes, ("M=N", "M=32")):
        rs = [r for r in recs if r["config"]["regime"] == regime]
        for i, alpha in enumerate(sorted({r["config"]["alpha"] for r in rs})):
            sub = [r for r in rs if r["config"]["alpha"] == alpha]
            mds, groups = _by([{"config": {"md": r["result"]["md"]}, "result": r["result"]}
                               for r in sub], "md")
            plotted[f"{regime} alpha={alpha}"] = _band(ax, np.array(mds, float),
                                                       [groups[v] for v in mds], "cap99",
                                                       f"C{i}", rf"$m = {alpha}\,d$")
        if not rs:
            continue
        md_all = [r["result"]["md"] for r in rs]
        xx = np.geomspace(min(md_all), max(md_all), 50)
        ref = ("$m d = 0.35\\,N\\ln N$" if regime == "M=N" else "$m d = 1.2\\,N$")
        ax.plot(xx, [theory.mlp_reference_N(v, regime) for v in xx], "k:", lw=1,
                label=f"{ref} (authors)")
        M = None if regime == "M=N" else 32
        ax.plot(xx, [theory.counting_bound_N(2 * v, M) for v in xx], "-", color="gray", lw=1,
                label=r"2 bits per parameter (Gardner), params $= 2md$")
        f = fits.get(regime, {})
        ax.set_title(f"MLP memory, {regime.replace('M=', '$M = $')}: fit $c$ = {f.get('c', float('nan')):.2f}, "
                     f"{f.get('bits_per_param', float('nan')):.2f} bits/param", fontsize=9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$m \cdot d$")
        ax.set_ylabel(r"capacity $N$ (99% recalled)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _save_with_data(fig, path, {"plotted": plotted, "fits": fits})


@figure("facts")
def plot_facts(results=RESULTS, path="figures/facts.png"):
    """Facts stored vs parameters 4 H dh d + 2 m d, both criteria, with the authors' line and
    the 2-bits-per-parameter information line S R log2 D = 2 params."""
    recs = _one_scale(_need(load_records(results, "facts"), "facts", results),
                      train.facts_configs)
    fits = FITS["facts"](recs)
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    plotted = {}
    P = [r["result"]["params"] for r in recs]
    for key, color, marker, label in [("facts_fresh99", "C0", "o", r"$\geq 99\%$ on 1024 fresh prompts (paper)"),
                                      ("facts_all", "C3", "x", "every fact on 4 prompts (strict)")]:
        F = [r["result"][key] for r in recs]
        f = fits.get(key, {})
        b = np.array([key == "facts_all" and train.strict_bound(r["result"]) for r in recs])
        ax.scatter(np.array(P)[~b], np.array(F)[~b], color=color, marker=marker, s=36, zorder=3,
                   label=f"{label}: {f.get('facts_per_param', float('nan')):.3f} facts/param, "
                         f"slope {f.get('loglog_slope', float('nan')):.2f}")
        if b.any():   # failed even at the smallest S tried: an upper bound
            ax.scatter(np.array(P)[b], np.array(F)[b], color=color, marker="v", s=36, zorder=3,
                       label="strict criterion failed at the smallest S tried (at most)")
        plotted[key] = [list(map(float, P)), list(map(float, F))]
    for r in recs:   # a capacity at its bracket's edge is a bound, not a value: say so
        c, x = r["config"], r["result"]
        label = f"d={c['d']}\nH={c['H']}" + ("" if (c["a"], c["b"]) == (1, 1) else f",a={c['a']},b={c['b']}")
        ax.annotate(label + (" (bound)" if x["lo_fails"] or x["hi_succeeds"] else ""),
                    (x["params"], x["facts_fresh99"]), fontsize=8, xytext=(-6, 0), zorder=4,
                    textcoords="offset points", ha="right", va="center", bbox={"fc": "w", "ec": "none", "pad": 0.5})
    pp = np.geomspace(min(P) / 1.5, max(P) * 1.5, 20)
    ax.plot(pp, [theory.facts_reference(v) for v in pp], "k:", lw=1, label=r"facts $= 0.15\,$params (authors)")
    D = recs[0]["config"]["D"]
    ax.plot(pp, [theory.facts_information_bound(v, D) for v in pp], "-", color="gray", lw=1,
            label=rf"$SR\log_2 {D} = 2\,$params (2 bits/param)")
    f = fits.get("facts_fresh99", {})
    if f:
        ax.plot(pp, f["facts_per_param"] * pp, "--", color="C0", lw=1,
                label=f"fit: facts = {f['facts_per_param']:.3f} params ({f['bits_per_param']:.2f} bits/param)")
    ax.set(xscale="log", yscale="log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(r"parameters $4Hd_hd + 2md$", fontsize=10)
    ax.set_ylabel(r"facts stored $S\cdot R$", fontsize=10)
    ax.set_title(f"One-layer transformer, $D$={D}, $S=R$, $T$={recs[0]['config']['T']}, $d_hH = a d$, $m = b d$", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1)
    return _save_with_data(fig, path, {"plotted": plotted, "fits": fits})


def _edges(v):
    """Cell edges for values on a geometric grid: geometric midpoints, end cells mirrored."""
    v = np.asarray(sorted(v), float)
    mid = np.sqrt(v[1:] * v[:-1]) if len(v) > 1 else v * np.sqrt(2)
    return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])


@figure("tradeoff")
def plot_tradeoff(results=RESULTS, path="figures/tradeoff.png"):
    """Accuracy over (attention params d dh H, MLP params d m) at one fact table, the measured
    frontier, the fitted lines attn = c_attn facts, MLP = c_mlp facts, their sum, the authors'."""
    recs = _one_scale(_need(load_records(results, "tradeoff"), "tradeoff", results),
                      train.tradeoff_configs)
    attn, mlp = (sorted({r["result"][k] for r in recs}) for k in ("attn_params", "mlp_params"))
    acc = np.full((len(mlp), len(attn)), np.nan)                   # (n_mlp, n_attn)
    for r in recs:
        res = r["result"]
        acc[mlp.index(res["mlp_params"]), attn.index(res["attn_params"])] = res["fresh_acc"]
    facts, cfg = recs[0]["result"]["facts"], recs[0]["config"]
    fits = train.tradeoff_fits(recs)["frontier"]
    xe, ye = _edges(attn), _edges(mlp)
    fig, ax = plt.subplots(figsize=(6.6, 5.2))
    mesh = ax.pcolormesh(xe, ye, acc, cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax).set_label("accuracy on fresh prompts", fontsize=9)
    for i, m in enumerate(mlp):         # values on their cell's colour, above every line
        for j, a in enumerate(attn):
            ax.text(a, m, f"{acc[i, j]:.2f}", ha="center", va="center", fontsize=8, zorder=5,
                    color="w" if acc[i, j] < 0.6 else "k", bbox={"fc": mesh.to_rgba(acc[i, j]),
                                                                   "ec": "none", "pad": 1})
    front = train.tradeoff_frontier(recs)                          # along the cells' lower edges
    level = [ye[-1] if m is None else ye[mlp.index(m)] for _, m in front]
    ax.stairs(level, xe, color="C3", lw=2.5, baseline=None, label=r"measured frontier: lowest cell $\geq 99\%$ per column")
    aa = np.geomspace(xe[0], xe[-1], 200)
    ax.plot(aa, theory.authors_frontier_mlp(aa, facts), "k--", lw=1,
            label="authors' frontier, scaled to our facts")
    if "attn_params_per_fact" in fits:
        ca, cm = fits["attn_params_per_fact"], fits["mlp_params_per_fact"]
        ax.axvline(ca * facts, color="C1", ls=":", lw=1.5, label=f"attention params = {ca:.2f} facts (fit)")
        ax.axhline(cm * facts, color="C6", ls=":", lw=1.5, label=f"MLP params = {cm:.2f} facts (fit)")
        ax.plot(aa, np.where(aa < ca * facts, cm * (facts - aa / ca), np.nan), "-", color="C1",
                lw=1, alpha=0.8, label=f"their sum: attn/{ca:.2f} + MLP/{cm:.2f} = facts")
    ax.set(xscale="log", yscale="log")
    ax.set_xlim(xe[0], max(xe[-1], 1.2 * fits.get("attn_params_per_fact", 0) * facts))
    ax.set_ylim(ye[0], max(ye[-1], 1.2 * fits.get("mlp_params_per_fact", 0) * facts))
    ax.set_xticks(attn, [str(a) for a in attn])
    ax.set_yticks(mlp, [str(m) for m in mlp])
    ax.tick_params(labelsize=8)
    ax.minorticks_off()
    ax.set_xlabel(rf"attention parameters $d\,d_h H$ ($H$ = {', '.join(str(a // (cfg['d'] * cfg['dh'])) for a in attn)})", fontsize=10)
    ax.set_ylabel(rf"MLP parameters $d\,m$ ($m$ = {', '.join(str(m // cfg['d']) for m in mlp)})", fontsize=10)
    ax.set_title(f"{facts} facts ($S=R={cfg['S']}$, $D={cfg['D']}$), $d={cfg['d']}$, $d_h={cfg['dh']}$",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    return _save_with_data(fig, path, {"plotted": {"attn": attn, "mlp": mlp, "acc": acc.tolist(),
                                                   "frontier": front}, "fits": fits})


# ----------------------------------------------------------------------------- paper B figures

def _curve(records, xkey, field="accuracy"):
    """Sorted x values and the seed-mean of result[field] at each x."""
    xs = sorted({r["config"][xkey] for r in records})
    ys = [float(np.mean([r["result"][field] for r in records if r["config"][xkey] == x]))
          for x in xs]
    return xs, ys


@figure("b_agree")
def plot_b_agree(results=RESULTS, path="figures/b_agree.png"):
    """Predicted (theory.retrieval_accuracy at each seed's |z_trig|^2) versus measured accuracy."""
    recs = _need(load_records(results, "b_agree"), "b_agree", results)
    fig, ax = plt.subplots(figsize=(4.6, 4.4))
    ax.fill_between([0, 1], [-0.1, 0.9], [0.1, 1.1], color="gray", alpha=0.15, lw=0,
                    label=r"$\pm 0.10$")
    ax.plot([0, 1], [0, 1], color="gray", lw=1)
    for mlp in (False, True):
        rs = [r for r in recs if bool(r["config"].get("m")) == mlp]
        if not rs:
            continue
        meas = [r["result"]["accuracy"] for r in rs]
        pred = [theory.retrieval_accuracy(r["config"]["V"], r["config"]["N"], r["config"]["d"],
                                          r["config"]["L"], r["config"]["q"],
                                          r["config"].get("m"), z2=r["result"]["z2"]) for r in rs]
        att = [r["result"]["attention"] for r in rs]
        sc = ax.scatter(meas, pred, c=att, cmap="viridis", vmin=0.4, vmax=1.0, s=22,
                        marker="s" if mlp else "o", edgecolor="k", lw=0.4,
                        label="attention + MLP" if mlp else "attention only")
    fig.colorbar(sc, ax=ax, label="attention on informative token")
    ax.set_xlabel("measured accuracy (one seed)")
    ax.set_ylabel("predicted accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("three-step model: theory vs simulation", fontsize=9)
    return _save(fig, path)


@figure("b_phase")
def plot_b_phase(results=RESULTS, path="figures/b_phase.png", taus=(0.25, 0.5)):
    """Accuracy over (N, d) at three L, measured, with the predicted tau contours."""
    recs = _need(load_records(results, "b_phase"), "b_phase", results)
    Ls = sorted({r["config"]["L"] for r in recs})
    fig, axes = plt.subplots(1, len(Ls), figsize=(4.0 * len(Ls), 3.6), sharey=True)
    for ax, L in zip(np.atleast_1d(axes), Ls):
        rs = [r for r in recs if r["config"]["L"] == L]
        Ns = sorted({r["config"]["N"] for r in rs})
        ds = sorted({r["config"]["d"] for r in rs})
        V, q = rs[0]["config"]["V"], rs[0]["config"]["q"]
        acc = np.full((len(ds), len(Ns)), np.nan)
        for r in rs:
            acc[ds.index(r["config"]["d"]), Ns.index(r["config"]["N"])] = r["result"]["accuracy"]
        im = ax.pcolormesh(_edges(Ns), _edges(ds), acc, vmin=0, vmax=1, cmap="magma",
                           shading="flat")
        Nf, df = np.geomspace(Ns[0], Ns[-1], 10), np.geomspace(ds[0], ds[-1], 7)
        pred = np.array([[theory.retrieval_accuracy(V, N, int(round(d)), L, q) for N in Nf]
                         for d in df])
        cs = ax.contour(Nf, df, pred, levels=list(taus), colors="c", linewidths=2)
        ax.clabel(cs, fmt={t: f"predicted {t:g}" for t in taus}, fontsize=7)
        ax.contour(Ns, ds, acc, levels=list(taus), colors="w", linestyles="--", linewidths=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("samples $N$")
        ax.set_title(rf"$L={L}$, $V={V}$, $|w|={q:g}$", fontsize=9)
    np.atleast_1d(axes)[0].set_ylabel("embedding dimension $d$")
    fig.colorbar(im, ax=axes, label="test accuracy (white dashed: measured contours)")
    return _save(fig, path)


@figure("b_nstar")
def plot_b_nstar(results=RESULTS, path="figures/b_nstar.png"):
    """N* versus d and versus V: bisection (points) and theory.critical_N (lines)."""
    recs = _need(load_records(results, "b_nstar"), "b_nstar", results)
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8))
    for ax, key in zip(axes, ("d", "V")):
        rs = train.nstar_sweep(recs, key)
        if not rs:
            continue
        c0 = rs[0]["config"]
        x = np.array([r["config"][key] for r in rs], float)
        y = np.array([r["result"]["nstar"] or np.nan for r in rs], float)
        xf = np.geomspace(x.min() / 1.2, x.max() * 1.2, 12)
        args = lambda v: dict(c0, **{key: int(round(v))})
        pred = np.array([theory.critical_N(a["V"], a["d"], a["L"], a["q"], a["tau"])
                         for a in map(args, xf)])
        pred_x = np.array([theory.critical_N(a["V"], a["d"], a["L"], a["q"], a["tau"])
                           for a in map(args, x)])
        ax.plot(xf, pred, color="C0", label=f"predicted (slope {theory.loglog_slope(x, pred_x):+.2f})")
        ax.plot(x, y, "o", color="k", label=f"measured (slope {theory.loglog_slope(x, y):+.2f})")
        ax.fill_between(xf, pred / 2, pred * 2, color="C0", alpha=0.12, label="factor 2")
        ax.set_xscale("log")
        ax.set_yscale("log")
        fixed = f"V={c0['V']}" if key == "d" else f"d={c0['d']}"
        ax.set_xlabel(f"${key}$  ({fixed}, L={c0['L']}, |w|={c0['q']:g})")
        ax.set_ylabel(rf"$N^*$ (accuracy $\geq$ {c0['tau']:g})")
        ax.legend(fontsize=8)
    return _save(fig, path)


@figure("b_embed")
def plot_b_embed(results=RESULTS, path="figures/b_embed.png"):
    """Accuracy versus N: one-hot embeddings (d = V+2) and random embeddings at several d."""
    recs = _need(load_records(results, "b_embed"), "b_embed", results)
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    groups = _group(recs, "kind", "d")
    for i, ((kind, d), rs) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][0] != "onehot", kv[0][1]))):
        N, acc = _curve(rs, "N")
        c = rs[0]["config"]
        col = "k" if kind == "onehot" else f"C{i}"
        lab = f"one-hot, $d=V+2={d}$" if kind == "onehot" else f"random, $d={d}$"
        ax.plot(N, acc, "o-", color=col, label=lab)
        if kind != "onehot":
            Nf = np.geomspace(N[0], N[-1], 20)
            ax.plot(Nf, [theory.retrieval_accuracy(c["V"], n, d, c["L"], c["q"]) for n in Nf],
                    ":", color=col, lw=1)
    Nf = np.geomspace(min(r["config"]["N"] for r in recs), max(r["config"]["N"] for r in recs), 40)
    ax.plot(Nf, [theory.coverage_bound(c["V"], n) for n in Nf], "--", color="gray",
            label="coverage bound (any learner)")
    ax.set_xscale("log")
    ax.set_xlabel("samples $N$")
    ax.set_ylabel("test accuracy")
    n_seeds = len({r["config"]["seed"] for r in recs})
    ax.set_title(f"V={c['V']}, L={c['L']}, |w|={c['q']:g}, mean of {n_seeds} seeds; "
                 "dotted: predicted", fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, path)


@figure("b_mlp")
def plot_b_mlp(results=RESULTS, path="figures/b_mlp.png"):
    """Accuracy versus m d for attention + fixed MLP; attention-only as horizontal lines."""
    recs = _need(load_records(results, "b_mlp"), "b_mlp", results)
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, d in enumerate(sorted({r["config"]["d"] for r in recs})):
        rs = [r for r in recs if r["config"]["d"] == d and r["config"].get("m")]
        c = rs[0]["config"]
        ms, acc = _curve(rs, "m")
        ax.plot(np.array(ms) * d, acc, "o-", color=f"C{i}", label=f"attention + MLP, $d={d}$")
        mf = np.geomspace(ms[0], ms[-1], 16)
        ax.plot(mf * d, [theory.retrieval_accuracy(c["V"], c["N"], d, c["L"], c["q"], int(m))
                         for m in mf], ":", color=f"C{i}")
        att = [r for r in recs if r["config"]["d"] == d and not r["config"].get("m")]
        if att:
            ax.axhline(np.mean([r["result"]["accuracy"] for r in att]), color=f"C{i}", ls="--",
                       lw=1, label=f"attention only, $d={d}$")
            ax.plot([mf[-1] * d * 1.5], [theory.retrieval_accuracy(c["V"], c["N"], d, c["L"], c["q"])],
                    "<", color=f"C{i}", ms=7)
    ax.set_xscale("log")
    ax.set_xlabel(r"$m\cdot d$")
    ax.set_ylabel("test accuracy")
    n_seeds = len({r["config"]["seed"] for r in recs})
    ax.set_title(f"V={c['V']}, N={c['N']}, L={c['L']}, |w|={c['q']:g}, mean of {n_seeds} seeds; "
                 "dotted/triangle: predicted", fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, path)


@figure("b_long")
def plot_b_long(results=RESULTS, path="figures/b_long.png", tau=0.3):
    """Three steps versus long Adam training: accuracy versus N and the N* read off each curve."""
    recs = _need(load_records(results, "b_long"), "b_long", results)
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8))
    ds = sorted({r["config"]["d"] for r in recs})
    nstar = {"three_step": [], "adam": []}
    for i, d in enumerate(ds):
        for method, ls in (("three_step", "o-"), ("adam", "s--")):
            N, acc = train.long_curve(recs, d, method)
            if not N:
                nstar[method].append(None)
                continue
            axes[0].plot(N, acc, ls, color=f"C{i}", label=f"{method.replace('_', ' ')}, $d={d}$")
            nstar[method].append(crossing(N, acc, tau))
    c = [r for r in recs if r["config"]["method"] == "three_step"][0]["config"]
    for method, mk in (("three_step", "o-"), ("adam", "s--")):
        y = [np.nan if v is None else v for v in nstar[method]]
        axes[1].plot(ds, y, mk, color="k", label=method.replace("_", " "))
    axes[1].plot(ds, [theory.critical_N(c["V"], d, c["L"], c["q"], tau) for d in ds], ":",
                 color="C0", label="predicted (three steps)")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("samples $N$")
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=7)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("$d$")
    axes[1].set_ylabel(rf"$N^*$ (accuracy $\geq$ {tau:g}, interpolated)")
    axes[1].legend(fontsize=8)
    adam = [r for r in recs if r["config"]["method"] == "adam"]
    extra = f", Adam {adam[0]['config']['steps']} steps lr {adam[0]['config']['lr']:g}" if adam else ""
    fig.suptitle(f"V={c['V']}, L={c['L']}{extra}", fontsize=9)
    return _save(fig, path)


@figure("b_length")
def plot_b_length(results=RESULTS, path="figures/b_length.png"):
    """Accuracy and attention on the informative position versus L at fixed N, d, |w|."""
    recs = _need(load_records(results, "b_length"), "b_length", results)
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for i, q in enumerate(sorted({r["config"]["q"] for r in recs})):
        rs = [r for r in recs if r["config"]["q"] == q]
        c = rs[0]["config"]
        L, acc = _curve(rs, "L")
        _, att = _curve(rs, "L", "attention")
        axes[0].plot(L, acc, "o-", color=f"C{i}", label=f"measured, $|w|={q:g}$")
        axes[1].plot(L, att, "o-", color=f"C{i}", label=f"measured, $|w|={q:g}$")
        Lf = np.unique(np.geomspace(L[0], L[-1], 20).round().astype(int))
        axes[0].plot(Lf, [theory.retrieval_accuracy(c["V"], c["N"], c["d"], l, q) for l in Lf],
                     ":", color=f"C{i}", label="predicted")
        axes[1].plot(Lf, [theory.mean_attention(c["V"], c["N"], c["d"], l, q) for l in Lf], ":", color=f"C{i}",
                     label="predicted (mean field)")
    for ax, lab in zip(axes, ("test accuracy", "attention on informative position")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length $L$")
        ax.set_ylabel(lab)
        ax.legend(fontsize=7)
    n_seeds = len({r["config"]["seed"] for r in recs})
    fig.suptitle(f"V={c['V']}, d={c['d']}, N={c['N']}, mean of {n_seeds} seeds", fontsize=9)
    return _save(fig, path)


# ----------------------------------------------------------------------------- command line

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    unknown = [n for n in argv if n not in FIGURES]
    if unknown:
        sys.stderr.write(f"plots.py: error: unknown figure(s) {unknown}; known: {sorted(FIGURES)}\n")
        sys.exit(2)
    for name in argv or FIGURES:
        try:
            print(FIGURES[name](RESULTS))
        except FileNotFoundError as e:
            if argv:
                sys.stderr.write(f"plots.py: error: {e}\n")
                sys.exit(1)
            print(f"skipped {name}: {e}")


if __name__ == "__main__":
    main()
