"""recall.py -- embeddings, tasks, models (forward + hand-derived backward) and the loss.

Every model is a pair of pure functions
    logits, cache = <name>_forward(params, fixed, inputs)
    grads         = <name>_backward(dlogits, cache)
`params` are trained, `fixed` are frozen (embeddings); `grads` has exactly the keys of
params; `cache` is a dict, read by name.  The backward walks the forward in reverse,
quoting each line it differentiates.  A faster form follows the textbook one, tested
equal.  `# exercise N` marks a homework solution (homework.py).

Dimension letters (the papers' symbols):
    B  batch size                 N  number of samples / stored items
    T  prompt length (task A)     L  sequence length (task B)
    d  embedding dimension        m  MLP width
    H  attention heads            dh head dimension
    S  subjects   R  relations    D  answers per relation
    V  vocabulary (task B)        M  number of output classes"""
import math

import numpy as np


# ------------------------------------------------------------------ embeddings and loss

def embeddings(n, d, rng, kind="gaussian"):
    """(n, d) embeddings: "gaussian" entries N(0, 1/d) (norms ~1, overlaps ~1/sqrt(d)),
    "sphere" rows uniform on the unit sphere, "onehot" the rows of the identity."""
    n, d = _check_int("n", n), _check_int("d", d)
    if kind == "gaussian":
        return rng.standard_normal((n, d)) / np.sqrt(d)
    if kind == "sphere":
        G = rng.standard_normal((n, d))
        return G / np.linalg.norm(G, axis=1, keepdims=True)
    if kind == "onehot":
        if d < n:
            raise ValueError(f'kind="onehot" needs d >= n, got d={d} < n={n}')
        return np.eye(n, d)
    raise ValueError(f'kind must be "gaussian", "sphere" or "onehot", got {kind!r}')


def softmax(s, axis=-1, scale=1.0):
    """scale * softmax(s) along `axis`: e = exp(s - max) (shifted by the max, so that no
    exp overflows), divided by sum(e), or times scale / sum(e).  The project's one softmax."""
    e = s - s.max(axis=axis, keepdims=True)
    np.exp(e, out=e)
    total = e.sum(axis=axis, keepdims=True)
    if scale == 1.0:
        e /= total
    else:
        e *= scale / total                     # cross_entropy's softmax / B, in one pass
    return e


def cross_entropy(logits, y):
    """Mean softmax cross-entropy of logits (B, M) with labels y (B,) in [0, M):
    (loss, dlogits), where dlogits = (softmax(logits) - onehot(y)) / B."""
    logits = np.asarray(logits)
    if logits.ndim != 2 or np.shape(y) != logits.shape[:1]:
        raise ValueError(f"need logits (B, M) and labels y (B,), got {logits.shape}, "
                         f"{np.shape(y)}")
    y = _check_tokens("y", y, logits.shape[1], 1)
    B, rows = len(y), np.arange(len(y))  # exercise 1
    dlogits = softmax(logits, axis=1, scale=1.0 / B)       # (B, M)  softmax / B
    p_y = B * dlogits[rows, y]                             # (B,)    softmax at the labels
    if p_y.min() > 0:
        loss = -float(np.mean(np.log(p_y)))
    else:                       # a p_y below the smallest float: -log p_y by log-sum-exp
        z = logits - logits.max(axis=1, keepdims=True)
        loss = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[rows, y]))
    dlogits[rows, y] -= 1.0 / B
    return loss, dlogits


def accuracy(logits, y):
    """Fraction of rows whose argmax is the label."""
    return float((np.argmax(logits, axis=1) == y).mean())


# ------------------------------------------------------------------ tasks (A, B)

