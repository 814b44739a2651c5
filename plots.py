"""plots.py -- one function per figure, fig_<name>(records, path) -> the figure, drawing the
records train.py wrote (train.load_records) and theory.py's curves.

    python plots.py [EXPERIMENT ...] [--scale S] [--results DIR] [--out FILE] [--talk]"""
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt   # noqa: E402
import numpy as np                # noqa: E402

import experiments as ex          # noqa: E402
import theory                     # noqa: E402
import train                      # noqa: E402

STYLE = {"savefig.dpi": 120, "figure.constrained_layout.use": True}   # laid out when saved
TALK = dict(STYLE, **{"font.size": 14, "savefig.dpi": 150, "lines.linewidth": 2.2,
                      "lines.markersize": 7})    # --talk: type 1.4x (sizes below are relative
TALK_SIZE = 1.1                                  # to font.size), figure 1.1x


def with_data(fig, path, data):
    """fig, once the numbers it plots are saved next to it as .json for tests and readers."""
    train.save_json(os.path.splitext(path)[0] + ".json", data)
    return fig


def log_axes(ax, xlabel, ylabel, title, ncol=2, dy=-0.14):
    """Log-log axes with these labels, the title, and the legend below the axes."""
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel)
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small", loc="upper center", ncol=ncol,     # lower for larger type
              bbox_to_anchor=(0.5, dy * plt.rcParams["font.size"] / 10))


def fig_fig5(records, path):
    """Test losses of linear attention under SGD (first seed); stages: all seeds' mean +-1 sd."""
    records = sorted(records, key=lambda r: r["config"]["seed"])
    c, cfg = records[0]["result"], records[0]["config"]
    n_ans, D = cfg["R"] * cfg["D"], cfg["D"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(c["step"], c["total"], color="k", lw=2.5, label=f"total loss, seed {cfg['seed']}")
    ax.plot(c["step"], c["relation"], color="C0", lw=2, ls="--",
            label=r"relation-only: $-\log\sum_{a\in r}p(a)$")
    ax.plot(c["step"], c["subject"], color="C3", lw=2, ls=":",
            label=r"subject-only: $-\log\sum_{a\equiv y \,(\mathrm{mod}\,D)}p(a)$")
    for v in (n_ans, D):                     # labelled at the right end, where no curve is
        ax.axhline(np.log(v), ls="--", color="gray", lw=1)
        ax.text(0.99 * c["step"][-1], np.log(v), rf"$\ln {v}$", va="top", ha="right",
                color="gray")                        # under its line, inside the frame
    ends = np.array([ex.fig5_stages(r["result"], n_ans, D) for r in records], float)  # nan: never
    fin = [e[np.isfinite(e)] for e in ends.T]                      # per boundary, seeds
    mean = [e.mean() if len(e) else np.nan for e in fin]
    sd = [e.std(ddof=1) if len(e) > 1 else 0.0 for e in fin]
    spans = {"plateau": (0, mean[0]), "hallucination": mean, "recall": (mean[1], c["step"][-1])}
    for (label, (a, b)), color in zip(spans.items(), ("gray", "C1", "C2")):
        if np.isfinite([a, b]).all() and b > a:
            ax.axvspan(a, b, alpha=0.1, color=color)
            ax.text((a + b) / 2, 0.78, label, ha="center", va="center", fontsize="small",
                    color="0.25", transform=ax.get_xaxis_transform())
    for m, s in zip(mean, sd):
        ax.axvspan(m - s, m + s, color="k", alpha=0.12, lw=0)
    ax.set(xlabel="SGD step", ylabel="test loss (nats)")
    ax.set_title(f"Sequential learning: S={cfg['S']}, R={cfg['R']}, D={D}, one-hot, linear "
                 f"attention, lr {cfg['lr']:g}, batch {cfg['batch']}\nstages from the mean "
                 f"over {len(records)} seeds (stage ends ± 1 sd shaded dark; sd {sd[0]:.0f} and "
                 f"{sd[1]:.0f} steps)", fontsize="small")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2)
    return fig


