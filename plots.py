"""plots.py -- one function per figure, fig_<name>(records, path) -> the figure, drawn from
the records run.py wrote and theory.py's curves.

    python plots.py [EXPERIMENT ...] [--scale S] [--results DIR] [--out FILE] [--talk]

Each committed figure's record set is committed too (figures/data/<name>.json): a fresh clone
redraws it without a run.  --talk writes figures/talk/<name>.png, for a projector."""
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt   # noqa: E402
import numpy as np                # noqa: E402

import paper_a                    # noqa: E402
import paper_b                    # noqa: E402
import run                        # noqa: E402
import theory                     # noqa: E402

STYLE = {"savefig.dpi": 120, "figure.constrained_layout.use": True}   # laid out when saved
TALK = dict(STYLE, **{"font.size": 14, "savefig.dpi": 150, "lines.linewidth": 2.2,
                      "lines.markersize": 7})    # --talk: type 1.4x (sizes below are
TALK_SIZE = 1.1                                  # relative to font.size), figure 1.1x
DATA = os.path.join("figures", "data")           # the committed record sets
FILES = {"fig5": "fig5_sequential.png"}          # a figure's file, if not <name>.png


def with_data(fig, path, data):
    """fig, once the numbers it plots are saved next to it as .json (for the tests)."""
    run.save_json(os.path.splitext(path)[0] + ".json", data)
    return fig


def log_axes(ax, xlabel, ylabel, title, ncol=2, dy=-0.14):
    """Log-log axes with these labels, the title, and the legend below the axes."""
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel)
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small", loc="upper center", ncol=ncol,     # lower for larger type
              bbox_to_anchor=(0.5, dy * plt.rcParams["font.size"] / 10))


# ------------------------------------------------------------------ paper A

def fig_fig5(records, path):
    """Test losses under SGD (first seed); the stages' ends: mean over seeds ± 1 sd."""
    records = sorted(records, key=lambda r: r["config"]["seed"])
    curve, cfg = records[0]["result"], records[0]["config"]
    n_answers, D = cfg["R"] * cfg["D"], cfg["D"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    step = curve["step"]
    ax.plot(step, curve["total"], color="k", lw=2.5, label=f"total loss, seed {cfg['seed']}")
    ax.plot(step, curve["relation"], color="C0", lw=2, ls="--",
            label=r"relation-only: $-\log\sum_{a\in r}p(a)$")
    ax.plot(step, curve["subject"], color="C3", lw=2, ls=":",
            label=r"subject-only: $-\log\sum_{a\equiv y \,(\mathrm{mod}\,D)}p(a)$")
    for v in (n_answers, D):        # labelled under the line at the right end: no curve there
        ax.axhline(np.log(v), ls="--", color="gray", lw=1)
        ax.text(0.99 * step[-1], np.log(v), rf"$\ln {v}$", va="top", ha="right", color="gray")
    ends = np.array([paper_a.fig5_stages(r["result"], n_answers, D) for r in records], float)
    seen = [e[np.isfinite(e)] for e in ends.T]                      # nan: never ends
    mean = [e.mean() if len(e) else np.nan for e in seen]
    sd = [e.std(ddof=1) if len(e) > 1 else 0.0 for e in seen]
    spans = [("plateau", 0, mean[0], "gray"), ("hallucination", mean[0], mean[1], "C1"),
             ("recall", mean[1], step[-1], "C2")]
    for label, a, b, color in spans:
        if np.isfinite([a, b]).all() and b > a:
            ax.axvspan(a, b, alpha=0.1, color=color)
            ax.text((a + b) / 2, 0.78, label, ha="center", va="center", fontsize="small",
                    color="0.25", transform=ax.get_xaxis_transform())
    ax.set(xlabel="SGD step", ylabel="test loss (nats)")
    ax.set_title(f"Sequential learning: S={cfg['S']}, R={cfg['R']}, D={D}, one-hot, linear "
                 f"attention, lr {cfg['lr']:g}, batch {cfg['batch']}\nstages from the mean "
                 f"over {len(records)} seeds (the stage ends' sd: {sd[0]:.0f} and {sd[1]:.0f} "
                 "steps)", fontsize="small")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2)
    return fig


