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
from train import RESULTS, fig5_stages, load_records   # noqa: E402

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
