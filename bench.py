"""bench.py -- time the project's kernels against a straightforward implementation of the same
math, measured in the same run, and against a plain large matmul (`make bench`).

The straightforward transformer is recall.transformer_textbook_* (per-position keys and values
(B, H, T, dh)); the straightforward retrieval model exists only here (per-position rows
(N, L, d)).  Timings are medians of several repeats; compare ratios, not absolute times
(machines are shared and noisy).
"""
import argparse
import os
import subprocess
import sys
import time

import train                   # first: it sets one BLAS thread per process
import numpy as np             # noqa: E402

import recall as rc            # noqa: E402


def timeit(fn, repeat=5, min_time=0.2):
    """Median seconds per call of fn() over `repeat` batches of calls lasting >= min_time."""
    fn()                                                   # warm up
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < min_time / 4:
        fn()
        n += 1
    n = max(1, n * 4)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return float(np.median(times))


def check_same(a, b, dtype):
    """Refuse to time two implementations that do not compute the same arrays."""
    worst = max(np.abs(a[k] - b[k]).max() / (np.abs(b[k]).max() + 1e-30) for k in a)
    tol = 1e-8 if np.dtype(dtype) == np.float64 else 1e-3
    assert worst < tol, f"implementations disagree: {worst:.1e}"


def matmul_gflops(dtype, n=1024):
    A = np.random.default_rng(0).standard_normal((n, n)).astype(dtype)
    return 2 * n ** 3 / timeit(lambda: A @ A) / 1e9


# ----------------------------------------------------------------------------- transformer

def textbook_transformer_step(params, fixed, tokens, y):
    logits, cache = rc.transformer_textbook_forward(params, fixed, tokens)
    loss, dlogits = rc.cross_entropy(logits, y)
    return loss, rc.transformer_textbook_backward(dlogits, cache)


def project_transformer_step(params, fixed, tokens, y):
    logits, cache = rc.transformer_forward(params, fixed, tokens)
    loss, dlogits = rc.cross_entropy(logits, y)
    return loss, rc.transformer_backward(dlogits, cache)


def transformer_flops(B, T, d, H, dh, m, n_answers):
    """Multiply-adds x2 of the project's forward + backward (backward ~ 2x forward)."""
    fwd = (B * d * H * dh           # q
           + H * B * d * dh         # WK_h q
           + H * B * T * d * 2      # scores, pooling
           + H * B * d * dh         # pooled values
           + B * H * dh * d + 2 * B * d * m + B * d * n_answers)
    return 2 * 3 * fwd


def bench_transformer(d, dtype, B=1024, T=32, S=64, R=64, D=8):
    rng = np.random.default_rng(0)
    H, dh, m = 8, d // 8, d
    task = rc.make_facts(S, R, D, rng, T=T)
    fixed = {"E": rc.embeddings(task["vocab"], d, rng).astype(dtype),
             "U": rc.embeddings(task["n_answers"], d, rng).astype(dtype)}
    params = {k: v.astype(dtype) for k, v in rc.init_transformer(d, H, dh, m, rng).items()}
    tokens, y = rc.sample_facts(task, B, rng)
    state = train.adam_init(params)

    def ours():
        loss, g = project_transformer_step(params, fixed, tokens, y)
        train.adam_step(params, g, state, 1e-3)

    def naive():
        loss, g = textbook_transformer_step(params, fixed, tokens, y)
        train.adam_step(params, g, state, 1e-3)

    l1, g1 = project_transformer_step(params, fixed, tokens, y)
    l2, g2 = textbook_transformer_step(params, fixed, tokens, y)
    check_same(g1, g2, dtype)
    t_ours, t_naive = timeit(ours), timeit(naive)
    flops = transformer_flops(B, T, d, H, dh, m, task["n_answers"])
    return t_ours, t_naive, flops / t_ours / 1e9


# ----------------------------------------------------------------------------- retrieval

def straightforward_retrieval_grads(params, fixed, tokens, pos, labels):
    """Forward + backward with explicit rows h (N, L, d)."""
    E, U, zt, ze = fixed["E"], fixed["U"], fixed["z_trig"], fixed["z_eos"]
    N, L = tokens.shape
    h = E[tokens].copy()                                            # (N, L, d)
    h[np.arange(N), pos] += zt
    s = h @ (params["WKQ"] @ ze)                                    # (N, L)
    a = rc.softmax(s, axis=1)
    phi = np.einsum("nl,nld->nd", a, h, optimize=True)              # (N, d)
    Wm = fixed.get("W_mlp")
    g = phi if Wm is None else np.maximum(phi @ Wm, 0)
    loss, dlogits = rc.cross_entropy(g @ params["WV"] @ U.T, labels)
    dZ = dlogits @ U
    dWV = g.T @ dZ
    dg = dZ @ params["WV"].T
    dphi = dg if Wm is None else (dg * (phi @ Wm > 0)) @ Wm.T
    da = np.einsum("nld,nd->nl", h, dphi, optimize=True)
    ds = a * (da - (a * da).sum(1, keepdims=True))
    dw = np.einsum("nl,nld->d", ds, h, optimize=True)
    return loss, {"WKQ": np.outer(dw, ze), "WV": dWV}


