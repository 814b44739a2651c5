"""bench.py -- time the project's kernels against a straightforward implementation of the same
math, against a jit-compiled JAX step of the same model when JAX is importable, and against a
plain large matmul, all measured in the same run (`make bench`).

The straightforward transformer is recall.transformer_textbook_* (per-position keys and values
(B, H, T, dh)); the straightforward retrieval model exists only here (per-position rows
(N, L, d)).  Timings are medians of several repeats; compare ratios, not absolute times
(machines are shared and noisy).
JAX is optional and never a requirement: install it in any environment to get its column.
"""
import argparse
import os
import subprocess
import sys
import time

import train                   # first: it sets one BLAS thread per process
import numpy as np             # noqa: E402

import recall as rc            # noqa: E402


def timeit(fn, *others, repeat=5, min_time=0.2):
    """Median seconds per call of fn() over `repeat` batches of calls lasting >= min_time.
    With several functions, their batches alternate (so they share the machine's load) and
    the result is the list of medians."""
    fns, n = (fn,) + others, []
    for f in fns:
        f()                                                # warm up (and compile)
        t0, k = time.perf_counter(), 0
        while time.perf_counter() - t0 < min_time / 4:
            f()
            k += 1
        n.append(max(1, k * 4))
    times = [[] for _ in fns]
    for _ in range(repeat):
        for f, k, ts in zip(fns, n, times):
            t0 = time.perf_counter()
            for _ in range(k):
                f()
            ts.append((time.perf_counter() - t0) / k)
    medians = [float(np.median(ts)) for ts in times]
    return medians if others else medians[0]


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


def jax_transformer_step(fold):
    """A jit-compiled JAX Adam step of the same model, on one thread; None without JAX.
    fold=True: the project's algebra (keys folded into the query, embeddings pooled before the
    value map); fold=False: keys and values at every position, as the formulas are written."""
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def loss(p, E, U, tokens, y):
        X = E[tokens]                                               # (B, T, d)
        q = jnp.einsum("bd,hdk->bhk", X[:, -1], p["WQ"])
        if fold:
            s = jnp.einsum("bhd,btd->bht", jnp.einsum("bhk,hdk->bhd", q, p["WK"]), X)
        else:
            s = jnp.einsum("bthk,bhk->bht", jnp.einsum("btd,hdk->bthk", X, p["WK"]), q)
        a = jax.nn.softmax(s / jnp.sqrt(p["WQ"].shape[2]), axis=-1)
        o = (jnp.einsum("bhd,hdk->bhk", jnp.einsum("bht,btd->bhd", a, X), p["WV"]) if fold
             else jnp.einsum("bht,bhtk->bhk", a, jnp.einsum("btd,hdk->bhtk", X, p["WV"])))
        x = o.reshape(len(y), -1) @ p["WO"]
        logits = (x + jax.nn.relu(x @ p["W1"] + p["b1"]) @ p["W2"]) @ U.T
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(len(y)), y])

    @jax.jit
    def step(p, m, v, t, E, U, tokens, y, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        g = jax.grad(loss)(p, E, U, tokens, y)
        m = {k: b1 * m[k] + (1 - b1) * g[k] for k in p}
        v = {k: b2 * v[k] + (1 - b2) * g[k] ** 2 for k in p}
        p = {k: p[k] - lr * m[k] / (1 - b1 ** t) / (jnp.sqrt(v[k] / (1 - b2 ** t)) + eps)
             for k in p}
        return p, m, v
    return lambda *a: jax.block_until_ready(step(*a)), jnp.asarray, jnp.zeros_like


def bench_transformer(d, dtype, B=1024, T=32, S=64, R=64, D=8, jax_steps=()):
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
    flops = transformer_flops(B, T, d, H, dh, m, task["n_answers"])
    jax_runs = []
    for run, arr, zeros in jax_steps:
        jp = {k: arr(v) for k, v in params.items()}
        jargs = (jp, {k: zeros(v) for k, v in jp.items()}, {k: zeros(v) for k, v in jp.items()},
                 arr(dtype(1)), arr(fixed["E"]), arr(fixed["U"]), arr(tokens), arr(y))
        assert run(*jargs)[0]["WQ"].dtype == params["WQ"].dtype   # JAX computes in our dtype
        jax_runs.append(lambda run=run, jargs=jargs: run(*jargs))
    t_ours, t_naive, *t_jax = timeit(ours, naive, *jax_runs, repeat=7)
    return t_ours, t_naive, flops / t_ours / 1e9, t_jax


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
    p.add_argument("--no-jax", action="store_true", help="skip the JAX column even if importable")
    p.add_argument("--one-step", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    dtype = np.dtype(args.dtype).type
    if args.one_step:
        print(bench_transformer(args.one_step, dtype)[0])
        return
    print(f"BLAS threads per process: {os.environ.get('OPENBLAS_NUM_THREADS')}")
    gf = matmul_gflops(dtype)
    print(f"dtype {args.dtype}; plain 1024x1024 matmul: {gf:.1f} GFLOP/s")
    jax_steps = [] if args.no_jax else [jax_transformer_step(f) for f in (True, False)]
    jax_steps = [j for j in jax_steps if j is not None]
    print("\ntransformer Adam step (forward + backward + Adam), H=8, dh=d/8, m=d, B=1024, T=32")
    print("JAX: jit-compiled Adam step of the same model on one thread, timed alternately with "
          "ours in this run;\n  'JAX same' uses our algebra, 'JAX naive' the per-position keys "
          "and values" if jax_steps else "JAX: not importable here, so no side-by-side JAX "
          "timing (install jax and jaxlib in the environment running bench.py to get one)")
    print(f"{'d':>5} {'ours ms':>9} {'textbook ms':>12} {'speed-up':>9} {'GFLOP/s':>8} {'% matmul':>9}"
          + (f" {'JAX same':>9} {'/ours':>6} {'JAX naive':>9} {'/ours':>6}" if jax_steps else ""))
    for d in ([32] if args.quick else [32, 64, 128]):
        t, tn, g, tj = bench_transformer(d, dtype, jax_steps=jax_steps)
        print(f"{d:>5} {1e3 * t:9.2f} {1e3 * tn:12.2f} {tn / t:8.1f}x {g:8.1f} {100 * g / gf:8.0f}%"
              + "".join(f" {1e3 * x:9.2f} {x / t:5.2f}x" for x in tj))
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