def band(ax, records, x_of, key, color, label, style="o-", ms=None):
    """result[key] against x_of(record): the mean over seeds with a ± 1 sd band; returns
    the plotted (x, mean).  ms: open markers of that size (a curve over another one)."""
    x = sorted({x_of(r) for r in records})
    values = [[r["result"][key] for r in records if x_of(r) == v] for v in x]
    mean = np.array([np.mean(v) for v in values])
    sd = np.array([np.std(v, ddof=1) if len(v) > 1 else 0.0 for v in values])
    ax.fill_between(x, mean - sd, mean + sd, color=color, alpha=0.2, lw=0)
    ax.plot(x, mean, style, color=color, ms=ms or 4, mew=1.5, mfc="none" if ms else color,
            label=label)
    return [float(v) for v in x], mean.tolist()


def fig_linear(records, path):
    """N against d^2 for the trained (99%, 100%) and Hebbian memories; the theory lines."""
    kept = paper_a.inside(records)
    fits = paper_a.linear_fits(kept)
    ds = [r["config"]["d"] for r in records]
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    plotted = {}
    curves = [("cap99", "C0", "o-", "trained, 99%"),
              ("cap100", "C2", "s--", "trained, 100% (open squares)"),
              ("hebb100", "C3", "^-", r"Hebbian $\sum e_x u_x^\top$, 100%")]
    for key, color, style, label in curves:
        fit = f"fit $c$={fits[key]['c']:.2f}" if key in fits else "no fit: nothing measured"
        ms = 9 if key == "cap100" else None
        plotted[key] = band(ax, kept, lambda r: r["config"]["d"] ** 2, key, color,
                            f"{label} ({fit})", style, ms)
    dd = np.geomspace(min(ds) / 1.2, max(ds) * 1.2, 50)      # visible for a single d too
    lines = [(theory.C_SHARP_LINEAR, "k--", r"$d^2 = 2N\ln N$ (sharp, large $d$)"),
             (theory.C_AUTHORS_LINEAR, "k:", r"$d^2 = 1.3\,N\ln N$ (authors)")]
    for c, style, label in lines:
        ax.plot(dd ** 2, [theory.linear_capacity_N(v, c) for v in dd], style, lw=1, label=label)
    log_axes(ax, r"parameters $d^2$", r"capacity $N$ (associations)", r"Linear memory "
             r"$\arg\max_y\, e_x^\top W u_y$: mean over seeds, band $\pm$ 1 sd", dy=-0.17)
    return with_data(fig, path, {"plotted": plotted, "fits": fits})


def fig_mlp(records, path):
    """N against m d for both output regimes, a colour per alpha = m/d, the authors' lines."""
    kept = paper_a.inside(records)
    fits = paper_a.mlp_fits(kept)
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2))
    plotted = {}
    regimes = [("M=N", r"$m d = 0.35\,N\ln N$", r"$md = c\,N\ln N$"),
               ("M=32", r"$m d = 1.2\,N$", r"$md = c\,N$")]
    for ax, (regime, ref, law) in zip(axes, regimes):
        rs = [r for r in kept if r["config"]["regime"] == regime]
        for i, alpha in enumerate(sorted({r["config"]["alpha"] for r in rs})):
            sub = [r for r in rs if r["config"]["alpha"] == alpha]
            style = "osD^v"[i % 5] + "-"
            plotted[f"{regime} alpha={alpha}"] = band(
                ax, sub, lambda r: r["result"]["md"], "cap99", f"C{i}", rf"$m = {alpha}\,d$",
                style, 5 + 2 * i)
        if not rs:
            continue
        md = [r["result"]["md"] for r in rs]
        xx = np.geomspace(min(md) / 1.4, max(md) * 1.4, 50)
        ax.plot(xx, [theory.mlp_reference_N(v, regime) for v in xx], "k:", lw=1,
                label=f"{ref} (authors)")
        f = fits.get(regime, {})
        title = (f"MLP memory, {regime.replace('M=', '$M = $')}: fit {law},\n$c$ = "
                 f"{f.get('c', np.nan):.2f}, {f.get('bits_per_param', np.nan):.2f} bits per "
                 "param (2md params)")
        log_axes(ax, r"$m \cdot d$", r"capacity $N$ (99% recalled)", title, dy=-0.2)
    return with_data(fig, path, {"plotted": plotted, "fits": fits})