def straightforward_three_step(fixed, tokens, pos, labels, eta, gamma):
    """The paper's three full-batch steps with the straightforward gradients above."""
    d = fixed["E"].shape[1]
    vdim = d if "W_mlp" not in fixed else fixed["W_mlp"].shape[1]
    zero = {"WKQ": np.zeros((d, d)), "WV": np.zeros((vdim, d))}
    WV1 = -eta * straightforward_retrieval_grads(zero, fixed, tokens, pos, labels)[1]["WV"]
    g1 = straightforward_retrieval_grads({"WKQ": zero["WKQ"], "WV": WV1}, fixed, tokens, pos, labels)[1]
    WKQ1 = -gamma * g1["WKQ"]
    g2 = straightforward_retrieval_grads({"WKQ": WKQ1, "WV": WV1}, fixed, tokens, pos, labels)[1]
    return {"WKQ": WKQ1, "WV": WV1 - gamma * g2["WV"]}


def bench_three_step(V, d, L, N):
    """float64, as train.three_step computes in float64 (eta is tiny)."""
    rng = np.random.default_rng(0)
    task = rc.make_retrieval(V, d, L, rng)
    fixed = rc.retrieval_fixed(task)
    tokens, pos, labels = rc.sample_retrieval(task, N, rng)
    eta, gamma = 1e-3, 1e3
    p1 = train.three_step(fixed, tokens, pos, labels, eta, gamma=gamma)
    p2 = straightforward_three_step(fixed, tokens, pos, labels, eta, gamma)
    check_same(p1, p2, np.float64)
    t_ours = timeit(lambda: train.three_step(fixed, tokens, pos, labels, eta, gamma=gamma),
                    repeat=3, min_time=0.5)
    t_naive = timeit(lambda: straightforward_three_step(fixed, tokens, pos, labels, eta, gamma),
                     repeat=3, min_time=0.5)
    return t_ours, t_naive


def project_retrieval_grads(params, fixed, tokens, pos, labels):
    logits, cache = rc.retrieval_forward(params, fixed, (tokens, pos))
    loss, dlogits = rc.cross_entropy(logits, labels)
    return loss, rc.retrieval_backward(dlogits, cache)


def bench_retrieval(V, d, L, N, dtype):
    rng = np.random.default_rng(0)
    task = rc.make_retrieval(V, d, L, rng)
    fixed = {k: v.astype(dtype) for k, v in rc.retrieval_fixed(task).items()}
    tokens, pos, labels = rc.sample_retrieval(task, N, rng)
    params = {"WKQ": rng.standard_normal((d, d)).astype(dtype),
              "WV": rng.standard_normal((d, d)).astype(dtype) / d}
    _, g1 = project_retrieval_grads(params, fixed, tokens, pos, labels)
    _, g2 = straightforward_retrieval_grads(params, fixed, tokens, pos, labels)
    check_same(g1, g2, dtype)
    t_ours = timeit(lambda: project_retrieval_grads(params, fixed, tokens, pos, labels), repeat=3)
    t_naive = timeit(lambda: straightforward_retrieval_grads(params, fixed, tokens, pos, labels),
                     repeat=3)
    return t_ours, t_naive


def threads_ratio(d=64):
    """Time the d=64 transformer step in fresh processes with 1 and 2 BLAS threads."""
    out = {}
    for n in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=n, OMP_NUM_THREADS=n, MKL_NUM_THREADS=n)
        r = subprocess.run([sys.executable, __file__, "--one-step", str(d)], env=env,
                           capture_output=True, text=True, check=True)
        out[n] = float(r.stdout)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", choices=["float64", "float32"], default="float32")
    p.add_argument("--quick", action="store_true", help="smallest sizes only")
    p.add_argument("--one-step", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    dtype = np.dtype(args.dtype).type
    if args.one_step:
        print(bench_transformer(args.one_step, dtype)[0])
        return
    print(f"BLAS threads per process: {os.environ.get('OPENBLAS_NUM_THREADS')}")
    gf = matmul_gflops(dtype)
    print(f"dtype {args.dtype}; plain 1024x1024 matmul: {gf:.1f} GFLOP/s")
    print("\ntransformer Adam step (forward + backward + Adam), H=8, dh=d/8, m=d, B=1024, T=32")
    print(f"{'d':>5} {'ours ms':>9} {'textbook ms':>12} {'speed-up':>9} {'GFLOP/s':>8} {'% matmul':>9}")
    for d in ([32] if args.quick else [32, 64, 128]):
        t, tn, g = bench_transformer(d, dtype)
        print(f"{d:>5} {1e3 * t:9.2f} {1e3 * tn:12.2f} {tn / t:8.1f}x {g:8.1f} {100 * g / gf:8.0f}%")
    for title, bench_fn, sizes in [
            ("retrieval model, one full-batch gradient (forward + backward), attention only",
             lambda V, d, L, N: bench_retrieval(V, d, L, N, dtype),
             [(256, 64, 16, 20000), (1024, 128, 32, 20000), (256, 64, 64, 20000)]),
            ("three-step algorithm (train.three_step, float64), attention only", bench_three_step,
             [(128, 32, 16, 4000), (256, 64, 16, 20000), (256, 64, 64, 20000)])]:
        print(f"\n{title}")
        print(f"{'V':>5} {'d':>4} {'L':>3} {'N':>6} {'ours ms':>9} {'naive ms':>9} {'speed-up':>9}")
        for V, d, L, N in sizes[:1] if args.quick else sizes:
            t, tn = bench_fn(V, d, L, N)
            print(f"{V:>5} {d:>4} {L:>3} {N:>6} {1e3 * t:9.1f} {1e3 * tn:9.1f} {tn / t:8.1f}x")
    if not args.quick:
        r = threads_ratio()
        print(f"\ntransformer step d=64 in a fresh process: 1 BLAS thread {1e3 * r['1']:.1f} ms, "
              f"2 threads {1e3 * r['2']:.1f} ms (2 threads / 1 thread = {r['2'] / r['1']:.2f})")


if __name__ == "__main__":
    main()
