"""bench.py -- time the fast kernels against recall's textbook forms, in one run
(`make bench`).  Medians of repeats, timed alternately: compare ratios only."""
import argparse
import os
import time

import run                     # first: it sets one BLAS thread per process
import numpy as np             # noqa: E402

import recall as rc            # noqa: E402
import train                   # noqa: E402


def timeit(*fns, repeat=5, min_time=0.2):
    """Median seconds per call of each fn over `repeat` rounds of calls lasting at least
    min_time, the functions alternating so that they share the machine's load."""
    times = [[] for _ in fns]
    for _ in range(repeat + 1):                           # round 0 warms up
        for f, ts in zip(fns, times):
            t0, k = time.perf_counter(), 0
            while time.perf_counter() - t0 < min_time:
                f()
                k += 1
            ts.append((time.perf_counter() - t0) / k)
    return [float(np.median(ts[1:])) for ts in times]


def check_same(a, b):           # refuse to time two forms that compute different arrays
    worst = max(np.abs(a[k] - b[k]).max() / (np.abs(b[k]).max() + 1e-30) for k in a)
    assert worst < 1e-3, f"implementations disagree: {worst:.1e}"          # float32


def gradient(forward, backward, params, fixed, inputs, y):    # a recall model's loss, grads
    logits, cache = forward(params, fixed, inputs)
    loss, dlogits = rc.cross_entropy(logits, y)
    return loss, backward(dlogits, cache)


def fast_vs_textbook(model, data, step, repeat=5):
    """Seconds per step(gradients) with recall's <model>_forward/backward and with its
    textbook form (checked equal on data = (params, fixed, inputs, y))."""
    forms = []
    for form in (model, model + "_textbook"):
        forms.append((getattr(rc, form + "_forward"), getattr(rc, form + "_backward")))
    check_same(*(gradient(*form, *data)[1] for form in forms))
    steps = [lambda form=form: step(gradient(*form, *data)[1]) for form in forms]
    return timeit(*steps, repeat=repeat)


def bench_transformer(d, dtype, B=1024, T=32, S=64, R=64, D=8):
    rng = np.random.default_rng(0)
    H, dh, m = 8, d // 8, d
    task = rc.make_facts(S, R, D, rng, T=T)
    fixed = {"E": rc.embeddings(task["vocab"], d, rng).astype(dtype),
             "U": rc.embeddings(task["n_answers"], d, rng).astype(dtype)}
    params = {k: v.astype(dtype) for k, v in rc.init_transformer(d, H, dh, m, rng).items()}
    tokens, y = rc.sample_facts(task, B, rng)
    state = train.adam_init(params)
    data = (params, fixed, tokens, y)
    return fast_vs_textbook("transformer", data,
                            lambda g: train.adam_step(params, g, state, 1e-3), repeat=7)


def bench_linear_attention(dtype, B=1024, T=32):       # fig5's SGD step: (ours, textbook)
    rng = np.random.default_rng(0)
    task = rc.make_facts(16, 4, 8, rng, T=T, structured=True)     # fig5's task, 32 answers
    d, n_answers = task["vocab"], task["n_answers"]             # one-hot: d = 41, 32
    p = {"A": rng.standard_normal((d, d), dtype) / d,
         "WV": rng.standard_normal((d, n_answers), dtype) / d}
    data = (p, {"E": np.eye(d, dtype=dtype)}, *rc.sample_facts(task, B, rng))
    return fast_vs_textbook("linear_attention", data, lambda g: train.sgd_step(p, g, 0.1))


def main(argv=None):
    argparse.ArgumentParser(description=__doc__).parse_args(argv)      # only --help
    run.keep_freed_memory()                                 # as the runner does
    print(f"BLAS threads per process: {os.environ.get('OPENBLAS_NUM_THREADS')}; float32")
    print("\ntransformer Adam step (forward + backward + Adam), H=8, dh=d/8, m=d, B=1024, T=32")
    print("    d   ours ms  textbook ms  speed-up")
    for d in [32, 64, 128]:
        t, tn = bench_transformer(d, np.float32)
        print(f"{d:>5} {1e3 * t:9.2f} {1e3 * tn:12.2f} {tn / t:8.1f}x")
    t, tn = bench_linear_attention(np.float32)
    print(f"\nfig5 linear attention SGD step, B=1024, T=32, one-hot d=41: ours {1e3 * t:.2f} ms, "
          f"textbook {1e3 * tn:.2f} ms, speed-up {tn / t:.1f}x")


if __name__ == "__main__":
    main()