def fig_facts(records, path):
    """Facts stored against parameters (arms: the growing part); the authors' 0.15 line."""
    cfg = records[0]["config"]
    P_all = np.array([paper_a.grown_params(r) for r in records])   # every run
    kept = paper_a.inside(records)                                  # an edge: a bound
    fits = paper_a.facts_fits(kept)
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    plotted = {}
    for i, family in enumerate(dict.fromkeys(paper_a.facts_family(r) for r in kept)):
        rs = [r for r in kept if paper_a.facts_family(r) == family]
        P = np.array([paper_a.grown_params(r) for r in rs])
        F = np.array([r["result"]["facts_fresh99"] for r in rs])
        heads = sorted({r["config"]["H"] for r in rs})
        ax.scatter(P, F, color=f"C{i}", marker="osD^v"[i % 5], s=36, zorder=3, alpha=0.6,
                   label=_family_label(f"{family}, H = {str(heads)[1:-1]}", fits.get(family, {})))
        plotted[family] = [P.tolist(), F.tolist()]
    pp = np.geomspace(P_all.min() / 1.5, P_all.max() * 1.5, 20)
    ax.plot(pp, theory.C_AUTHORS_FACTS * pp, "k:", lw=1, label=r"facts $= 0.15\,$params (authors)")
    budgets = sorted({f"{r['config']['steps']} x {r['config']['batch']}" for r in records})
    xlabel = r"parameters $4Hd_hd + 2md$"
    if cfg.get("x"):
        xlabel = r"parameters of the part that grows: $2md$ or $4Hd_hd$"
    log_axes(ax, xlabel, r"facts stored $S\cdot R$" "\n" rf"($\geq 99\%$ of {cfg['n_test']} "
             f"prompts)", f"One-layer transformer, $D$={cfg['D']}, $S=R$, $T$={cfg['T']}, "
             f"{budgets[0] if len(budgets) == 1 else 'per family:'} steps x prompts", ncol=1)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    return with_data(fig, path, {"plotted": plotted, "fits": fits})


def _family_label(family, fit):                 # nan: too few points for a fit
    lo, hi = fit.get("slope_95", [np.nan, np.nan])
    return (f"{family}: {fit.get('facts_per_param', np.nan):.3f} facts/param, "
            f"slope {fit.get('loglog_slope', np.nan):.2f} [{lo:.2f}, {hi:.2f}]")


fig_families = fig_arms = fig_budget = fig_facts        # the same figure, other families


