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

import theory                     # noqa: E402,F401
from train import RESULTS, load_records   # noqa: E402

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
    ax.text(c["step"][-1], np.log(n_ans), rf"$\ln {n_ans}$", va="bottom", ha="right", color="gray")
    ax.text(c["step"][-1], np.log(D), rf"$\ln {D}$", va="bottom", ha="right", color="gray")
    stages = fig5_stages(c, n_ans, D)
    for label, (a, b) in stages.items():
        if a is not None and b is not None and b > a:
            ax.axvspan(a, b, alpha=0.06, color={"plateau": "gray", "hallucination": "C1"}.get(label, "C2"))
            ax.text((a + b) / 2, ax.get_ylim()[1] * 0.97, label, ha="center", va="top", fontsize=8)
    ax.set_xlabel("SGD step")
    ax.set_ylabel("test loss (nats)")
    ax.set_title(f"Sequential learning: S={cfg['S']}, R={cfg['R']}, D={D}, one-hot, linear attention",
                 fontsize=9)
    ax.legend(fontsize=8, loc="center right")
    return _save(fig, path)


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


# ----------------------------------------------------------------------------- paper A, capacity figures

import json              # noqa: E402

import train             # noqa: E402
from train import FITS   # noqa: E402  (fitted constants, computed from the records)


def _one_scale(records, configs=None):
    """The records of one scale only, so a partial full-scale run never mixes with the
    default one: "full" if any full-scale record exists, else the rest.  With configs (a
    train.<x>_configs function), also drop stale records whose config the current code no
    longer builds (e.g. after a grid change), for any base seed present."""
    full = [r for r in records if r["config"].get("scale") == "full"]
    recs = full or [r for r in records if r["config"].get("scale") != "full"]
    if configs is not None and recs and "scale" in recs[0]["config"]:
        scale = recs[0]["config"]["scale"]
        current = [c for b in {r["config"]["seed"] for r in recs} for c in configs(scale, b)]
        recs = [r for r in recs if r["config"] in current] or recs
    return recs