def band(ax, records, x_of, key, color, label, style="o-", ms=None):
    """result[key] against x_of(record): mean over seeds with a +-1 sd band; returns the
    plotted (x, mean).  ms: open markers of that size (a curve drawn over another one)."""
    x = sorted({x_of(r) for r in records})
    vals = [[r["result"][key] for r in records if x_of(r) == v] for v in x]
    mean = np.array([np.mean(v) for v in vals])
    sd = np.array([np.std(v, ddof=1) if len(v) > 1 else 0.0 for v in vals])
    ax.fill_between(x, mean - sd, mean + sd, color=color, alpha=0.2, lw=0)
    ax.plot(x, mean, style, color=color, ms=ms or 4, mew=1.5, mfc="none" if ms else color,
            label=label)
    return list(map(float, x)), mean.tolist()


def fig_linear(records, path):
    """N against d^2 for the trained (99%, 100%) and Hebbian memories, with the theory lines."""
    fits, ds = ex.linear_fits(ex.inside(records)), [r["config"]["d"] for r in records]
    (fig, ax), plotted = plt.subplots(figsize=(6.0, 4.4)), {}
    for key, color, style, label in [("cap99", "C0", "o-", "trained, 99%"),
                                     ("cap100", "C2", "s--", "trained, 100% (open squares)"),
                                     ("hebb100", "C3", "^-", r"Hebbian $\sum e_x u_x^\top$, 100%")]:
        fit = f"fit $c$={fits[key]['c']:.2f}" if key in fits else "no fit: nothing measured"
        plotted[key] = band(ax, ex.inside(records), lambda r: r["config"]["d"] ** 2, key, color,
                            f"{label} ({fit})", style, 9 if key == "cap100" else None)
    dd = np.geomspace(min(ds) / 1.2, max(ds) * 1.2, 50)      # visible for a single d too
    for c, style, label in [(theory.C_SHARP_LINEAR, "k--", r"$d^2 = 2N\ln N$ (sharp, large $d$)"),
                            (theory.C_AUTHORS_LINEAR, "k:", r"$d^2 = 1.3\,N\ln N$ (authors)")]:
        ax.plot(dd ** 2, [theory.linear_capacity_N(v, c) for v in dd], style, lw=1, label=label)
    log_axes(ax, r"parameters $d^2$", r"capacity $N$ (associations)", r"Linear memory "
             r"$\arg\max_y\, e_x^\top W u_y$: mean over seeds, band $\pm$ 1 sd", dy=-0.17)
    return with_data(fig, path, {"plotted": plotted, "fits": fits})


def fig_mlp(records, path):
    """N against m d for both output regimes, one colour per alpha = m/d, the authors' lines."""
    fits = ex.mlp_fits(ex.inside(records))
    (fig, axes), plotted = plt.subplots(1, 2, figsize=(10.0, 4.2)), {}
    for ax, (regime, ref, law) in zip(axes, [("M=N", r"$m d = 0.35\,N\ln N$", r"$md = c\,N\ln N$"),
                                             ("M=32", r"$m d = 1.2\,N$", r"$md = c\,N$")]):
        rs = [r for r in ex.inside(records) if r["config"]["regime"] == regime]
        for i, alpha in enumerate(sorted({r["config"]["alpha"] for r in rs})):
            sub = [r for r in rs if r["config"]["alpha"] == alpha]
            plotted[f"{regime} alpha={alpha}"] = band(ax, sub, lambda r: r["result"]["md"], "cap99",
                f"C{i}", rf"$m = {alpha}\,d$", "osD^v"[i % 5] + "-", 5 + 2 * i)
        if not rs:
            continue
        md_all = [r["result"]["md"] for r in rs]
        xx = np.geomspace(min(md_all) / 1.4, max(md_all) * 1.4, 50)
        ax.plot(xx, [theory.mlp_reference_N(v, regime) for v in xx], "k:", lw=1,
                label=f"{ref} (authors)")
        f = fits.get(regime, {})
        log_axes(ax, r"$m \cdot d$", r"capacity $N$ (99% recalled)", f"MLP memory, "
                 f"{regime.replace('M=', '$M = $')}: fit {law},\n$c$ = {f.get('c', np.nan):.2f}, "
                 f"{f.get('bits_per_param', np.nan):.2f} bits per param (2md params)", dy=-0.2)
    return with_data(fig, path, {"plotted": plotted, "fits": fits})