def fig_tradeoff(records, path):
    """The mean accuracy over seeds of each (attention d dh H, MLP d m) cell that ran, at its
    own place (a size not run is a gap); the frontier and the fitted line inside the grid."""
    cells = paper_a.tradeoff_cells(records)
    attn, mlp = sorted({a for a, _ in cells}), sorted({m for _, m in cells})
    facts, cfg = records[0]["result"]["facts"], records[0]["config"]
    fits = paper_a.tradeoff_fits(records)["frontier"]
    fig, ax = plt.subplots(figsize=(6.6, 5.2))
    a, m, mean = np.array([(a, m, v[0]) for (a, m), v in cells.items()]).T
    dots = ax.scatter(a, m, c=mean, cmap="viridis", vmin=0, vmax=1, marker="s", s=900)
    for x, y, v in zip(a, m, mean):
        ax.text(x, y, f"{v:.3f}", ha="center", va="center", fontsize="small", zorder=5,
                color="w" if v < 0.6 else "k")
    seeds = len({r["config"]["seed"] for r in records})
    fig.colorbar(dots, ax=ax).set_label(f"accuracy on fresh prompts, mean of {seeds} seeds")
    front = [(x, y) for x, y in paper_a.tradeoff_frontier(records) if y is not None]
    ax.plot(*np.array(front).T, "o-", color="C3", lw=2, mfc="none", ms=22,
            label=rf"measured frontier: lowest mean $\geq 99\%$ ({len(front)}/{len(attn)} columns)")
    aa = np.geomspace(attn[0], attn[-1], 200)

    def inside(y):                                            # the grid's MLP range only
        return np.where((y >= mlp[0]) & (y <= mlp[-1]), y, np.nan)
    ax.plot(aa, inside(theory.authors_frontier_mlp(aa, facts)), "k--", lw=1,
            label="authors' frontier, scaled to these facts")
    ca, cm = fits.get("attn_params_per_fact", 0), fits.get("mlp_params_per_fact", 0)
    if ca:
        ax.plot(aa, inside(cm * (facts - aa / ca)), "-", color="C1", lw=1.5,
                label=f"fit: attn/{ca:.2f} + MLP/{cm:.2f} = facts")
    heads = ", ".join(str(x // (cfg["d"] * cfg["dh"])) for x in attn)
    log_axes(ax, rf"attention parameters $d\,d_h H$ ($H$ = {heads})", r"MLP parameters $d\,m$",
             f"{facts} facts ($S=R={cfg['S']}$, $D={cfg['D']}$), $d={cfg['d']}$, "
             f"$d_h={cfg['dh']}$; blank: not run", ncol=1)
    ax.set(xlim=(attn[0] / 1.4, attn[-1] * 1.4), ylim=(mlp[0] / 2, mlp[-1] * 2))
    ax.set_xticks(attn, attn)
    ax.set_yticks(mlp, mlp)
    ax.minorticks_off()
    plotted = {"attn": attn, "mlp": mlp, "frontier": paper_a.tradeoff_frontier(records),
               "acc": [[cells.get((x, y), (None,))[0] for x in attn] for y in mlp]}
    return with_data(fig, path, {"plotted": plotted, "fits": fits})


# ------------------------------------------------------------------ paper B

def fig_b_agree(records, path):
    """Predicted against measured accuracy (± 1 sd); beside it, the paired diff (± 2 se)."""
    rows = paper_b.agreement_rows(records)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.4, 4.8), sharex=True)      # a slide's shape
    ax.fill_between((0, 1), (-.03, .97), (.03, 1.03), color=".8", label="predicted within 0.03")
    bx.axhspan(-.03, .03, color=".8")
    sets = [("tuning, attention only", "o", "C0"), ("tuning, attention + MLP", "s", "C1"),
            ("hidden (never tuned on)", "^", "C3"), ("hidden, high accuracy", "D", "C2")]
    for i, (label, fmt, col) in enumerate(sets):
        members = [r for r in rows if r["set"] == i]
        if not members:
            continue
        x, y, sd, se, xerr = (np.array([r[k] for r in members])
                              for k in ("meas", "pred", "pred_sd", "se", "meas_sd"))
        ax.errorbar(x, y, sd, xerr, fmt=fmt, ms=4, lw=0.6, color=col, label=label)
        bx.errorbar(x, y - x, 2 * se, fmt=fmt, ms=4, lw=0.6, color=col)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="measured accuracy (mean ± sd)",
           ylabel="predicted (MODEL.md 4.7; mean ± sd)", title="three steps: formula vs runs")
    bx.set(xlabel="measured accuracy (mean ± sd)", ylabel="predicted − measured (± 2 se)")
    ax.legend(fontsize="x-small", loc="lower right")
    return fig