def _by(records, key):
    """Group records by config[key]: sorted keys and, per key, the list of results."""
    groups = {}
    for r in records:
        groups.setdefault(r["config"][key], []).append(r["result"])
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
    json_path = os.path.splitext(path)[0] + ".json"
    os.makedirs(os.path.dirname(json_path) or ".", exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(data, f, indent=1)
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
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    plotted = {}
    for key, color, marker, label in [("facts_fresh99", "C0", "o", r"$\geq 99\%$ on fresh prompts (paper)"),
                                      ("facts_all", "C3", "x", "every fact on 4 prompts (strict)")]:
        P = [r["result"]["params"] for r in recs]
        F = [r["result"][key] for r in recs]
        k = fits.get(key, {}).get("facts_per_param", float("nan"))
        ax.scatter(P, F, color=color, marker=marker, s=30, label=f"{label}: {k:.3f} facts/param")
        plotted[key] = [list(map(float, P)), list(map(float, F))]
    bad = [r for r in recs if r["result"]["lo_fails"] or r["result"]["hi_succeeds"]]
    if bad:   # the bracket did not contain the capacity: the point is a bound, not a value
        ax.scatter([r["result"]["params"] for r in bad], [r["result"]["facts_fresh99"] for r in bad],
                   facecolors="none", edgecolors="k", s=90, label="bracket edge (a bound only)")
    for r in recs:
        c = r["config"]
        ax.annotate(f"d={c['d']},a={c['a']},b={c['b']}", (r["result"]["params"], r["result"]["facts_fresh99"]),
                    fontsize=6, xytext=(3, -8), textcoords="offset points")
    pp = np.geomspace(min(P) / 1.5, max(P) * 1.5, 20)
    ax.plot(pp, [theory.facts_reference(v) for v in pp], "k:", lw=1, label=r"facts $= 0.15\,$params (authors)")
    D = recs[0]["config"]["D"]
    ax.plot(pp, [theory.facts_information_bound(v, D) for v in pp], "-", color="gray", lw=1,
            label=rf"$SR\log_2 {D} = 2\,$params (2 bits/param)")
    f = fits.get("facts_fresh99", {})
    if f:
        ax.plot(pp, f["facts_per_param"] * pp, "--", color="C0", lw=1,
                label=f"fit: facts = {f['facts_per_param']:.3f} params "
                      f"({f['bits_per_param']:.2f} bits/param; log-log slope {f['loglog_slope']:.2f})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(r"parameters $4Hd_hd + 2md$")
    ax.set_ylabel(r"facts stored $S\cdot R$")
    ax.set_title(f"One-layer transformer, $H$={recs[0]['config']['H']}, $D$={D}, $S=R$, $T$={recs[0]['config']['T']}",
                 fontsize=9)
    ax.legend(fontsize=7)
    return _save_with_data(fig, path, {"plotted": plotted, "fits": fits})


def _edges(v):
    """Cell edges for values on a geometric grid (geometric midpoints, extended at the ends)."""
    v = np.asarray(sorted(v), float)
    r = v[1] / v[0] if len(v) > 1 else 2.0
    mid = np.sqrt(v[1:] * v[:-1])
    return np.concatenate([[v[0] / np.sqrt(r)], mid, [v[-1] * np.sqrt(v[-1] / v[-2] if len(v) > 1 else r)]])


@figure("tradeoff")
def plot_tradeoff(results=RESULTS, path="figures/tradeoff.png"):
    """Accuracy over (attention params d dh H, MLP params d m) at a fixed fact table, the
    frontier read off the cells, and the authors' frontier and lines scaled to our facts."""
    recs = _one_scale(_need(load_records(results, "tradeoff"), "tradeoff", results),
                      train.tradeoff_configs)
    attn = sorted({r["result"]["attn_params"] for r in recs})
    mlp = sorted({r["result"]["mlp_params"] for r in recs})
    acc = np.full((len(mlp), len(attn)), np.nan)                   # (n_mlp, n_attn)
    for r in recs:
        res = r["result"]
        acc[mlp.index(res["mlp_params"]), attn.index(res["attn_params"])] = res["fresh_acc"]
    facts = recs[0]["result"]["facts"]
    cfg = recs[0]["config"]
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    mesh = ax.pcolormesh(_edges(attn), _edges(mlp), acc, cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax, label="accuracy on fresh prompts")
    for i, m in enumerate(mlp):
        for j, a in enumerate(attn):
            ax.text(a, m, f"{acc[i, j]:.2f}", ha="center", va="center", fontsize=6,
                    color="w" if acc[i, j] < 0.6 else "k")
    front = train.tradeoff_frontier(recs)
    fa = [a for a, m in front if m is not None]
    fm = [m for a, m in front if m is not None]
    ax.plot(fa, fm, "o-", color="C3", lw=2, label=r"measured frontier (first cell $\geq 99\%$)")
    aa = np.geomspace(_edges(attn)[0], _edges(attn)[-1], 100)
    ax.plot(aa, theory.authors_frontier_mlp(aa, facts), "k--", lw=1.2,
            label="authors' frontier, scaled to our facts")
    ax.axvline(theory.attention_params_for_facts(facts), color="C1", ls=":", lw=1.5,
               label=r"attention params $\propto$ facts ($4.5\times$)")
    ax.axhline(theory.mlp_params_for_facts(facts), color="C6", ls=":", lw=1.5,
               label=r"MLP params $\propto$ facts ($1.6\times$)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(_edges(attn)[0], _edges(attn)[-1])
    ax.set_ylim(_edges(mlp)[0], _edges(mlp)[-1])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(r"attention parameters $d\,d_h H$")
    ax.set_ylabel(r"MLP parameters $d\,m$")
    ax.set_title(f"{facts} facts ($S=R={cfg['S']}$, $D={cfg['D']}$), $d={cfg['d']}$, $d_h={cfg['dh']}$",
                 fontsize=9)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    return _save_with_data(fig, path, {"plotted": {"attn": attn, "mlp": mlp, "acc": acc.tolist(),
                                                   "frontier": front},
                                       "fits": train.tradeoff_fits(recs)})


# ----------------------------------------------------------------------------- paper B figures


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