FAMILY_NAMES = {"a=4 b=0.25": "attention-dominated", "a=1 b=1": "balanced",
                "a=0.25 b=4": "MLP-dominated"}          # families' three; facts' one is balanced


def fig_facts(records, path):
    """Facts stored against parameters 4 H dh d + 2 m d, per family (a, b), the authors' line."""
    cfg, P = records[0]["config"], np.array([r["result"]["params"] for r in records])   # all run
    records, plotted = ex.inside(records), {}                     # an edge capacity: a bound
    fits, (fig, ax) = ex.facts_fits(records), plt.subplots(figsize=(6.4, 4.8))
    for i, fam in enumerate(sorted({ex.facts_family(r) for r in records}, reverse=True)):
        rs = [r for r in records if ex.facts_family(r) == fam]
        col = list(FAMILY_NAMES).index(fam) if fam in FAMILY_NAMES else 3 + i   # its colour
        p, F = (np.array([r["result"][k] for r in rs]) for k in ("params", "facts_fresh99"))
        f = fits.get(fam, {})
        s, ci = f.get("loglog_slope", np.nan), f.get("slope_95", [np.nan, np.nan])
        slope = "" if np.isnan(s) else f", slope {s:.2f}" + ("" if np.isnan(ci[0]) else
                                                             " [{:.2f}, {:.2f}]".format(*ci))
        ax.scatter(p, F, color=f"C{col}", marker="osD"[col % 3], s=36, zorder=3, label=f"{fam} "
                   f"{FAMILY_NAMES.get(fam, '')}: {f.get('facts_per_param', np.nan):.3f} "
                   f"facts/param{slope}")
        plotted[fam] = [p.tolist(), F.tolist()]
        first = min(r["config"]["seed"] for r in rs)          # one label per size, its first seed
        for c, x in ((r["config"], r["result"]) for r in rs if r["config"]["seed"] == first):
            ax.annotate(f"d={c['d']},H={c['H']}", (x["params"], x["facts_fresh99"]),
                        fontsize="x-small", xytext=(-6, 0), zorder=4, textcoords="offset points",
                        ha="right", va="center", bbox={"fc": "w", "ec": "none", "pad": 0.5})
    pp = np.geomspace(P.min() / 1.5, P.max() * 1.5, 20)
    ax.plot(pp, theory.C_AUTHORS_FACTS * pp, "k:", lw=1, label=r"facts $= 0.15\,$params (authors)")
    log_axes(ax, r"parameters $4Hd_hd + 2md$", r"facts stored $S\cdot R$" "\n" r"($\geq 99\%$ "
             f"of {cfg['n_test']} prompts)", f"One-layer transformer, $D$={cfg['D']}, $S=R$, "
             f"$T$={cfg['T']}, $d_hH = a d$, $m = b d$", ncol=1)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    return with_data(fig, path, {"plotted": plotted, "fits": fits})


fig_families = fig_facts                                  # the same figure, three families


def edges(v):
    """Cell edges for values on a geometric grid: geometric midpoints, end cells mirrored."""
    v = np.asarray(sorted(v), float)
    mid = np.sqrt(v[1:] * v[:-1]) if len(v) > 1 else v * np.sqrt(2)
    return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])