def fig_b_embed(records, path):
    """Accuracy against N (mean ± sd over draws) of one-hot and random embeddings."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    records = sorted(records, key=lambda r: (r["config"]["kind"] != "onehot", r["config"]["d"]))
    for i, r in enumerate(records):
        c = r["config"]
        acc = np.array(r["result"]["accuracy"])                   # (draws, len(Ns))
        N, mean, sd = np.array(c["Ns"]), acc.mean(0), acc.std(0, ddof=1)
        onehot = c["kind"] == "onehot"
        col = "k" if onehot else f"C{i}"
        label = f"one-hot, $d=V+2={c['d']}$" if onehot else f"random, $d={c['d']}$"
        ax.fill_between(N, np.clip(mean - sd, 0, 1), np.clip(mean + sd, 0, 1), color=col,
                        alpha=0.15)
        ax.plot(N, mean, "o-", color=col, ms=3, label=label)
        if not onehot:                              # the formula's mean over 32 bias draws
            pred = [theory.retrieval_accuracy_frozen(c["V"], n, c["d"], c["L"], c["q"],
                                                     draws=32)[0] for n in N]
            ax.plot(N, pred, ":", color=col)
    Nf = np.geomspace(N[0], N[-1], 30)
    ax.plot(Nf, [theory.coverage_bound(c["V"], n) for n in Nf], "--", color="gray",
            label="coverage bound (any learner)")
    ax.axhline(1 / c["V"], color="gray", lw=0.8, label="chance, 1/V")
    ax.set(xscale="log", xlabel="samples $N$", ylabel="accuracy", ylim=(0, 1.5), yticks=[0, .5, 1])
    ax.set_title(f"Random vs one-hot embeddings: V={c['V']}, L={c['L']}, q={c['q']:g}, mean "
                 f"± sd of {c['draws']} draws; dotted: the formula (random)", fontsize="small")
    ax.legend(fontsize="small", loc="upper left", ncol=2)                # above accuracy 1
    return fig


def fig_b_mlp(records, path):
    """Per d: accuracy (mean ± sd) against m d / V, three steps and Adam, with and without
    the MLP; a panel per d (at most three) and the legend in the last of a 2 x 2 grid."""
    c = next(r["config"] for r in records if r["config"]["method"] == "three_step")
    V, N, L, q = c["V"], c["Ns"][0], c["L"], c["q"]
    adam = next(r["config"] for r in records if r["config"]["method"] == "adam")
    ds = sorted({r["config"]["d"] for r in records})[:3]
    ms = sorted({r["config"]["m"] for r in records if "m" in r["config"]})
    arms = {}                                                          # (draws,) each
    for r in records:
        k = r["config"]
        accuracy = np.array(r["result"]["accuracy"])[:, 0]
        arms[k["method"], k["d"], k.get("m"), k["centred"]] = accuracy
    fig, axes = plt.subplots(2, 2, figsize=(9.6, 5.4), sharey=True)
    lines = (("adam", False, "C2", "Adam, + fixed MLP"),
             ("three_step", False, "C0", "three steps, + fixed MLP"),
             ("three_step", True, "C1", "three steps, + centred MLP"))
    for ax, d in zip(axes.flat, ds):
        x = np.array(ms) * d / V
        for method, centred, col, label in lines:
            acc = [arms[method, d, m, centred] for m in ms]
            ax.errorbar(x, np.mean(acc, 1), np.std(acc, 1, ddof=1), fmt="o-", color=col, ms=3,
                        capsize=2, label=label)
        for method, col in (("adam", "C2"), ("three_step", "k")):
            only = arms[method, d, None, False]                        # attention only
            ax.axhspan(only.mean() - only.std(ddof=1), only.mean() + only.std(ddof=1),
                       color=col, alpha=0.1)
            ax.axhline(only.mean(), color=col, ls="--",
                       label=f"{paper_b.LEARNERS[method]}, attention only (± 1 sd)")
        ax.plot(x, [theory.retrieval_accuracy(V, N, d, L, q, m) for m in ms], "C0:",
                label="formula (fresh noise), three steps + MLP")
        ax.axhline(theory.retrieval_accuracy(V, N, d, L, q), color="k", ls=":",
                   label="formula (fresh noise), three steps, attention only")
        ax.axhline(1 / V, color="gray", lw=0.8, label="chance, 1/V")
        ax.set_xscale("log", base=2)
        ax.set(xlabel=r"$m\,d\,/\,V$", title=f"$d={d}$; $m$ = {str(ms)[1:-1]}", yscale="log")
        if ax in axes[:, 0]:
            ax.set_ylabel("accuracy (mean ± sd)")
    for ax in axes.flat[len(ds):]:
        ax.axis("off")
    axes.flat[-1].legend(*axes.flat[0].get_legend_handles_labels(), fontsize="small", loc="center")
    fig.suptitle(f"V={V}, L={L}; three steps: N={N}, query norm q={q:g}, {c['draws']} draws; "
                 f"Adam: N={adam['Ns'][0]}, {adam['draws']} draws\npaired: every arm on the "
                 "same draws; centred: the MLP's features minus their mean over tokens",
                 fontsize="small")
    return fig


STYLES = {"three_step": ("C0", "o"), "literal": ("C4", "v"), "best_q": ("C1", "^"),
          "gradinfo": ("C3", "D"), "assign": ("C5", "P"), "adam": ("C2", "s")}


def nstar_axes(ax, records, panel, tau):
    """A panel: each learner's N* and exponent (bars: 95% intervals; open: d >= V; a triangle
    at the top: none in its N grid), the formula's N*, the first-gradient and coverage bounds."""
    found = paper_b.nstar_panel(records, panel, tau)
    ti = records[0]["config"]["taus"].index(tau)
    for i, (learner, p) in enumerate(found.items()):
        col, mk = STYLES[learner]
        x, n, below = p["x"], p["n"], p["fit"] | ~np.isfinite(p["n"]) | p["bound"]
        top = max(r["config"]["Ns"][-1] for r in p["recs"])
        err = np.nan_to_num([n - p["lo"], np.where(np.isfinite(p["hi"]), p["hi"], 2 * top) - n])
        wide = learner == "literal"                 # wide and beneath: best q shows on it
        ax.errorbar(x[below], n[below], err[:, below], fmt=mk + ("--" if wide else "-"),
                    lw=5 if wide else None, alpha=0.6 if wide else 1, zorder=1 if wide else 2,
                    color=col, ms=4, capsize=2, label=paper_b.LEARNERS[learner])
        ax.errorbar(x[~below], n[~below], err[:, ~below], fmt=mk, mfc="w", color=col, ms=7)
        none = ~np.isfinite(n)                                  # stacked above the N grid
        ax.plot(x[none], np.full(none.sum(), top * 1.5 ** i), "^", color=col, ms=7)
    three = found["three_step"]
    ax.plot(three["x"], three["pred"], ":", color="C0", label="formula (three steps)")
    bound = [r["result"]["bound_N"][ti] for r in three["recs"]]
    cover = [theory.coverage_N(r["config"]["V"], tau) for r in three["recs"]]
    ax.plot(three["x"], cover, color=".8", lw=5, label="coverage bound (any learner)")
    ax.plot(three["x"], bound, "k-.", lw=1, label="first-gradient bound (Fano)")  # over it
    lo, top = 0.5 * min(cover), 3 * max(r["config"]["Ns"][-1] for r in records)
    ax.set(xscale="log", yscale="log", ylabel=f"samples $N^*$ (τ = {tau:g})",
           xlabel=f"${paper_b.records_axis(records, panel)}$ ({panel.split(' at ')[1]})",
           ylim=(lo, lo * (top / lo) ** 1.5))                    # the top third: the legend's
    ax.set_xticks(three["x"], [f"{v:g}" for v in three["x"]])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.legend(fontsize="x-small", loc="upper left", ncol=2)