def make_facts(S, R, D, rng, T=32, structured=False):
    """Paper A's factual-recall task (MODEL.md A3): subjects [0, S), relations [S, S+R),
    S+R noise tokens, EOS; D R answers, D per relation; the fact table a*(s, r) uniform
    over r's answers, or, if structured, s D // S + D r."""
    S, R, D = _check_int("S", S), _check_int("R", R), _check_int("D", D)
    T = _check_int("T", T, 3)                          # subject, relation, EOS
    n_noise = S + R
    if structured:
        table = (np.arange(S)[:, None] * D // S) + D * np.arange(R)[None, :]
    else:
        table = rng.integers(0, D, size=(S, R)) + D * np.arange(R)[None, :]
    return {"S": S, "R": R, "D": D, "T": T, "n_noise": n_noise,
            "vocab": S + R + n_noise + 1, "eos": S + R + n_noise, "n_answers": D * R,
            "table": table}


def sample_facts(task, B, rng, subjects=None, relations=None):
    """B prompts, tokens (B, T), and their answers (B,): noise, the subject and the relation
    at two uniform positions in [0, T-2], EOS at T-1; subjects, relations uniform if None."""
    B = _check_int("B", B)
    S, R, T, n_noise = task["S"], task["R"], task["T"], task["n_noise"]
    s = rng.integers(0, S, B) if subjects is None else _check_tokens("subjects", subjects, S, 1)
    r = rng.integers(0, R, B) if relations is None else _check_tokens("relations", relations, R, 1)
    if len(s) != B or len(r) != B:
        raise ValueError(f"subjects and relations must have length B={B}")
    tokens = rng.integers(S + R, S + R + n_noise, size=(B, T))      # (B, T) noise
    pos_s = rng.integers(0, T - 1, B)                                 # uniform in [0, T-2]
    pos_r = rng.integers(0, T - 2, B)                                 # then skip pos_s
    pos_r = pos_r + (pos_r >= pos_s)
    rows = np.arange(B)
    tokens[rows, pos_s] = s
    tokens[rows, pos_r] = S + r
    tokens[:, T - 1] = task["eos"]
    return tokens, task["table"][s, r]


def make_retrieval(V, d, L, rng, m=None, kind="gaussian"):
    """Paper B's token retrieval and its model's fixed arrays (MODEL.md 3): E, U (V, d),
    z_trig, z_eos (d,), W_mlp (d, m) if m is given, and perm, the target permutation."""
    V, d, L = _check_int("V", V, 2), _check_int("d", d), _check_int("L", L, 2)
    E, U = embeddings(V, d, rng, kind), embeddings(V, d, rng, kind)      # E first, then U
    if kind == "onehot" and d >= V + 2:
        z_trig, z_eos = np.eye(d)[V], np.eye(d)[V + 1]
    else:
        z_trig, z_eos = rng.standard_normal((2, d)) / np.sqrt(d)
    task = {"V": V, "d": d, "L": L, "kind": kind, "E": E, "U": U,
            "z_trig": z_trig, "z_eos": z_eos, "perm": rng.permutation(V)}
    if m is not None:
        m = _check_int("m", m)
        task["W_mlp"] = rng.standard_normal((d, m)) / np.sqrt(d)
    return task


def sample_retrieval(task, N, rng, Lmax=None):
    """N sequences: tokens (N, L) uniform on [V], the marked position pos (N,) uniform,
    labels perm[tokens[n, pos[n]]]; paired over L <= Lmax; a prefix is a smaller draw."""
    N, V, L = _check_int("N", N), task["V"], task["L"]
    Lmax = Lmax or L
    if Lmax < L:
        raise ValueError(f"Lmax = {Lmax} is below L = {L}: paired draws need Lmax >= L")
    x, u = rng.integers(0, V, N), rng.random(N)                   # informative tokens (N,)
    tokens = rng.integers(0, V, (N, Lmax))[:, :L].copy()          # (N, L) distractors
    pos = (u * L).astype(int)                                     # (N,) uniform on [L]
    tokens[np.arange(N), pos] = x
    return tokens, pos, task["perm"][x]


def retrieval_fixed(task, dtype=np.float64):
    """The frozen arrays of the retrieval model in dtype, as its `fixed` argument."""
    return {k: task[k].astype(dtype) for k in ("E", "U", "z_trig", "z_eos", "W_mlp") if k in task}


# ------------------------------------------------------------------ linear, MLP memory

def linear_memory_forward(params, fixed, x):
    """logits = E[x] W U^T.   W (d, d); E (n, d); U (M, d); x (B,) ints -> logits (B, M)."""
    E, U = fixed["E"], fixed["U"]
    _check_params("linear_memory", params, {"W": (E.shape[1], E.shape[1])})
    x = _check_tokens("x", x, len(E), 1)
    X = E[x]                                   # (B, d)
    Z = X @ params["W"]                        # (B, d)
    logits = Z @ U.T                           # (B, M)
    return logits, {"X": X, "U": U}


def linear_memory_backward(dlogits, cache):  # exercise 2
    dZ = dlogits @ cache["U"]                  # logits = Z U^T        (B, d)
    dW = cache["X"].T @ dZ                     # Z = X W               (d, d)
    return {"W": dW}


def mlp_memory_forward(params, fixed, x):
    """logits = relu(E[x] W1 + b1) W2 U^T.   W1 (d, m), b1 (m,), W2 (m, d)."""
    E, U = fixed["E"], fixed["U"]
    d = E.shape[1]
    m = np.size(params.get("b1"))              # b1 (m,); a wrong b1 is named below
    _check_params("mlp_memory", params, {"W1": (d, m), "b1": (m,), "W2": (m, d)})
    x = _check_tokens("x", x, len(E), 1)
    X = E[x]                                   # (B, d)
    P = X @ params["W1"] + params["b1"]        # (B, m) pre-activation
    A = np.maximum(P, 0.0)                     # (B, m)
    Z = A @ params["W2"]                       # (B, d)
    logits = Z @ U.T                           # (B, M)
    return logits, {"X": X, "P": P, "A": A, "U": U, "W2": params["W2"]}


def mlp_memory_backward(dlogits, cache):  # exercise 3
    dZ = dlogits @ cache["U"]                  # logits = Z U^T
    dW2 = cache["A"].T @ dZ                    # Z = A W2
    dA = dZ @ cache["W2"].T
    dP = dA * (cache["P"] > 0)                 # A = relu(P)
    dW1, db1 = cache["X"].T @ dP, dP.sum(0)    # P = X W1 + b1
    return {"W1": dW1, "b1": db1, "W2": dW2}


# ------------------------------------------------------------------ transformer (paper A)

def init_transformer(d, H, dh, m, rng):
    """The authors' init: Q, K, V std 1/sqrt(dh), O 1/sqrt(d), W1, W2 1/sqrt(fan_in)."""
    d, H, dh, m = (_check_int(k, v) for k, v in (("d", d), ("H", H), ("dh", dh), ("m", m)))
    n = rng.standard_normal
    return {"WQ": n((H, d, dh)) / math.sqrt(dh), "WK": n((H, d, dh)) / math.sqrt(dh),
            "WV": n((H, d, dh)) / math.sqrt(dh), "WO": n((H * dh, d)) / np.sqrt(d),
            "W1": n((d, m)) / np.sqrt(d), "b1": np.zeros(m), "W2": n((m, d)) / np.sqrt(m)}


def transformer_textbook_forward(params, fixed, tokens):
    """Paper A's one-layer transformer as the paper writes it: per head, the last position
    queries all T positions; then an MLP with residual (EOS is not added back)."""
    tokens, H, dh = _transformer_inputs(params, fixed, tokens)
    X = fixed["E"][tokens]                                # (B, T, d)      rows x_t
    k = X[:, None] @ params["WK"]                         # (B, H, T, dh)  k_t = x_t WK_h
    v = X[:, None] @ params["WV"]                         # (B, H, T, dh)  v_t = x_t WV_h
    q = (X[:, -1] @ params["WQ"]).transpose(1, 0, 2)      # (B, H, dh)     q = x_T WQ_h
    s = np.einsum("bhtk,bhk->bht", k, q) / math.sqrt(dh)  # (B, H, T)  s_t = k_t.q/sqrt(dh)
    a = softmax(s, axis=-1)                               # (B, H, T)      a = softmax(s)
    o = np.einsum("bht,bhtk->bhk", a, v)                  # (B, H, dh) o_h = sum_t a_t v_t
    oc = o.reshape(len(X), H * dh)                        # (B, H dh)      concat_h(o_h)
    x = oc @ params["WO"]                                 # (B, d)
    P = x @ params["W1"] + params["b1"]                   # (B, m)
    A = np.maximum(P, 0.0)                                # (B, m)
    y = x + A @ params["W2"]                              # (B, d)
    logits = y @ fixed["U"].T                             # (B, n_answers)
    cache = {"X": X, "k": k, "v": v, "q": q, "a": a, "oc": oc, "x": x, "P": P, "A": A,
             "U": fixed["U"], "params": params}
    return logits, cache


def transformer_textbook_backward(dlogits, cache):  # exercise 4
    p = cache["params"]
    a, k, q = cache["a"], cache["k"], cache["q"]
    B, H, T, dh = k.shape
    dy = dlogits @ cache["U"]                             # logits = y U^T
    dW2 = cache["A"].T @ dy                               # y = x + A W2
    dA = dy @ p["W2"].T
    dP = dA * (cache["P"] > 0)                            # A = relu(P)
    dW1, db1 = cache["x"].T @ dP, dP.sum(0)               # P = x W1 + b1
    dx = dy + dP @ p["W1"].T                              #   (x feeds y twice)
    dWO = cache["oc"].T @ dx                              # x = oc WO
    do = (dx @ p["WO"].T).reshape(B, H, dh)               # oc = concat_h(o_h)
    da = np.einsum("bhk,bhtk->bht", do, cache["v"])       # o_h = sum_t a_t v_t
    dv = np.einsum("bht,bhk->bhtk", a, do)
    ds = a * (da - (a * da).sum(-1, keepdims=True))       # a = softmax(s)
    dk = np.einsum("bht,bhk->bhtk", ds, q) / math.sqrt(dh)   # s_t = k_t.q/sqrt(dh)
    dq = np.einsum("bht,bhtk->bhk", ds, k) / math.sqrt(dh)
    X = cache["X"]
    dWQ = X[:, -1].T @ dq.transpose(1, 0, 2)              # q = x_T WQ_h
    dWV = np.einsum("btd,bhtk->hdk", X, dv, optimize=True)   # v_t = x_t WV_h
    dWK = np.einsum("btd,bhtk->hdk", X, dk, optimize=True)   # k_t = x_t WK_h
    return {"WQ": dWQ, "WK": dWK, "WV": dWV, "WO": dWO, "W1": dW1, "b1": db1, "W2": dW2}


def token_counts(tokens, V, dtype, weights=None):
    """n[b, v] (B, V): the count of token v in row b of tokens (B, T) (or its weights' sum)."""
    flat = (np.arange(len(tokens))[:, None] * V + tokens).ravel()
    n = np.bincount(flat, weights, minlength=len(tokens) * V)
    return n.reshape(-1, V).astype(dtype)


def transformer_forward(params, fixed, tokens):
    """transformer_textbook_forward per vocabulary entry v and query token (tested equal;
    MODEL.md 1).  With n[b, v] the count of v in row b, Ev = E WV_h with a 1 appended,
      e_hv = exp(E_v . WK_h q_h / sqrt(dh) - c_h)   (any shift c_h cancels in the softmax)
      [sum_t e_t v_t, sum_t e_t] = n (e Ev),        o_h = sum_t e_t v_t / sum_t e_t."""
    tokens, H, dh = _transformer_inputs(params, fixed, tokens)     # (B, T)
    E, U = fixed["E"], fixed["U"]
    B, V = len(tokens), len(E)
    u, inv = np.unique(tokens[:, -1], return_inverse=True)         # distinct query tokens
    q = np.matmul(E[u], params["WQ"]) / math.sqrt(dh)   # (H, u, dh)  x_T WQ_h / sqrt(dh)
    scores = np.matmul(q, params["WK"].transpose(0, 2, 1)) @ E.T   # (H, u, V) E_v WK_h q
    e = np.exp(scores - scores.max(2, keepdims=True)).transpose(1, 2, 0)   # (u, V, H) e_hv
    ones = np.ones((H, V, 1), E.dtype)
    Ev = np.concatenate([np.matmul(E, params["WV"]), ones], axis=2)   # (H, V, dh + 1)
    W = (e[..., None] * Ev.transpose(1, 0, 2)).reshape(len(u), V, -1)   # (u, V, H(dh+1))
    n = token_counts(tokens, V, E.dtype)                           # (B, V)
    rows = [inv == g for g in range(len(u))] if len(u) > 1 else [slice(None)]  # of u[g]
    pool = np.empty((B, H, dh + 1), E.dtype)                       # sum_t e_t [v_t, 1]
    for g, r in enumerate(rows):
        pool[r] = (n[r] @ W[g]).reshape(-1, H, dh + 1)
    if pool[:, :, dh].min() < 1e-30:     # a row's scores all ~70 below the best entry's:
        return transformer_textbook_forward(params, fixed, tokens)   # exp underflows
    oc = (pool[:, :, :dh] / pool[:, :, dh:]).reshape(B, H * dh)    # (B, H dh) concat_h(o_h)
    x = oc @ params["WO"]                                          # (B, d)
    P = x @ params["W1"] + params["b1"]                            # (B, m)
    A = np.maximum(P, 0.0)                                         # (B, m)
    y = x + A @ params["W2"]                                       # (B, d)
    logits = y @ U.T                                               # (B, n_answers)
    cache = {"counts": n, "rows": rows, "E": E, "xu": E[u], "q": q, "e": e, "Ev": Ev,
             "pool": pool, "oc": oc, "x": x, "P": P, "A": A, "U": U, "params": params}
    return logits, cache


def transformer_backward(dlogits, cache):
    if "counts" not in cache:           # the forward fell back to the textbook form
        return transformer_textbook_backward(dlogits, cache)
    p, pool, q, e, rows = cache["params"], cache["pool"], cache["q"], cache["e"], cache["rows"]
    B, H, dh = len(pool), len(q), pool.shape[2] - 1
    dy = dlogits @ cache["U"]                                      # logits = y U^T
    dW2 = cache["A"].T @ dy                                        # y = x + A W2
    dP = (dy @ p["W2"].T) * (cache["P"] > 0)                       # A = relu(P)
    dW1, db1 = cache["x"].T @ dP, dP.sum(0)                        # P = x W1 + b1
    dx = dy + dP @ p["W1"].T
    dWO = cache["oc"].T @ dx                                       # x = oc WO
    do = (dx @ p["WO"].T).reshape(B, H, dh)                        # o = pool_v / pool_1
    do_o = np.einsum("bhk,bhk->bh", do, cache["oc"].reshape(B, H, dh))
    dpool = np.concatenate([do, -do_o[..., None]], axis=2) / pool[:, :, dh:]  # (B,H,dh+1)
    n = cache["counts"]
    dW = []                                                        # pool = n W
    for r in rows:
        dW.append(n[r].T @ dpool[r].reshape(-1, H * (dh + 1)))
    E = cache["E"]
    dW = np.stack(dW).reshape(len(rows), len(E), H, dh + 1)        # (u, V, H, dh + 1)
    dscores = e * np.einsum("uvhk,hvk->uvh", dW, cache["Ev"])      # W = e Ev, e = exp(s-c)
    dEv = np.einsum("uvh,uvhk->hvk", e, dW)[..., :dh]
    dWV = np.matmul(E.T, dEv)                                      # Ev = E WV_h
    dqk = np.matmul(dscores.transpose(2, 0, 1), E)                 # s = qk E^T  (H, u, d)
    dWK = np.matmul(dqk.transpose(0, 2, 1), q)                     # qk = q WK_h^T
    dq = np.matmul(dqk, p["WK"]) / math.sqrt(dh)                   # (H, u, dh)
    dWQ = np.matmul(cache["xu"].T, dq)                             # q = xu WQ_h / sqrt(dh)
    return {"WQ": dWQ, "WK": dWK, "WV": dWV, "WO": dWO, "W1": dW1, "b1": db1, "W2": dW2}


# ------------------------------------------------------------------ linear attention (A)

def linear_attention_textbook_forward(params, fixed, tokens):
    """Paper A's Fig. 5 model (A5): logits = c WV, c = sum_t (x_T A x_t^T) x_t over all T."""
    X = fixed["E"][_linear_attention_inputs(params, fixed, tokens)]   # (B, T, d)
    u = X[:, -1] @ params["A"]                   # (B, d)     x_T A
    s = np.einsum("btd,bd->bt", X, u)            # (B, T)     x_T A x_t^T
    c = np.einsum("bt,btd->bd", s, X)            # (B, d)
    logits = c @ params["WV"]                    # (B, n_answers)
    return logits, {"X": X, "s": s, "c": c, "params": params}


def linear_attention_textbook_backward(dlogits, cache):  # exercise 5
    X = cache["X"]
    dWV = cache["c"].T @ dlogits                 # logits = c WV
    dc = dlogits @ cache["params"]["WV"].T
    ds = np.einsum("bd,btd->bt", dc, X)          # c = sum_t s_t x_t
    du = np.einsum("bt,btd->bd", ds, X)          # s_t = u . x_t
    dA = X[:, -1].T @ du                         # u = x_T A
    return {"A": dA, "WV": dWV}


def linear_attention_forward(params, fixed, tokens):
    """linear_attention_textbook_forward per vocabulary entry v (tested equal): with n[b, v]
    the count of v in row b, s_bv = x_T A e_v^T (a row of E A E^T (V, V)), w = n * s,
      c = sum_t (x_T A x_t^T) x_t = sum_v n[b, v] s_bv e_v = w E,
      logits = c WV = w (E WV)."""
    tokens = _linear_attention_inputs(params, fixed, tokens)
    E = fixed["E"]
    n = token_counts(tokens, len(E), E.dtype)                  # (B, V)
    w = n * (E @ params["A"] @ E.T)[tokens[:, -1]]             # (B, V)  n[b, v] s_bv
    logits = w @ (E @ params["WV"])
    return logits, {"counts": n, "w": w, "xT": E[tokens[:, -1]], "E": E, "params": params}


def linear_attention_backward(dlogits, cache):
    E, WV = cache["E"], cache["params"]["WV"]
    ds = cache["counts"] * (dlogits @ (E @ WV).T)              # logits = w (E WV), w = n s
    dA = (cache["xT"].T @ ds) @ E                              # s = x_T A E^T
    dWV = E.T @ (cache["w"].T @ dlogits)                       # c = w E, logits = c WV
    return {"A": dA, "WV": dWV}


# ------------------------------------------------------------------ retrieval model (B)

GATHER = 16    # the fast form gathers E[x] when V > GATHER L (measured faster), else C E


def retrieval_textbook_forward(params, fixed, inputs):
    """Paper B's one-layer transformer on token retrieval, as the paper writes it:
        h_i = E[x_i] + 1{i = pos} z_trig,   s_i = h_i WKQ z_eos^T,   a = softmax_i(s),
        phi = sum_i a_i h_i,   logits = g WV U^T   with
        g = phi                       (attention only, WV (d, d)), or
        g = relu(phi W_mlp) - c       (fixed random MLP of width m, WV (m, d)),
    c = fixed["mlp_centre"] (m,) if given, else 0.  inputs = (tokens (N, L), pos (N,))."""
    tokens, pos = _retrieval_inputs(params, fixed, inputs)
    h = fixed["E"][tokens]                                   # (N, L, d)  rows h_i
    h[np.arange(len(pos)), pos] += fixed["z_trig"]
    s = h @ (params["WKQ"] @ fixed["z_eos"])                 # (N, L)  s_i = h_i WKQ z_eos^T
    a = softmax(s, axis=1)                                   # (N, L)
    phi = np.einsum("nl,nld->nd", a, h)                      # (N, d)  phi = sum_i a_i h_i
    g, P = _features(phi, fixed)                             # (N, d) or (N, m)
    logits = g @ params["WV"] @ fixed["U"].T                 # (N, V)
    return logits, {"h": h, "a": a, "P": P, "g": g, "params": params, "fixed": fixed}


def retrieval_textbook_backward(dlogits, cache):  # exercise 6
    h, a, fixed, WV = cache["h"], cache["a"], cache["fixed"], cache["params"]["WV"]
    dZ = dlogits @ fixed["U"]                                # logits = Z U^T,  Z = g WV
    dWV = cache["g"].T @ dZ
    dg = dZ @ WV.T
    dphi = dg                                                # g = phi, or
    if cache["P"] is not None:                               # g = relu(phi W_mlp) - c
        dphi = (dg * (cache["P"] > 0)) @ fixed["W_mlp"].T
    da = np.einsum("nld,nd->nl", h, dphi)                    # phi = sum_i a_i h_i
    ds = a * (da - (a * da).sum(1, keepdims=True))           # a = softmax(s)
    dw = np.einsum("nl,nld->d", ds, h)                       # s_i = h_i . w, w = WKQ z_eos
    return {"WKQ": np.outer(dw, fixed["z_eos"]), "WV": dWV}


def _features(phi, fixed):
    """The value map's input g, and the MLP's pre-activation P (None without an MLP)."""
    if "W_mlp" not in fixed:
        return phi, None
    P = phi @ fixed["W_mlp"]                                 # (N, m)
    return np.maximum(P, 0.0) - fixed.get("mlp_centre", 0.0), P


def retrieval_attention(fixed, w, tokens, pos):
    """a = softmax(s) (N, L) for the query w = WKQ z_eos (d,) shared by every sample:
    s_i = h_i . w = (E w)[x_i] + 1{i = pos} z_trig . w   (E[x] w == (E w)[x])."""
    s = (fixed["E"] @ w)[tokens]                             # (N, L)
    s[np.arange(len(pos)), pos] += fixed["z_trig"] @ w
    return softmax(s, axis=1)


def retrieval_forward(params, fixed, inputs):
    """retrieval_textbook_forward without the rows h (tested equal; MODEL.md 1)."""
    tokens, pos = _retrieval_inputs(params, fixed, inputs)
    E, z_trig, rows = fixed["E"], fixed["z_trig"], np.arange(len(pos))
    w = params["WKQ"] @ fixed["z_eos"]                       # (d,)  the learned query
    a = retrieval_attention(fixed, w, tokens, pos)           # (N, L)
    if tokens.shape[1] * GATHER < len(E):                    # short rows: gather, N L d work
        phi = np.einsum("nl,nld->nd", a, E[tokens])
    else:                                                    # long rows: C E, N V d work
        phi = token_counts(tokens, len(E), E.dtype, a.ravel()) @ E   # C[n, v]: a on v
    phi += np.outer(a[rows, pos], z_trig)                    # (N, d)
    g, P = _features(phi, fixed)
    Z = g @ params["WV"]                                     # (N, d)
    logits = Z @ fixed["U"].T                                # (N, V)
    cache = {"tokens": tokens, "pos": pos, "a": a, "P": P, "g": g, "params": params,
             "fixed": fixed}
    return logits, cache


def retrieval_backward(dlogits, cache):
    tokens, pos, a, fixed = cache["tokens"], cache["pos"], cache["a"], cache["fixed"]
    WV = cache["params"]["WV"]
    E, z_trig, rows = fixed["E"], fixed["z_trig"], np.arange(len(pos))
    dZ = dlogits @ fixed["U"]                                # logits = Z U^T,  Z = g WV
    dWV = cache["g"].T @ dZ
    if not WV.any():                                         # WV = 0: nothing reaches WKQ
        return {"WKQ": np.zeros_like(cache["params"]["WKQ"]), "WV": dWV}
    dg = dZ @ WV.T                                           # (N, d) or (N, m)
    dphi = dg                                                # g = phi, or
    if cache["P"] is not None:                               # g = relu(phi W_mlp) - c
        dphi = (dg * (cache["P"] > 0)) @ fixed["W_mlp"].T
    if tokens.shape[1] * GATHER < len(E):                    # phi = sum_i a_i h_i:
        da = np.einsum("nld,nd->nl", E[tokens], dphi)        #   e_{x_i}.dphi, gathered
    else:
        da = (dphi @ E.T)[rows[:, None], tokens]             #   or via (N, V), as C
    da[rows, pos] += dphi @ z_trig
    ds = a * (da - (a * da).sum(1, keepdims=True))           # a = softmax(s)
    # s_i = h_i . w  =>  dw = sum_{n,i} ds_ni h_ni, accumulated per vocabulary entry
    dEw = np.bincount(tokens.ravel(), weights=ds.ravel(), minlength=len(E)).astype(E.dtype)
    dw = E.T @ dEw + ds[rows, pos].sum() * z_trig            # (d,)
    return {"WKQ": np.outer(dw, fixed["z_eos"]), "WV": dWV}  # w = WKQ z_eos


# ------------------------------------------------------------------ paper B's steps, eta -> 0
# While WV = O(eta) the softmax over labels is 1/V, so the loss reaches Z = phi WV as
# dZ_n = -(u_{y_n} - u_bar) / N, a function of the label alone (MODEL.md 3).

def label_gradient(fixed, tokens, pos, labels, a):
    """grad_WV (float64) at attention a (N, L) while the softmax over labels is 1/V:
    -(E^T C + z_trig b^T)(U - u_bar) / N, C[v, y] the attention on token v summed over
    the rows labelled y, b[y] that on the marked position (steps 1 and 3)."""
    if "W_mlp" in fixed:
        raise ValueError("label_gradient: attention only (an MLP's features are not linear in C)")
    E, U, z = (fixed[k].astype(float) for k in ("E", "U", "z_trig"))
    V, rows = len(E), np.arange(len(labels))
    flat = (tokens * V + labels[:, None]).ravel()
    C = np.bincount(flat, a.ravel(), V * V).reshape(V, V)           # (V, V)
    b = np.bincount(labels, a[rows, pos], V)                        # (V,)
    return -(E.T @ C + np.outer(z, b)) @ (U - U.mean(0)) / len(a)


def query_gradient(fixed, tokens, pos, labels, G0):
    """dw (d,): the gradient of the query w = WKQ z_eos at WKQ = 0, WV = -G0 (step 2 is
    -gamma eta dw z_eos^T): retrieval_backward's, with h_i . dphi_n from the table E dphi^T."""
    E, U, z = (fixed[k].astype(float) for k in ("E", "U", "z_trig"))
    (N, L), rows = tokens.shape, np.arange(len(labels))
    dphi = (U - U.mean(0)) @ G0.T / N       # (V, d): dphi_n = dZ_n (-G0)^T, by label
    da = (E @ dphi.T)[tokens, labels[:, None]]                      # (N, L) h_ni . dphi_n
    da[rows, pos] += (dphi @ z)[labels]
    ds = (da - da.mean(1, keepdims=True)) / L                       # softmax backward, 1/L
    dEw = np.bincount(tokens.ravel(), ds.ravel(), len(E))
    return E.T @ dEw + ds[rows, pos].sum() * z                      # s_i = h_i . w


# ------------------------------------------------------------------ input checks

def _check_int(name, value, lo=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value}")
    return int(value)


def _check_tokens(name, x, n_vocab, ndim):
    x = np.asarray(x)
    if x.ndim != ndim or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{name} must be a {ndim}-d integer array, got {x.shape} {x.dtype}")
    if x.size and (x.min() < 0 or x.max() >= n_vocab):
        raise ValueError(f"{name} has a token id outside [0, {n_vocab}): {x.min()}..{x.max()}")
    return x


def _check_params(name, params, shapes):
    if set(params) != set(shapes):
        raise ValueError(f"{name} params must have keys {sorted(shapes)}, got {sorted(params)}")
    for k, shape in shapes.items():
        if np.shape(params[k]) != shape:
            raise ValueError(f"{name} params[{k!r}] must be {shape}, got {np.shape(params[k])}")


def _transformer_inputs(params, fixed, tokens):
    """Check the transformer's arguments; return the tokens (B, T), H and dh."""
    E, WQ = fixed["E"], params.get("WQ")
    d = E.shape[1]
    if WQ is None or np.ndim(WQ) != 3:
        raise ValueError("transformer params['WQ'] must be an (H, d, dh) array")
    H, _, dh = WQ.shape
    m = np.size(params.get("b1"))                  # b1 (m,); a wrong b1 is named below
    shapes = {"WQ": (H, d, dh), "WK": (H, d, dh), "WV": (H, d, dh), "WO": (H * dh, d),
              "W1": (d, m), "b1": (m,), "W2": (m, d)}
    _check_params("transformer", params, shapes)
    return _check_tokens("tokens", tokens, len(E), 2), H, dh


def _linear_attention_inputs(params, fixed, tokens):
    """Check the linear attention's arguments; return the tokens (B, T)."""
    E, WV = fixed["E"], params.get("WV")
    if WV is None or np.ndim(WV) != 2:
        raise ValueError("linear_attention params['WV'] must be a (d, n_answers) array")
    d = E.shape[1]
    _check_params("linear_attention", params, {"A": (d, d), "WV": (d, WV.shape[1])})
    return _check_tokens("tokens", tokens, len(E), 2)


def _retrieval_inputs(params, fixed, inputs):
    """Check the retrieval model's arguments; return tokens (N, L) and pos (N,)."""
    d = fixed["E"].shape[1]
    vdim = fixed.get("W_mlp", fixed["E"]).shape[1]           # m with an MLP, else d
    _check_params("retrieval", params, {"WKQ": (d, d), "WV": (vdim, d)})
    tokens = _check_tokens("tokens", inputs[0], len(fixed["E"]), 2)
    pos = _check_tokens("pos", inputs[1], tokens.shape[1], 1)
    if len(pos) != len(tokens):
        raise ValueError(f"pos has length {len(pos)}, tokens has {len(tokens)} rows")
    return tokens, pos