def fig_tradeoff(records, path):
    """Mean accuracy over seeds per (attention params d dh H, MLP params d m) cell; frontiers."""
    cells = ex.tradeoff_cells(records)
    attn, mlp = sorted({a for a, _ in cells}), sorted({m for _, m in cells})
    acc = np.full((len(mlp), len(attn)), np.nan)                   # (n_mlp, n_attn)
    for (a, m), (mean, _) in cells.items():
        acc[mlp.index(m), attn.index(a)] = mean
    facts, cfg = records[0]["result"]["facts"], records[0]["config"]
    fits = ex.tradeoff_fits(records)["frontier"]
    xe, ye = edges(attn), edges(mlp)
    fig, ax = plt.subplots(figsize=(6.6, 5.2))
    mesh = ax.pcolormesh(xe, ye, acc, cmap="viridis", vmin=0, vmax=1)
    seeds = len({r["config"]["seed"] for r in records})
    fig.colorbar(mesh, ax=ax).set_label(f"accuracy on fresh prompts, mean over seeds (n = {seeds})")
    for i, j in np.ndindex(acc.shape):      # values on their cell's colour, above every line
        ax.text(attn[j], mlp[i], f"{acc[i, j]:.3f}", ha="center", va="center", fontsize="small",
                zorder=5, color="w" if acc[i, j] < 0.6 else "k",
                bbox={"fc": mesh.to_rgba(acc[i, j]), "ec": "none", "pad": 1})
    front = ex.tradeoff_frontier(records)                          # along the cells' lower edges
    level = [np.nan if m is None else ye[mlp.index(m)] for _, m in front]
    if not np.isnan(level).all():
        ax.stairs(level, xe, color="C3", lw=2.5, baseline=None,
                  label=r"measured frontier: lowest cell with mean $\geq 99\%$ per column")
    aa = np.geomspace(xe[0], xe[-1], 200)
    ax.plot(aa, theory.authors_frontier_mlp(aa, facts), "k--", lw=1,
            label="authors' frontier, scaled to our facts")
    ca, cm = fits.get("attn_params_per_fact", 0), fits.get("mlp_params_per_fact", 0)
    if ca:
        ax.plot(aa, np.where(aa < ca * facts, cm * (facts - aa / ca), np.nan), "-", color="C1",
                lw=1.5, label=f"fit: attn/{ca:.2f} + MLP/{cm:.2f} = facts")
    heads = ", ".join(str(a // (cfg["d"] * cfg["dh"])) for a in attn)
    log_axes(ax, rf"attention parameters $d\,d_h H$ ($H$ = {heads})",
             rf"MLP parameters $d\,m$" f"\n($m$ = {', '.join(str(m // cfg['d']) for m in mlp)})",
             f"{facts} facts ($S=R={cfg['S']}$, $D={cfg['D']}$), $d={cfg['d']}$, "
             f"$d_h={cfg['dh']}$", ncol=1)
    ax.set(xlim=(xe[0], xe[-1]), ylim=(ye[0], ye[-1]), xticks=attn, xticklabels=attn, yticks=mlp,
           yticklabels=mlp)           # in this order: the ticks, then their labels
    ax.minorticks_off()
    return with_data(fig, path, {"plotted": {"attn": attn, "mlp": mlp, "acc": acc.tolist(),
                                             "frontier": front}, "fits": fits})


def fig_b_agree(records, path):
    """Predicted against measured accuracy (+-1 sd over draws); below, the paired diff (+-2 se)."""
    rows = ex.agreement_rows(records)
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(4.6, 7.0), sharex=True, height_ratios=(3, 1.3))
    ax.fill_between((0, 1), (-.03, .97), (.03, 1.03), color=".8", label="predicted within 0.03")
    bx.axhspan(-.03, .03, color=".8")
    sets = (("tuning, attention only", "o", "C0"), ("tuning, attention + MLP", "s", "C1"),
            ("hidden (never tuned on; see RESULTS.md)", "^", "C3"))
    for i, (label, fmt, col) in enumerate(sets):
        w = [r for r in rows if r["set"] == i]
        x, y, sd, se = (np.array([r[k] for r in w]) for k in ("meas", "pred", "pred_sd", "se"))
        for a, ya, err, xerr in ((ax, y, sd, [r["meas_sd"] for r in w]), (bx, y - x, 2 * se, None)):
            a.errorbar(x, ya, err, xerr, fmt=fmt, ms=4, lw=0.6, color=col, label=label * bool(w))
        for r in w if len(rows) <= 8 else ():                         # a few: name each point
            bx.annotate("V={} N={}".format(*r["key"]), (r["meas"], r["pred"] - r["meas"]), size=7)
    ax.set(xlim=(0, 1), ylim=(0, 1), ylabel="predicted by the formula (MODEL.md 4.7; mean ± sd)")
    bx.set(xlabel="measured accuracy (mean ± sd)", ylabel="predicted − measured\n(± 2 se)")
    ax.legend(fontsize="small", title="three steps: formula against runs", loc="upper left")
    return fig


def fig_b_embed(records, path):
    """Accuracy against N (mean +- sd over draws) of one-hot and random embeddings."""
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    records = sorted(records, key=lambda r: (r["config"]["kind"] != "onehot", r["config"]["d"]))
    for i, r in enumerate(records):
        c, v = r["config"], np.array(r["result"]["accuracy"])     # v: (draws, len(Ns))
        N, acc, sd = np.array(c["Ns"]), v.mean(0), v.std(0, ddof=1)
        onehot = c["kind"] == "onehot"
        col = "k" if onehot else f"C{i}"
        ax.fill_between(N, np.clip(acc - sd, 0, 1), np.clip(acc + sd, 0, 1), color=col, alpha=0.15)
        ax.plot(N, acc, "o-", color=col, ms=3, label=f"one-hot, $d=V+2={c['d']}$" if onehot
                else f"random, $d={c['d']}$")
        if not onehot:                              # the formula's mean over 32 bias draws
            ax.plot(N, [theory.retrieval_accuracy_frozen(c["V"], n, c["d"], c["L"], c["q"],
                                                         draws=32)[0] for n in N], ":", color=col)
    Nf = np.geomspace(N[0], N[-1], 30)
    ax.plot(Nf, [theory.coverage_bound(c["V"], n) for n in Nf], "--", color="gray",
            label="coverage bound (any learner)")
    ax.axhline(1 / c["V"], color="gray", lw=0.8, label="chance, 1/V")
    ax.set(xscale="log", xlabel="samples $N$", ylabel="test accuracy")
    ax.set_title(f"Random vs one-hot embeddings: V={c['V']}, L={c['L']}, q={c['q']:g}, mean ± sd "
                 f"of {c['draws']} draws; dotted: the formula (random)", fontsize="small")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def fig_b_mlp(records, path):
    """Per d: accuracy (mean +- sd) against m d / V, three steps and Adam, with and without MLP."""
    c = next(r["config"] for r in records if r["config"]["method"] == "three_step")
    V, N, L, q = c["V"], c["Ns"][0], c["L"], c["q"]
    ds = sorted({r["config"]["d"] for r in records})
    fig, axes = plt.subplots(1, len(ds), figsize=(3.6 * len(ds), 4.4), sharey=True, squeeze=False)
    ms = sorted({r["config"]["m"] for r in records if "m" in r["config"]})
    arms = {(r["config"]["method"], r["config"]["d"], r["config"].get("m"), r["config"]["centred"]):
            np.array(r["result"]["accuracy"])[:, 0] for r in records}       # (draws,) each
    adam = next(r["config"] for r in records if r["config"]["method"] == "adam")
    for ax, d in zip(axes[0], ds):
        x = np.array(ms) * d / V
        for a, centred, col, lab in (("adam", False, "C2", "Adam, + fixed MLP"),
                                     ("three_step", False, "C0", "three steps, + fixed MLP"),
                                     ("three_step", True, "C1", "three steps, + centred MLP")):
            acc = [arms[a, d, m, centred] for m in ms]
            ax.errorbar(x, np.mean(acc, 1), np.std(acc, 1, ddof=1), fmt="o-", color=col, ms=3,
                        capsize=2, label=lab)
        for a, col in (("adam", "C2"), ("three_step", "k")):
            att = arms[a, d, None, False]                               # attention only
            ax.axhspan(*att.mean() + np.array([-1, 1]) * att.std(ddof=1), color=col, alpha=0.1)
            ax.axhline(att.mean(), color=col, ls="--", label=f"{ex.LEARNERS[a]}, attention only "
                       "(± 1 sd)")
        ax.plot(x, [theory.retrieval_accuracy(V, N, d, L, q, m) for m in ms], "C0:",
                label="predicted (fresh-noise formula), three steps + MLP")
        ax.axhline(theory.retrieval_accuracy(V, N, d, L, q), color="k", ls=":",
                   label="predicted (fresh-noise), three steps, attention only")
        ax.axhline(1 / V, color="gray", lw=0.8, label="chance")
        ax.set_xscale("log", base=2)
        ax.set(xlabel=r"$m\,d\,/\,V$", title=f"$d={d}$; $m$ = {str(ms)[1:-1]}", yscale="log")
    axes[0][0].set_ylabel(r"test accuracy (mean $\pm$ 1 sd)")
    fig.legend(*axes[0][0].get_legend_handles_labels(), fontsize="x-small", loc="outside lower "
               "center", ncol=3)
    fig.suptitle(f"V={V}, L={L}; three steps: N={N}, query norm q={q:g}, {c['draws']} draws; Adam: "
                 f"N={adam['Ns'][0]}, {adam['draws']} draws\npaired: every arm on the same draws; "
                 "centred: the MLP's features minus their mean over tokens", fontsize="small")
    return fig


def scaling_curve(ax, p, name, col, mk):
    """One learner's N* on one panel (experiments.scaling_points), bars its 95% bootstrap
    interval; returns the top of its N grid, where a triangle marks an x without N*."""
    s, lo, hi, _ = ex.slope_interval(p["x"][p["fit"]], p["boot"][:, p["fit"]])
    top, n, b = max(r["config"]["Ns"][-1] for r in p["recs"]), p["n"], p["below"]
    err = np.nan_to_num(np.array([n - p["lo"], np.where(np.isfinite(p["hi"]), p["hi"], 1e9) - n]))
    ax.errorbar(p["x"][b], n[b], err[:, b], fmt=mk + "-", color=col, ms=4, capsize=2,
                label=f"{name}, slope {s:+.2f} [{lo:+.2f}, {hi:+.2f}]" if np.isfinite(s) else name)
    ax.errorbar(p["x"][~b], n[~b], err[:, ~b], fmt=mk, mfc="w", color=col, ms=8, capsize=2)
    capped = p["x"][~np.isfinite(n)]
    if len(capped):
        ax.plot(capped, np.full(len(capped), top), "v", color=col, ms=8,
                label=f"{name}: no N* ≤ {top}")
    bound = p["bound"] & b                                   # reached at the first N: at most
    if bound.any():
        ax.plot(p["x"][bound], n[bound], "v", mfc="w", color=col, ms=8,
                label=f"{name}: reached at the first N (N* at most this)")
    return top


def fig_b_scaling(records, path):
    """N* against d, L and V (scaling_curve); three-step accuracy against theory.retrieval_snr."""
    c0 = records[0]["config"]
    fig, axes = plt.subplots(1, 4, figsize=(17.0, 4.8))
    styles = {"three_step": ("C0", "o"), "gradinfo": ("C3", "D"), "adam": ("C2", "s")}
    for ax, over in zip(axes, ("d", "L", "V")):
        xs, tops = set(), [1]
        for m, (col, mk) in styles.items():
            p = ex.scaling_points(records, over, m)
            if p is None or len(p["x"]) < 2:
                continue
            xs |= set(p["x"])
            tops.append(scaling_curve(ax, p, ex.LEARNERS[m], col, mk))
            if m == "three_step":
                ax.plot(p["x"], p["pred"], ":", color=col, label="predicted (three steps)")
        xv = sorted(xs)                                   # the coverage bound depends on V only
        cover = [theory.coverage_N(x if over == "V" else c0["V0"], c0["tau"]) for x in xv]
        ax.plot(xv, cover, "--", color="gray", label="coverage bound (any learner)")
        where = {"d": f"V={c0['V0']}, L={c0['L0']}", "L": f"V={c0['V0']}, d={c0['d0']}",
                 "V": f"d=V/2, L={c0['L0']}"}[over]
        ax.set(xscale="log", yscale="log", xlabel=f"${over}$ ({where})",
               ylabel=rf"$N^*$ (mean accuracy $\geq$ {c0['tau']:g})")
        ax.set_ylim(0.5 * min(cover), 2 * max(tops))    # open-ended bars run off the top
        ax.set_xticks(sorted(xs), [f"{x:g}" for x in sorted(xs)])
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.16))
    pts, rms = ex.collapse_points(records)
    snr, acc, sd = np.array([p[:3] for p in pts]).T
    axes[3].errorbar(snr, acc, sd, fmt="o", color="C0", ms=2, lw=0.4, alpha=0.5,
                     label="three steps: every (N, d, L), mean ± sd over draws")
    sf = np.linspace(0, snr.max() * 1.05, 60)
    axes[3].plot(sf, [theory.snr_accuracy(c0["V0"], s) for s in sf], "k-",
                 label=r"$E_Z\,\Phi(\mathrm{snr}+Z)^{V-1}$" + f" (rms distance {rms:.3f})")
    axes[3].set(xlabel=r"formula's signal-to-noise ratio $1/\sigma$ (typical token)",
                ylabel=rf"accuracy, three steps, V={c0['V0']}")
    axes[3].legend(fontsize="x-small", loc="upper left")
    fig.suptitle(f"q={c0['q']:g}; {c0['draws']} draws per point (Adam fewer); N*: where the mean "
                 f"accuracy over draws reaches τ = {c0['tau']:g}; bars: 95% bootstrap interval "
                 "over draws; large open marker: d ≥ V, not fitted; open triangle: reached at the "
                 "first N", fontsize="small")
    return with_data(fig, path, {"collapse": pts, "rms": rms})


