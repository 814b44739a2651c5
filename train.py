"""train.py -- optimizers, every training loop, the capacity search and paper B's learners.

Each loop calls recall.py's forward and backward passes; nothing here differentiates by
itself.  Setups: MODEL.md (A1-A5 for paper A, section 3 for paper B)."""
import math

import numpy as np

import recall as rc
import theory


# ------------------------------------------------------------------ optimizers

def sgd_step(params, grads, lr):
    for k in params:
        params[k] -= lr * grads[k]


def adam_init(params):
    zeros = {k: np.zeros_like(p) for k, p in params.items()}
    return {"t": 0, "m": zeros, "v": {k: np.zeros_like(p) for k, p in params.items()}}


def adam_step(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Adam with bias correction, in place; eps is added outside the square root:
        m <- b1 m + (1-b1) g,  v <- b2 v + (1-b2) g^2,
        p <- p - lr m_hat / (sqrt(v_hat) + eps),  m_hat = m/(1-b1^t),  v_hat = v/(1-b2^t)."""
    state["t"] += 1
    t = state["t"]
    for k in params:
        m, v, g = state["m"][k], state["v"][k], grads[k]
        m[:] = b1 * m + (1 - b1) * g                 # in place: the state keeps its arrays
        v[:] = b2 * v + (1 - b2) * g * g
        params[k] -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


# ------------------------------------------------------------------ capacity search

def memoised(fn):
    """fn with its results kept: (the memoised function, the dict n -> fn(n))."""
    cache = {}

    def call(n):
        if n not in cache:
            cache[n] = fn(n)
        return cache[n]
    return call, cache


WIDEN = 64     # a capacity search widens its bracket up to WIDEN times its first top


def bisect_capacity(succeeds, lo, hi, ratio=1.01, widen=WIDEN):
    """The largest n with succeeds(n) (monotone), bisected in log scale to hi/lo <= ratio
    from [lo, hi], widened to at most [1, widen hi] (an edge is a bound); lo is tried first
    (a trial that succeeds stops early), hi only if no probe below it failed."""
    lo, hi = int(lo), int(hi)
    if lo < 1 or hi < lo:
        raise ValueError(f"need 1 <= lo <= hi, got lo={lo}, hi={hi}")
    succeeds, top = memoised(succeeds)[0], widen * hi
    while lo > 1 and not succeeds(lo):
        lo, hi = max(1, lo // 2), lo
    while True:                                     # lo succeeds, or is 1
        a, b = theory.bisect_log(succeeds, lo, hi, ratio, integer=True, at_lo=True)
        if b < hi or not succeeds(hi):
            return a
        if hi == top:
            return hi
        lo, hi = hi, min(top, 2 * hi)


# ------------------------------------------------------------------ paper A: memories

def fit_memory(forward, backward, params, fixed, y, lr, steps, stop_at=1.0, patience=None):
    """Full-batch Adam on items 0..N-1 (labels y) to accuracy stop_at, `steps`, or `patience`
    steps without gain ([ours]); the first steps at 99% and 100% (None: never), best, steps."""
    x = np.arange(len(y))                                          # (N,)
    state = adam_init(params)
    out, best_step = {"first99": None, "first100": None, "best": 0.0}, 0
    for step in range(steps + 1):
        logits, cache = forward(params, fixed, x)                  # (N, classes)
        acc = rc.accuracy(logits, y)
        if acc > out["best"]:
            out["best"], best_step = acc, step
        if acc >= 0.99 and out["first99"] is None:
            out["first99"] = step
        if acc == 1.0:
            out["first100"] = step
        stalled = patience is not None and step - best_step >= patience
        if acc >= stop_at or step == steps or stalled:
            out["steps"] = step
            return out
        _, dlogits = rc.cross_entropy(logits, y)
        adam_step(params, backward(dlogits, cache), state, lr)


def linear_memory_trial(N, d, seed, lr, steps):
    """Train W (d, d) by full-batch Adam on N sphere embeddings, f(i) = i (A1)."""
    rng = np.random.default_rng([seed, d, N])
    E, U = rc.embeddings(N, d, rng, "sphere"), rc.embeddings(N, d, rng, "sphere")
    params = {"W": np.zeros((d, d))}                               # [ours] zero init
    out = fit_memory(rc.linear_memory_forward, rc.linear_memory_backward, params,
                     {"E": E, "U": U}, np.arange(N), lr, steps)    # item i -> class i
    if not np.isfinite(params["W"]).all():
        raise FloatingPointError(f"linear memory diverged at N={N}, d={d}, lr={lr}")
    out["N"] = N
    return out


def hebbian_accuracy(N, d, seed):
    """Accuracy of the untrained memory W = sum_i e_i u_i^T = E^T U, on the trial's draw."""
    rng = np.random.default_rng([seed, d, N])
    E, U = rc.embeddings(N, d, rng, "sphere"), rc.embeddings(N, d, rng, "sphere")
    return rc.accuracy((E @ (E.T @ U)) @ U.T, np.arange(N))       # logits E W U^T (N, N)


def mlp_memory_trial(N, d, m, M, seed, lr, steps, patience=None, dtype="float64"):
    """The MLP memory (A2) by full-batch Adam to 99%; f(i) = i (M = None) or i M // N."""
    rng = np.random.default_rng([seed, d, m, M or 0, N])
    E = rc.embeddings(N, d, rng, "sphere")
    U = rc.embeddings(N if M is None else M, d, rng, "sphere")
    fixed = {"E": E.astype(dtype), "U": U.astype(dtype)}
    params = {"W1": rng.standard_normal((d, m)) / np.sqrt(d), "b1": np.zeros(m),
              "W2": rng.standard_normal((m, d)) / np.sqrt(m)}
    params = {k: v.astype(dtype) for k, v in params.items()}
    y = np.arange(N) if M is None else (np.arange(N) * M) // N    # (N,)
    out = fit_memory(rc.mlp_memory_forward, rc.mlp_memory_backward, params, fixed, y, lr,
                     steps, 0.99, patience)
    return {"N": N, "first99": out["first99"], "best": out["best"], "steps": out["steps"]}


# ------------------------------------------------------------------ paper A: transformer

def transformer_trial(S, cfg):
    """transformer_run at each lr of cfg["lrs"] in turn, until one reaches 99%."""
    runs = []
    for lr in cfg["lrs"]:
        runs.append(transformer_run(S, cfg, lr))
        if runs[-1]["first_fresh99"] is not None:
            break
    fresh99 = runs[-1]["first_fresh99"] is not None
    return {"S": S, "facts": S * S, "runs": runs, "fresh99": fresh99}


def transformer_run(S, cfg, lr):
    """Adam on fresh prompts, S = R (A4), lr cosine-decayed to 0 ([ours]), the accuracy on
    n_test fresh prompts every eval_every steps; stops at 99% (and every fact right on k =
    prompts_per_fact prompts), at `steps`, or `patience` steps without a 0.005 gain ([ours])."""
    d, H, dh, m, dt = cfg["d"], cfg["H"], cfg["dh"], cfg["m"], np.dtype(cfg["dtype"])
    rng = np.random.default_rng([cfg["seed"], d, H, dh, m, S])
    task = rc.make_facts(S, S, cfg["D"], rng, T=cfg["T"])
    fixed = {"E": rc.embeddings(task["vocab"], d, rng).astype(dt),   # float32: same math
             "U": rc.embeddings(task["n_answers"], d, rng).astype(dt)}
    params = {k: v.astype(dt) for k, v in rc.init_transformer(d, H, dh, m, rng).items()}
    state = adam_init(params)
    k = cfg["prompts_per_fact"]
    subjects = np.repeat(np.arange(S), S * k)                      # every fact k times
    relations = np.tile(np.repeat(np.arange(S), k), S)

    def accuracy(every_fact=False):      # on n_test fresh prompts, or on every fact
        if every_fact:
            x, y = rc.sample_facts(task, len(subjects), rng, subjects, relations)
        else:
            x, y = rc.sample_facts(task, cfg["n_test"], rng)
        return rc.accuracy(rc.transformer_forward(params, fixed, x)[0], y)

    run, best, best_step = {"lr": lr, "first_fresh99": None}, 0.0, 0
    for step in range(cfg["steps"] + 1):
        if step % cfg["eval_every"] == 0 or step == cfg["steps"]:
            acc = run["fresh_acc"] = accuracy()
            if acc > best + 0.005:
                best_step = step
            best = max(best, acc)
            if cfg["patience"] and step - best_step >= cfg["patience"] and best < 0.99:
                break                                              # [ours] no progress
            if acc >= 0.99:
                if run["first_fresh99"] is None:
                    run["first_fresh99"] = step
                if k == 0 or accuracy(every_fact=True) == 1.0:     # k = 0: 99% is all
                    break
        if step == cfg["steps"]:
            break
        x, y = rc.sample_facts(task, cfg["batch"], rng)           # (B, T), (B,)
        logits, cache = rc.transformer_forward(params, fixed, x)
        _, dlogits = rc.cross_entropy(logits, y)
        lr_t = lr * (0.5 + 0.5 * math.cos(math.pi * step / cfg["steps"]))
        adam_step(params, rc.transformer_backward(dlogits, cache), state, lr_t)
    run["steps"] = step
    return run


# ------------------------------------------------------------------ paper A: linear attention

def linear_attention_sgd(task, params, fixed, lr, batch, steps, rng, evaluate, every):
    """Plain SGD on fresh batches (A5), params in place; evaluate(params) -> {name: number}
    every `every` steps and at the end, returned as {"step": [...], name: [...]}."""
    curve = {"step": []}
    for step in range(steps + 1):
        if step % every == 0 or step == steps:
            curve["step"].append(step)
            for name, value in evaluate(params).items():
                curve.setdefault(name, []).append(value)
        if step == steps:
            break
        x, y = rc.sample_facts(task, batch, rng)
        logits, cache = rc.linear_attention_forward(params, fixed, x)
        _, dlogits = rc.cross_entropy(logits, y)
        sgd_step(params, rc.linear_attention_backward(dlogits, cache), lr)
    return curve


# ------------------------------------------------------------------ paper B: learners

def retrieval_grad(params, fixed, tokens, pos, labels, chunk=4096):
    """Mean cross-entropy and its gradient, in chunks of rows (no (N, V) logits at once)."""
    N, loss = len(labels), 0.0
    grads = {k: np.zeros_like(p) for k, p in params.items()}
    for s in range(0, N, chunk):
        e = min(s + chunk, N)
        logits, cache = rc.retrieval_forward(params, fixed, (tokens[s:e], pos[s:e]))  # (., V)
        chunk_loss, dlogits = rc.cross_entropy(logits, labels[s:e])
        weight = (e - s) / N
        loss += weight * chunk_loss
        for k, g in rc.retrieval_backward(dlogits * weight, cache).items():
            grads[k] += g
    return loss, grads


def zero_params(fixed):         # WKQ (d, d), WV (d, d) or (m, d) with an MLP, all zero
    d, dt = fixed["E"].shape[1], fixed["E"].dtype
    vdim = fixed.get("W_mlp", fixed["E"]).shape[1]
    return {"WKQ": np.zeros((d, d), dt), "WV": np.zeros((vdim, d), dt)}


def three_step(fixed, tokens, pos, labels, eta, gamma=None, query_norm=None, chunk=4096):
    """The paper's three full-batch GD steps from zero on the same N samples:
        WV1  = -eta   grad_WV  L(WV=0,   WKQ=0)
        WKQ1 = -gamma grad_WKQ L(WV=WV1, WKQ=0)
        WV2  = WV1 - gamma grad_WV L(WV=WV1, WKQ=WKQ1)
    Returns WKQ1 and WV2.  query_norm = q instead of gamma sets gamma so that the query
    w = WKQ1 z_eos has norm q (WKQ1 is linear in gamma)."""
    if (gamma is None) == (query_norm is None):
        raise ValueError("give exactly one of gamma and query_norm")
    p0 = zero_params(fixed)  # exercise 7
    _, g0 = retrieval_grad(p0, fixed, tokens, pos, labels, chunk)
    WV1 = -eta * g0["WV"]
    _, g1 = retrieval_grad({"WKQ": p0["WKQ"], "WV": WV1}, fixed, tokens, pos, labels, chunk)
    if gamma is None:
        gamma = query_norm / np.linalg.norm(g1["WKQ"] @ fixed["z_eos"])
    WKQ1 = -gamma * g1["WKQ"]
    _, g2 = retrieval_grad({"WKQ": WKQ1, "WV": WV1}, fixed, tokens, pos, labels, chunk)
    return {"WKQ": WKQ1, "WV": WV1 - gamma * g2["WV"]}


def three_step_limit(fixed, tokens, pos, labels, query_norm=None, gamma_eta=None):
    """three_step as eta -> 0 (attention only; MODEL.md 3): the query WKQ1 z_eos is -gamma
    eta |z_eos|^2 dw: give gamma_eta (eta, gamma fixed), or its norm q; WV2 up to scale."""
    if (gamma_eta is None) == (query_norm is None):
        raise ValueError("give exactly one of gamma_eta and query_norm")
    G0 = rc.label_gradient(fixed, tokens, pos, labels, np.full(tokens.shape, 1 / tokens.shape[1]))
    dw = rc.query_gradient(fixed, tokens, pos, labels, G0)         # step 2's direction
    z_eos = fixed["z_eos"].astype(float)
    if gamma_eta is None:
        w = -query_norm * dw / np.linalg.norm(dw)
    else:
        w = -gamma_eta * (z_eos @ z_eos) * dw
    WKQ1 = np.outer(w, z_eos) / (z_eos @ z_eos)                    # WKQ1 z_eos = w
    a = rc.retrieval_attention(fixed, w, tokens, pos)             # float64, as w is
    G2 = rc.label_gradient(fixed, tokens, pos, labels, a)          # step 3
    return {"WKQ": WKQ1.astype(fixed["E"].dtype), "WV": -G2.astype(fixed["E"].dtype)}


def three_step_small_eta(fixed, tokens, pos, labels, query_norm=None, gamma_eta=None,
                         eta=1e-6):
    """three_step at eta = 1e-6, gamma = gamma_eta / eta: the eta -> 0 limit's argmax."""
    gamma = None if gamma_eta is None else gamma_eta / eta
    return three_step(fixed, tokens, pos, labels, eta, gamma, query_norm)


def retrieval_adam(fixed, tokens, pos, labels, steps, lr):
    """Longer training of the same model from zero: full-batch Adam on the N samples."""
    params = zero_params(fixed)
    state = adam_init(params)
    for _ in range(steps):
        logits, cache = rc.retrieval_forward(params, fixed, (tokens, pos))    # (N, V)
        _, dlogits = rc.cross_entropy(logits, labels)
        adam_step(params, rc.retrieval_backward(dlogits, cache), state, lr)
    return params


def gradinfo_decoder(fixed, L):
    """[ours] The first gradient's token-by-label statistic (MODEL.md 3): G = grad_WV at zero
    -> C = (E~^T)^+ (-G) Uc^+ (V, V), E~ = E + z_trig / L, Uc = U - u_bar."""
    left = np.linalg.pinv((fixed["E"] + fixed["z_trig"] / L).T)        # (V, d)
    right = np.linalg.pinv(fixed["U"] - fixed["U"].mean(0))            # (d, V)
    return lambda G: left @ -G @ right


def assignment(score):
    """[ours] The permutation col (V,) that maximises sum_x score[x, col[x]]: one label per
    token.  The Hungarian method, adding one row at a time along a shortest augmenting
    path (O(V^3)); u, v are the dual potentials, index 0 a free dummy column."""
    cost = -np.asarray(score, float)
    n = len(cost)
    u, v = np.zeros(n + 1), np.zeros(n + 1)
    row_of = np.zeros(n + 1, int)                 # the row (1-based) matched to each column
    came_from = np.zeros(n + 1, int)              # the previous column on the path
    for i in range(1, n + 1):
        row_of[0], j = i, 0
        dist, done = np.full(n + 1, np.inf), np.zeros(n + 1, bool)
        while row_of[j]:                          # until the path reaches a free column
            done[j] = True
            r = row_of[j]
            reduced = cost[r - 1] - u[r] - v[1:]                # (n,) from row r
            closer = ~done[1:] & (reduced < dist[1:])
            dist[1:][closer] = reduced[closer]
            came_from[1:][closer] = j
            nearest = np.where(done[1:], np.inf, dist[1:])
            j_next = int(np.argmin(nearest)) + 1
            step = nearest[j_next - 1]
            u[row_of[done]] += step               # keep every reduced cost >= 0
            v[done] -= step
            dist[1:][~done[1:]] -= step
            j = j_next
        while j:                                  # flip the path's matches
            row_of[j] = row_of[came_from[j]]
            j = came_from[j]
    col = np.empty(n, int)
    col[row_of[1:] - 1] = np.arange(n)
    return col
