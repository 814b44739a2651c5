"""bench.py -- time the fast kernels against recall's textbook forms, a jit-compiled JAX
step of the same per-vocabulary algebra (if JAX is importable; never required) and a plain
matmul, in one run (`make bench`).  Medians of repeats, timed alternately: compare ratios
only."""
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
    for _ in range(repeat + 1):                           # round 0 warms up (and compiles)
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


def fast_vs_textbook(model, data, step, *others, repeat=5):
    """Seconds per step(gradients) with recall's <model>_forward/backward and with its
    textbook form (checked equal on data = (params, fixed, inputs, y)), and per call of
    the `others`."""
    forms = []
    for form in (model, model + "_textbook"):
        forms.append((getattr(rc, form + "_forward"), getattr(rc, form + "_backward")))
    check_same(*(gradient(*form, *data)[1] for form in forms))
    steps = [lambda form=form: step(gradient(*form, *data)[1]) for form in forms]
    return timeit(*steps, *others, repeat=repeat)


def jax_transformer_step():
    """JAX's jit-compiled Adam step of our per-vocabulary algebra on one CPU thread, or
    None."""
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    if hasattr(os, "sched_getaffinity"):   # XLA starts a pool thread per CPU it may use,
        cpus = os.sched_getaffinity(0)      # whatever XLA_FLAGS says: start it on one
        os.sched_setaffinity(0, {min(cpus)})
        jax.devices()
        os.sched_setaffinity(0, cpus)

    def loss(p, E, U, tokens, y):                     # the bench's rows all end with EOS
        (H, _, dh), B, V = p["WQ"].shape, len(y), len(E)
        n = jnp.zeros((B, V), E.dtype).at[jnp.arange(B)[:, None], tokens].add(1)  # counts
        q = E[tokens[0, -1]] @ p["WQ"] / dh ** 0.5                 # (H, dh) the one query
        S = jnp.einsum("hk,hdk->hd", q, p["WK"]) @ E.T              # (H, V)   E_v WK_h q
        e = jnp.exp(S - jax.lax.stop_gradient(S.max(1, keepdims=True)))  # numerators e_hv
        Ev = jnp.concatenate([E @ p["WV"], jnp.ones((H, V, 1), E.dtype)], axis=2)
        W = (e[..., None] * Ev).transpose(1, 0, 2).reshape(V, -1)
        pool = (n @ W).reshape(B, H, -1)
        x = (pool[..., :dh] / pool[..., dh:]).reshape(B, -1) @ p["WO"]
        logits = (x + jax.nn.relu(x @ p["W1"] + p["b1"]) @ p["W2"]) @ U.T
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(B), y])

    @jax.jit
    def step(p, m, v, t, E, U, tokens, y, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        g = jax.grad(loss)(p, E, U, tokens, y)
        m = {k: b1 * m[k] + (1 - b1) * g[k] for k in p}
        v = {k: b2 * v[k] + (1 - b2) * g[k] ** 2 for k in p}
        p = {k: p[k] - lr * m[k] / (1 - b1 ** t) / (jnp.sqrt(v[k] / (1 - b2 ** t)) + eps)
             for k in p}
        return p, m, v
    return lambda *a: jax.block_until_ready(step(*a)), jnp.asarray, jax.value_and_grad(loss)


def bench_transformer(d, dtype, B=1024, T=32, S=64, R=64, D=8, jax_steps=()):
    rng = np.random.default_rng(0)
    H, dh, m = 8, d // 8, d
    task = rc.make_facts(S, R, D, rng, T=T)
    fixed = {"E": rc.embeddings(task["vocab"], d, rng).astype(dtype),
             "U": rc.embeddings(task["n_answers"], d, rng).astype(dtype)}
    params = rc.init_transformer(d, H, dh, m, rng)
    params = {k: v.astype(dtype) for k, v in params.items()}
    tokens, y = rc.sample_facts(task, B, rng)
    state = train.adam_init(params)
    data = (params, fixed, tokens, y)
    loss, grads = gradient(rc.transformer_forward, rc.transformer_backward, *data)
    # multiply-adds per row (x2: flops): attention n (e Ev) and its transpose, WO, MLP, U, dy
    per_row = 2 * task["vocab"] * H * (dh + 1) + 3 * d * (H * dh + 2 * m) + 2 * d * D * R
    jax_runs = []
    for jax_step, arr, jax_grad in jax_steps:         # JAX's loss and gradients equal ours
        jp = {k: arr(v) for k, v in params.items()}
        zeros = {k: 0 * v for k, v in jp.items()}
        jargs = (jp, zeros, dict(zeros), arr(dtype(1)), arr(fixed["E"]), arr(fixed["U"]),
                 arr(tokens), arr(y))
        jax_loss, jax_grads = jax_grad(jp, *jargs[4:])
        check_same({"loss": jax_loss, **jax_grads}, {"loss": loss, **grads})
        assert jax_step(*jargs)[0]["WQ"].dtype == params["WQ"].dtype   # in our dtype
        jax_runs.append(lambda jax_step=jax_step, jargs=jargs: jax_step(*jargs))
    t_ours, t_naive, *t_jax = fast_vs_textbook(
        "transformer", data, lambda g: train.adam_step(params, g, state, 1e-3), *jax_runs,
        repeat=7)
    return t_ours, t_naive, 2 * B * per_row / t_ours / 1e9, t_jax


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
    print(f"BLAS threads per process: {os.environ.get('OPENBLAS_NUM_THREADS')}")
    A = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    gf = 2 * 1024 ** 3 / timeit(lambda: A @ A)[0] / 1e9
    print(f"float32; plain 1024x1024 matmul: {gf:.1f} GFLOP/s")
    jax_step = jax_transformer_step()
    jax_steps = [] if jax_step is None else [jax_step]
    print("\ntransformer Adam step (forward + backward + Adam), H=8, dh=d/8, m=d, B=1024, T=32")
    header = "    d   ours ms  textbook ms  speed-up  GFLOP/s  % matmul"
    if jax_steps:
        print("JAX: the same step, jit-compiled, one thread, timed alternately with ours")
        header += "    JAX ms JAX / ours  1.5x JAX needs % matmul"
    else:
        print("JAX: not importable here (install jax in the Python running bench.py for a "
              "column)")
    print(header)
    for d in [32, 64, 128]:
        t, tn, g, tj = bench_transformer(d, np.float32, jax_steps=jax_steps)
        line = f"{d:>5} {1e3 * t:9.2f} {1e3 * tn:12.2f} {tn / t:8.1f}x {g:8.1f}"
        line += f" {100 * g / gf:8.0f}%"
        for x in tj:
            line += f" {1e3 * x:9.2f} {x / t:9.2f}x {150 * g * t / x / gf:20.0f}%"
        print(line)
    t, tn = bench_linear_attention(np.float32)
    print(f"\nfig5 linear attention SGD step, B=1024, T=32, one-hot d=41: ours {1e3 * t:.2f} ms, "
          f"textbook {1e3 * tn:.2f} ms, speed-up {tn / t:.1f}x")


if __name__ == "__main__":
    main()