def nstar_figure(records, path):
    """Three panels of N* at the middle tau, and measured against the formula's N* at
    every tau, in a 2 x 2 grid; the title: the fitted exponents."""
    panels = paper_b.panels_of(records)
    top = [0, 1] if len(panels) > 1 else [0, 0]
    mosaic = [top, [2, 3]] if len(panels) > 2 else [top, [3, 3]]    # comparison: bottom row
    fig, axes = plt.subplot_mosaic(mosaic, figsize=(12.8, 7.2))
    taus = records[0]["config"]["taus"]
    for i, panel in enumerate(panels[:3]):
        nstar_axes(axes[i], records, panel, taus[len(taus) // 2])
    ax = axes[3]
    for i, tau in enumerate(taus):
        found = [paper_b.nstar_panel(records, p, tau)["three_step"] for p in panels]
        pred, n = (np.concatenate([p[k] for p in found]) for k in ("pred", "n"))
        ax.loglog(pred, n, "o", color=f"C{i}", ms=4, label=f"three steps, τ = {tau:g}")
    lims = np.array(ax.get_xlim())
    ax.fill_between(lims, lims / 1.5, lims * 1.5, color=".85", label="within 1.5x")
    ax.set(xlabel="the formula's N* (theory.critical_N)", ylabel="measured N*, three steps")
    ax.minorticks_off()
    ax.legend(fontsize="x-small", loc="upper left")
    fig.suptitle(verdict(records, taus[len(taus) // 2]), fontsize="small")
    return fig


fig_b_scaling = fig_b_ceiling = fig_b_literal = nstar_figure


def verdict(records, tau):
    """The title: what ran, and each learner's exponents panel by panel."""
    configs = [r["config"] for r in records]
    q = next(c["q"] for c in configs if c["method"] == "three_step" and c.get("theory"))
    lines = [f"{paper_b.EXPERIMENTS[records[0]['experiment']]['help']}; three steps at q = {q:g}",
             f"N* at mean accuracy ≥ τ = {tau:g}, each panel's fit (95% intervals); open: not "
             "fitted (d ≥ V, or a bound); ▲: none reaches τ in the N grid"]
    literal = [c["gamma_eta"] for c in configs if c["method"] == "literal"]
    if literal:
        lines[0] += f"; literal steps at γη = {literal[0]:g}"
    panels = paper_b.panels_of(records)
    found = {panel: paper_b.nstar_panel(records, panel, tau) for panel in panels}  # once
    for learner in ("three_step", "literal", "best_q", "gradinfo"):
        parts = [f"{paper_b.exponent_terms(f[learner]['exps'])} ({p.split(' at ')[1]})"
                 for p, f in found.items() if learner in f]
        if parts:
            lines.append(f"{paper_b.LEARNERS[learner]}: " + "; ".join(parts))
    return "\n".join(lines)


FIGURES = {"fig5": fig_fig5, "linear": fig_linear, "mlp": fig_mlp, "facts": fig_facts,
           "families": fig_families, "arms": fig_arms, "budget": fig_budget,
           "tradeoff": fig_tradeoff, "b_agree": fig_b_agree,
           "b_embed": fig_b_embed, "b_mlp": fig_b_mlp, "b_scaling": fig_b_scaling,
           "b_literal": fig_b_literal, "b_ceiling": fig_b_ceiling}


# ------------------------------------------------------------------ drawing and the data

def committed(records):
    """A record set as committed: no per-trial logs (no figure reads them), 6 digits."""
    if isinstance(records, float):
        return float(f"{records:.6g}")
    if isinstance(records, list):
        return [committed(v) for v in records]
    if isinstance(records, dict):                     # not the timings: a rerun changes them
        return {k: committed(v) for k, v in records.items()
                if k not in ("trials", "hebbian_trials", "runs", "seconds")}
    return records


def load(name, results, scale):
    """The records to draw and their listing: the last run at `scale` in `results`, or,
    with none at the default place, the record set committed in figures/data/."""
    records, listed = run.load_records(results, name, scale)
    data = data_path(name, scale or "small")
    if not records and results == run.RESULTS and os.path.exists(data):
        saved = run.read_json(data)
        return saved["records"], saved["listed"]
    if not records:
        command = f"python run.py {name}" + (f" --scale {scale}" if scale else "")
        if results != run.RESULTS:
            command += f" --out {results}"
        raise FileNotFoundError(f"nothing to draw for {name} at scale {scale or '(any)'} in "
                                f"{results}/{name}/: run `{command}` first")
    return records, listed


def figure_path(name, results, listed, talk):
    """figures/<file> (small scale), figures/<scale>/ (another), figures/talk/ (--talk);
    beside the records for a run with --set, of a partial set or in another folder."""
    folder = "figures"
    if listed["scale"] != "small":
        folder = os.path.join("figures", listed["scale"])
    found = len(run.load_records(results, name, listed["scale"])[0])     # 0: committed data
    if results != run.RESULTS or listed["set"] or 0 < found < len(listed["keys"]):   # --only
        folder = results
    elif talk:
        folder = os.path.join(folder, "talk")
    return os.path.join(folder, FILES.get(name, f"{name}.png"))


def draw(name, results=run.RESULTS, scale=None, path=None, talk=False):
    """Draw figure `name` from the last run at `scale` (None: the newest) in `results` into
    `path` (default: figure_path); the file.  Into figures/: its records to figures/data/."""
    records, listed = load(name, results, scale)
    path = path or figure_path(name, results, listed, talk)
    if not os.path.splitext(path)[1]:
        path += ".png"                                             # what savefig writes
    with plt.rc_context(TALK if talk else STYLE):
        fig = FIGURES[name](records, path)
        fig.text(0.01, 1.02, _header(records, listed), fontsize="x-small", color="0.35",
                 va="bottom")
        if talk:
            fig.set_size_inches(fig.get_size_inches() * TALK_SIZE)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    home = figure_path(name, results, listed, talk=False)
    if os.path.normpath(path) == home and listed["scale"] in ("small", "full"):
        saved = {"listed": listed, "records": committed(records)}
        run.save_json(data_path(name, listed["scale"]), saved, indent=None)
    return path


def data_path(name, scale):
    """The committed record set of a figure: figures/data/<name>.json, <name>-full.json."""
    return os.path.join(DATA, name + ("" if scale == "small" else f"-{scale}") + ".json")


def _header(records, listed):
    """The figure's header: the record set drawn, a line per --set, the edges."""
    lines = [f"{listed['experiment']}: scale {listed['scale']}, {len(records)} of "
             f"{len(listed['keys'])} runs"]
    lines += [f"--set {k}={json.dumps(v)}" for k, v in listed["set"].items()]
    if "lo_fails" in records[0]["result"] and len(paper_a.inside(records)) < len(records):
        edges = len(records) - len(paper_a.inside(records))
        lines.append(f"{edges} of {len(records)} searches hit an edge: bounds, not drawn")
    return "\n".join(line[i:i + 80] for line in lines for i in range(0, len(line), 80))


def main(argv=None):
    p = run._Parser(prog="plots.py", description="Draw figures from run.py's results.")
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                   help=f"any of {', '.join(FIGURES)} (default: every one)")
    p.add_argument("--results", default=run.RESULTS, help="results folder (default: results)")
    p.add_argument("--out", help="the figure's file (one EXPERIMENT only)")
    p.add_argument("--scale", choices=list(run.SCALES) + ["custom"],
                   help="draw the last run at this scale (default: the newest run)")
    p.add_argument("--talk", action="store_true", help="for a projector, in figures/talk/")
    args = p.parse_args(argv)
    unknown = [n for n in args.experiments if n not in FIGURES]
    if unknown:
        p.error(f"unknown figure(s) {unknown}; known: {', '.join(FIGURES)}")
    if args.out and len(args.experiments) != 1:
        p.error("--out needs exactly one EXPERIMENT")
    for name in args.experiments or FIGURES:
        try:
            print(draw(name, args.results, args.scale, args.out, args.talk))
        except FileNotFoundError as e:
            if args.experiments:
                p.exit(1, f"plots.py: error: {e}\n")
            print(f"skipped {name}: {e}")


if __name__ == "__main__":
    main()