FIGURES = {name: globals()[f"fig_{name}"] for name in ex.EXPERIMENTS}   # name -> fig_<name>


def draw(name, results=train.RESULTS, scale=None, path=None, talk=False):
    """Draw figure `name` from the last run at `scale` (None: the newest) in `results` into
    `path`, by default figures/<name>.png (fig5: fig5_sequential.png), in figures/<scale>/ at a
    scale other than small, in `results` for a run with --set or another results folder (never
    over the repository's figures); returns the file.  FileNotFoundError: nothing to draw."""
    records, listed = train.load_records(results, name, scale)
    if not records:
        run = f"python train.py {name}" + (f" --scale {scale}" if scale else "") + (
            f" --out {results}" if results != train.RESULTS else "")
        raise FileNotFoundError(f"nothing to draw for {name} at scale {scale or '(any)'} in "
                                f"{results}/{name}/: run `{run}` first")
    folder = "figures" if listed["scale"] == "small" else os.path.join("figures", listed["scale"])
    folder = results if results != train.RESULTS or listed["set"] else folder   # custom: beside
    path = path or os.path.join(folder, "fig5_sequential.png" if name == "fig5" else f"{name}.png")
    path += "" if os.path.splitext(path)[1] else ".png"          # what savefig writes
    with plt.rc_context(TALK if talk else STYLE):
        fig = FIGURES[name](records, path)
        head = [f"{listed['experiment']}: scale {listed['scale']}, {len(records)} of "
                f"{len(listed['keys'])} runs"]                      # a header: the record set,
        head += [f"--set {k}={json.dumps(v)}" for k, v in listed["set"].items()]   # a line each
        edge = len(records) - len(ex.inside(records)) if "lo_fails" in records[0]["result"] else 0
        head += [f"{edge} of {len(records)} searches hit an edge: bounds, not drawn"] * bool(edge)
        fig.text(0.01, 1.02, "\n".join(h[i:i + 80] for h in head for i in range(0, len(h), 80)),
                 fontsize="x-small", color="0.35", va="bottom")
        fig.set_size_inches(fig.get_size_inches() * (TALK_SIZE if talk else 1))
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv=None):
    p = train._Parser(prog="plots.py", description="Draw figures from train.py's results.")
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                   help=f"any of {', '.join(FIGURES)} (default: every one with results)")
    p.add_argument("--results", default=train.RESULTS, help="results folder (default: results)")
    p.add_argument("--out", help="figure file (one EXPERIMENT only; default: figures/..., or "
                   "RESULTS/... after --set or with --results; some save their numbers as .json)")
    p.add_argument("--scale", choices=list(ex.SCALES) + ["custom"], help="draw the last run at "
                   "this scale (default: the newest run; custom: train.sweep called from Python)")
    p.add_argument("--talk", action="store_true", help="larger type and lines, for a projector")
    args = p.parse_args(argv)
    unknown = [n for n in args.experiments if n not in FIGURES]
    if unknown or (args.out and len(args.experiments) != 1):
        p.error(f"unknown figure(s) {unknown}; known: {', '.join(FIGURES)}" if unknown
                else "--out needs exactly one EXPERIMENT")
    for name in args.experiments or FIGURES:
        try:
            print(draw(name, args.results, args.scale, args.out, args.talk))
        except FileNotFoundError as e:
            if args.experiments:
                p.exit(1, f"plots.py: error: {e}\n")
            print(f"skipped {name}: {e}")


if __name__ == "__main__":
    main()
