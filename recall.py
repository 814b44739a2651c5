"""recall.py -- embeddings, tasks, models (forward + hand-derived backward) and the loss.

Every model (paper A: associative memories, factual recall by a one-layer transformer, linear
attention; paper B: token retrieval with random embeddings) is a pair of pure functions
    logits, cache = <name>_forward(params, fixed, inputs)
    grads         = <name>_backward(dlogits, cache)
`params` are trained, `fixed` are frozen (embeddings); `grads` has exactly the keys of params.
The backward walks the forward in reverse, quoting each line it differentiates; a faster form
follows the textbook one, tested equal.  `# exercise N` marks a homework solution (homework.py).

Dimension letters (the papers' symbols):
    B  batch size                 N  number of samples / stored items
    T  prompt length (task A)     L  sequence length (task B)
    d  embedding dimension        m  MLP width
    H  attention heads            dh head dimension
    S  subjects   R  relations    D  answers per relation
    V  vocabulary (task B)        M  number of output classes"""
import math

import numpy as np


# ----------------------------------------------------------------------------- embeddings and loss

def embeddings(n, d, rng, kind="gaussian"):
    """n embedding vectors of dimension d, as an (n, d) array: "gaussian" entries N(0, 1/d) (rows
    of norm ~1, overlaps ~1/sqrt(d)), "sphere" rows uniform on the unit sphere, "onehot" e_i."""
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


def softmax(s, axis=-1):
    """Softmax along `axis`, stable for any magnitude (computed in place on a fresh copy)."""
    e = s - s.max(axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def cross_entropy(logits, y):
    """Mean softmax cross-entropy of logits (B, M), labels y (B,) in [0, M): (loss, dlogits),
    dlogits = (softmax(logits) - onehot(y)) / B."""
    logits = np.asarray(logits)
    if logits.ndim != 2 or np.shape(y) != logits.shape[:1]:
        raise ValueError(f"need logits (B, M) and labels y (B,), got {logits.shape}, {np.shape(y)}")
    y = _check_tokens("y", y, logits.shape[1], 1)
    B, rows = len(y), np.arange(len(y))  # exercise 1
    z = logits - logits.max(axis=1, keepdims=True)    # (B, M)  shifted: exp cannot overflow
    zy = z[rows, y]
    np.exp(z, out=z)                                   # z is now exp(z): one exp pass only
    total = z.sum(axis=1)                              # (B,)
    loss = float(np.mean(np.log(total) - zy))
    z *= (1.0 / B) / total[:, None]                    # softmax / B
    z[rows, y] -= 1.0 / B
    return loss, z


def accuracy(logits, y):
    """Fraction of rows whose argmax is the label."""
    return float((np.argmax(logits, axis=1) == y).mean())


# ----------------------------------------------------------------------------- tasks (A, B)

def make_facts(S, R, D, rng, T=32, structured=False):
    """The synthetic factual-recall task of paper A (MODEL.md A3): subjects [0, S), relations
    [S, S+R), S+R noise tokens, EOS 2(S+R); D*R answers, relation r owning D r ... D r + D - 1;
    the fact table a*(s, r), uniform over r's answers or, if structured, s*D // S + D*r."""
    S, R, D = (_check_int(k, v) for k, v in (("S", S), ("R", R), ("D", D)))
    T = _check_int("T", T, 3)                                  # subject, relation, EOS
    n_noise = S + R
    if structured:
        table = (np.arange(S)[:, None] * D // S) + D * np.arange(R)[None, :]
    else:
        table = rng.integers(0, D, size=(S, R)) + D * np.arange(R)[None, :]
    return {"S": S, "R": R, "D": D, "T": T, "n_noise": n_noise, "vocab": S + R + n_noise + 1,
            "eos": S + R + n_noise, "n_answers": D * R, "table": table}


def sample_facts(task, B, rng, subjects=None, relations=None):
    """B prompts, tokens (B, T), and their answers (B,): noise, the subject and the relation at two
    distinct uniform positions in [0, T-2], EOS at T-1; subjects, relations uniform unless given."""
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
    """The token-retrieval task of paper B with the fixed arrays of its model (MODEL.md 3): E, U
    (V, d) (kind as in `embeddings`), the trigger and end-of-sequence vectors z_trig, z_eos (d,),
    W_mlp (d, m) when m is given, and perm: the target permutation pi* of [V]."""
    V, d, L = _check_int("V", V, 2), _check_int("d", d), _check_int("L", L, 2)
    E = embeddings(V, d, rng, kind)
    U = embeddings(V, d, rng, kind)
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
    """N sequences: tokens (N, L) uniform on [V], the informative position pos (N,) uniform on [L],
    labels (N,) = perm[tokens[n, pos[n]]]; paired over L <= Lmax; slice to nest N (MODEL.md 3)."""
    N, V, L = _check_int("N", N), task["V"], task["L"]
    Lmax = L if Lmax is None else Lmax
    if Lmax < L:
        raise ValueError(f"Lmax = {Lmax} is below L = {L}: paired draws need Lmax >= L")
    x, u = rng.integers(0, V, N), rng.random(N)                  # informative tokens (N,)
    tokens = rng.integers(0, V, (N, Lmax))[:, :L].copy()          # (N, L) distractors
    pos = (u * L).astype(int)                                     # (N,) uniform on [L]
    tokens[np.arange(N), pos] = x
    return tokens, pos, task["perm"][x]


def retrieval_fixed(task, dtype=np.float64):
    """The frozen arrays of the retrieval model in dtype, as its `fixed` argument."""
    return {k: task[k].astype(dtype) for k in ("E", "U", "z_trig", "z_eos", "W_mlp") if k in task}


# ----------------------------------------------------------------------------- linear, MLP memory

def linear_memory_forward(params, fixed, x):
    """logits = E[x] W U^T.   W (d, d); E (n, d); U (M, d); x (B,) ints -> logits (B, M)."""
    E, U = fixed["E"], fixed["U"]
    d = E.shape[1]
    _check_params("linear_memory", params, {"W": (d, d)})
    x = _check_tokens("x", x, len(E), 1)
    X = E[x]                                   # (B, d)
    Z = X @ params["W"]                        # (B, d)
    logits = Z @ U.T                           # (B, M)
    return logits, (X, U)


def linear_memory_backward(dlogits, cache):  # exercise 2
    X, U = cache
    dZ = dlogits @ U                           # logits = Z U^T        (B, d)
    return {"W": X.T @ dZ}                     # Z = X W               (d, d)


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
    return logits, (X, P, A, U, params["W2"])


def mlp_memory_backward(dlogits, cache):  # exercise 3
    X, P, A, U, W2 = cache
    dZ = dlogits @ U                           # logits = Z U^T
    dW2 = A.T @ dZ                             # Z = A W2
    dA = dZ @ W2.T
    dP = dA * (P > 0)                          # A = relu(P)
    return {"W1": X.T @ dP, "b1": dP.sum(0), "W2": dW2}   # P = X W1 + b1


# ----------------------------------------------------------------------------- transformer

def init_transformer(d, H, dh, m, rng):
    """The authors' init: Q, K, V std 1/sqrt(dh), O 1/sqrt(d), W1, W2 1/sqrt(fan_in), b1 = 0."""
    d, H, dh, m = (_check_int(k, v) for k, v in (("d", d), ("H", H), ("dh", dh), ("m", m)))
    n = rng.standard_normal
    return {"WQ": n((H, d, dh)) / math.sqrt(dh), "WK": n((H, d, dh)) / math.sqrt(dh),
            "WV": n((H, d, dh)) / math.sqrt(dh), "WO": n((H * dh, d)) / np.sqrt(d),
            "W1": n((d, m)) / np.sqrt(d), "b1": np.zeros(m), "W2": n((m, d)) / np.sqrt(m)}


def _transformer_inputs(params, fixed, tokens):
    """Check the transformer's arguments; return the tokens (B, T), H and dh."""
    E, d = fixed["E"], fixed["E"].shape[1]
    WQ = params.get("WQ")
    if WQ is None or np.ndim(WQ) != 3:
        raise ValueError("transformer params['WQ'] must be an (H, d, dh) array")
    H, _, dh = WQ.shape
    m = np.size(params.get("b1"))                  # b1 (m,); a wrong b1 is named below
    _check_params("transformer", params, {"WQ": (H, d, dh), "WK": (H, d, dh),
                  "WV": (H, d, dh), "WO": (H * dh, d), "W1": (d, m), "b1": (m,), "W2": (m, d)})
    return _check_tokens("tokens", tokens, len(E), 2), H, dh


def transformer_textbook_forward(params, fixed, tokens):
    """Paper A's one-layer transformer as the paper writes it: per head, the last position's query
    attends over all T positions; an MLP with residual (the EOS embedding is not added back)."""
    tokens, H, dh = _transformer_inputs(params, fixed, tokens)
    X = fixed["E"][tokens]                                         # (B, T, d)      rows x_t
    k = X[:, None] @ params["WK"]                                  # (B, H, T, dh)  k_t = x_t WK_h
    v = X[:, None] @ params["WV"]                                  # (B, H, T, dh)  v_t = x_t WV_h
    q = (X[:, -1] @ params["WQ"]).transpose(1, 0, 2)               # (B, H, dh)     q = x_T WQ_h
    s = np.einsum("bhtk,bhk->bht", k, q) / math.sqrt(dh)           # (B, H, T)  s_t = k_t.q/sqrt(dh)
    a = softmax(s, axis=-1)                                        # (B, H, T)      a = softmax(s)
    o = np.einsum("bht,bhtk->bhk", a, v)                           # (B, H, dh)  o_h = sum_t a_t v_t
    oc = o.reshape(len(X), H * dh)                                 # (B, H dh)      concat_h(o_h)
    x = oc @ params["WO"]                                          # (B, d)
    P = x @ params["W1"] + params["b1"]                            # (B, m)
    A = np.maximum(P, 0.0)                                         # (B, m)
    y = x + A @ params["W2"]                                       # (B, d)
    logits = y @ fixed["U"].T                                      # (B, n_answers)
    return logits, (X, k, v, q, a, oc, x, P, A, fixed["U"], params)


def transformer_textbook_backward(dlogits, cache):  # exercise 4
    X, k, v, q, a, oc, x, P, A, U, params = cache
    B, H, T, dh = k.shape
    dy = dlogits @ U                                               # logits = y U^T
    dW2 = A.T @ dy                                                 # y = x + A W2
    dA = dy @ params["W2"].T
    dP = dA * (P > 0)                                              # A = relu(P)
    dW1, db1 = x.T @ dP, dP.sum(0)                                 # P = x W1 + b1
    dx = dy + dP @ params["W1"].T                                  #   (x feeds y twice)
    dWO = oc.T @ dx                                                # x = oc WO
    do = (dx @ params["WO"].T).reshape(B, H, dh)                   # oc = concat_h(o_h)
    da = np.einsum("bhk,bhtk->bht", do, v)                         # o_h = sum_t a_t v_t
    dv = np.einsum("bht,bhk->bhtk", a, do)
    ds = a * (da - (a * da).sum(-1, keepdims=True))                # a = softmax(s)
    dk = np.einsum("bht,bhk->bhtk", ds, q) / math.sqrt(dh)         # s_t = k_t.q/sqrt(dh)
    dq = np.einsum("bht,bhtk->bhk", ds, k) / math.sqrt(dh)
    dWQ = X[:, -1].T @ dq.transpose(1, 0, 2)                       # q = x_T WQ_h
    dWV = np.einsum("btd,bhtk->hdk", X, dv, optimize=True)         # v_t = x_t WV_h
    dWK = np.einsum("btd,bhtk->hdk", X, dk, optimize=True)         # k_t = x_t WK_h
    return {"WQ": dWQ, "WK": dWK, "WV": dWV, "WO": dWO, "W1": dW1, "b1": db1, "W2": dW2}


def _token_counts(tokens, V, dtype, weights=None):
    """n[b, v] (B, V): the count of token v in row b of tokens (B, T), or the sum of its weights."""
    flat = (np.arange(len(tokens))[:, None] * V + tokens).ravel()
    return np.bincount(flat, weights, minlength=len(tokens) * V).reshape(-1, V).astype(dtype)


def transformer_forward(params, fixed, tokens):
    """`transformer_textbook_forward` per vocabulary entry v and query token (tested equal; why:
    MODEL.md 1).  With n[b, v] the count of v in row b and Ev = E WV_h plus a 1 per value,
      e_hv = exp(E_v . WK_h q_h / sqrt(dh) - c_h)   (any shift c_h cancels in the softmax)
      [sum_t e_t v_t, sum_t e_t] = n (e Ev),        o_h = sum_t e_t v_t / sum_t e_t."""
    tokens, H, dh = _transformer_inputs(params, fixed, tokens)     # (B, T)
    E, U, B, V = fixed["E"], fixed["U"], len(tokens), len(fixed["E"])
    u, inv = np.unique(tokens[:, -1], return_inverse=True)         # distinct query tokens
    q = np.matmul(E[u], params["WQ"]) / math.sqrt(dh)              # (H, u, dh) x_T WQ_h/sqrt(dh)
    S = np.matmul(q, params["WK"].transpose(0, 2, 1)) @ E.T        # (H, u, V)  E_v WK_h q
    e = np.exp(S - S.max(2, keepdims=True)).transpose(1, 2, 0)     # (u, V, H)  numerators e_hv
    Ev = np.concatenate([np.matmul(E, params["WV"]), np.ones((H, V, 1), E.dtype)], axis=2)
    W = (e[..., None] * Ev.transpose(1, 0, 2)).reshape(len(u), V, -1)   # (u, V, H (dh + 1))
    n = _token_counts(tokens, V, E.dtype)                          # (B, V)
    rows = [slice(None)] if len(u) == 1 else [inv == g for g in range(len(u))]   # per u[g]
    pool = np.empty((B, H, dh + 1), E.dtype)                       # sum_t e_t [v_t, 1]
    for g, r in enumerate(rows):
        pool[r] = (n[r] @ W[g]).reshape(-1, H, dh + 1)
    if pool[:, :, dh].min() < 1e-30:     # a row's scores all ~70 below the best entry's: exp
        return transformer_textbook_forward(params, fixed, tokens)  # underflows; shift per row
    oc = (pool[:, :, :dh] / pool[:, :, dh:]).reshape(B, H * dh)    # (B, H dh)  concat_h(o_h)
    x = oc @ params["WO"]                                          # (B, d)
    P = x @ params["W1"] + params["b1"]                            # (B, m)
    A = np.maximum(P, 0.0)                                         # (B, m)
    y = x + A @ params["W2"]                                       # (B, d)
    logits = y @ U.T                                               # (B, n_answers)
    return logits, dict(n=n, rows=rows, E=E, xu=E[u], q=q, e=e, Ev=Ev, pool=pool, oc=oc, x=x,
                        P=P, A=A, U=U, params=params)    # a dict; the textbook cache is a tuple


def transformer_backward(dlogits, cache):
    if not isinstance(cache, dict):      # the forward fell back to the textbook form
        return transformer_textbook_backward(dlogits, cache)
    n, rows, E, xu, q, e, Ev, pool, oc, x, P, A, U, params = cache.values()   # stored order
    B, H, dh = len(oc), len(q), pool.shape[2] - 1
    dy = dlogits @ U                                               # logits = y U^T
    dW2 = A.T @ dy                                                 # y = x + A W2
    dP = (dy @ params["W2"].T) * (P > 0)                           # A = relu(P)
    dW1, db1 = x.T @ dP, dP.sum(0)                                 # P = x W1 + b1
    dx = dy + dP @ params["W1"].T
    dWO = oc.T @ dx                                                # x = oc WO
    do = (dx @ params["WO"].T).reshape(B, H, dh)                   # o = pool_v / pool_1
    dpool = np.concatenate([do, -np.einsum("bhk,bhk->bh", do, oc.reshape(B, H, dh))[..., None]],
                           axis=2) / pool[:, :, dh:]               # (B, H, dh + 1)
    dW = np.stack([n[r].T @ dpool[r].reshape(-1, H * (dh + 1)) for r in rows])   # pool = n W
    dW = dW.reshape(len(rows), len(E), H, dh + 1)                  # (u, V, H, dh + 1)
    dS = e * np.einsum("uvhk,hvk->uvh", dW, Ev)                    # W = e Ev,  e = exp(S - c)
    dWV = np.matmul(E.T, np.einsum("uvh,uvhk->hvk", e, dW)[..., :dh])   # Ev = E WV_h
    dqk = np.matmul(dS.transpose(2, 0, 1), E)                      # S = qk E^T    (H, u, d)
    dWK = np.matmul(dqk.transpose(0, 2, 1), q)                     # qk = q WK_h^T (H, d, dh)
    dq = np.matmul(dqk, params["WK"]) / math.sqrt(dh)              # (H, u, dh)
    dWQ = np.matmul(xu.T, dq)                                      # q = xu WQ_h / sqrt(dh)
    return {"WQ": dWQ, "WK": dWK, "WV": dWV, "WO": dWO, "W1": dW1, "b1": db1, "W2": dW2}


# ----------------------------------------------------------------------------- linear attention

def _linear_attention_inputs(params, fixed, tokens):
    """Check the linear attention's arguments; return the tokens (B, T)."""
    E, WV, d = fixed["E"], params.get("WV"), fixed["E"].shape[1]
    if WV is None or np.ndim(WV) != 2:
        raise ValueError("linear_attention params['WV'] must be a (d, n_answers) array")
    _check_params("linear_attention", params, {"A": (d, d), "WV": (d, WV.shape[1])})
    return _check_tokens("tokens", tokens, len(E), 2)


def linear_attention_textbook_forward(params, fixed, tokens):
    """Paper A's Fig. 5 model (MODEL.md A5): logits = c WV, c = sum_t (x_T A x_t^T) x_t, all T."""
    X = fixed["E"][_linear_attention_inputs(params, fixed, tokens)]   # (B, T, d)
    u = X[:, -1] @ params["A"]                   # (B, d)     x_T A
    s = np.einsum("btd,bd->bt", X, u)            # (B, T)     x_T A x_t^T
    c = np.einsum("bt,btd->bd", s, X)            # (B, d)
    logits = c @ params["WV"]                    # (B, n_answers)
    return logits, (X, s, c, params)


def linear_attention_textbook_backward(dlogits, cache):  # exercise 5
    X, s, c, params = cache
    dWV = c.T @ dlogits                          # logits = c WV
    dc = dlogits @ params["WV"].T
    ds = np.einsum("bd,btd->bt", dc, X)          # c = sum_t s_t x_t
    du = np.einsum("bt,btd->bd", ds, X)          # s_t = u . x_t
    return {"A": X[:, -1].T @ du, "WV": dWV}     # u = x_T A


def linear_attention_forward(params, fixed, tokens):
    """`linear_attention_textbook_forward` per vocabulary entry v (tested equal): with n[b, v]
    the count of v in row b and s_bv = x_T A e_v^T (a row of E A E^T (V, V)), w = n * s (B, V),
      c = sum_t (x_T A x_t^T) x_t = sum_v n[b, v] s_bv e_v = w E,   logits = c WV = w (E WV)."""
    tokens, E = _linear_attention_inputs(params, fixed, tokens), fixed["E"]
    n = _token_counts(tokens, len(E), E.dtype)                     # (B, V)
    w = n * (E @ params["A"] @ E.T)[tokens[:, -1]]                 # (B, V)  n[b, v] s_bv
    return w @ (E @ params["WV"]), (n, w, E[tokens[:, -1]], E, params)


def linear_attention_backward(dlogits, cache):
    n, w, xT, E, params = cache
    ds = n * (dlogits @ (E @ params["WV"]).T)                      # logits = w (E WV), w = n s
    return {"A": (xT.T @ ds) @ E,                                  # s = x_T A E^T
            "WV": E.T @ (w.T @ dlogits)}                           # c = w E,  logits = c WV


# ----------------------------------------------------------------------------- retrieval model

GATHER = 16    # the fast form gathers E[x] when V > GATHER L (measured faster there), else C E

def retrieval_textbook_forward(params, fixed, inputs):
    """Paper B's one-layer transformer on token retrieval, as the paper writes it:
        h_i = E[x_i] + 1{i = pos} z_trig,   s_i = h_i WKQ z_eos^T,   a = softmax_i(s),
        phi = sum_i a_i h_i,   logits = g WV U^T   with
        g = phi                            (attention only, WV (d, d)), or
        g = relu(phi W_mlp) - c            (fixed random MLP of width m, WV (m, d)),
    c = fixed["mlp_centre"] (m,) if given, else 0.  inputs = (tokens (N, L), pos (N,))."""
    tokens, pos = _retrieval_inputs(params, fixed, inputs)
    h = fixed["E"][tokens]                                   # (N, L, d)  rows h_i
    h[np.arange(len(pos)), pos] += fixed["z_trig"]
    s = h @ (params["WKQ"] @ fixed["z_eos"])                 # (N, L)     s_i = h_i WKQ z_eos^T
    a = softmax(s, axis=1)                                   # (N, L)
    phi = np.einsum("nl,nld->nd", a, h)                      # (N, d)     phi = sum_i a_i h_i
    g, P = _features(phi, fixed)                             # (N, d) or (N, m)
    logits = g @ params["WV"] @ fixed["U"].T                 # (N, V)
    return logits, {"h": h, "a": a, "P": P, "g": g, "params": params, "fixed": fixed}


def retrieval_textbook_backward(dlogits, cache):  # exercise 6
    h, a, P, g, params, fixed = (cache[k] for k in ("h", "a", "P", "g", "params", "fixed"))
    dZ = dlogits @ fixed["U"]                                # logits = Z U^T,  Z = g WV
    dWV = g.T @ dZ
    dg = dZ @ params["WV"].T
    dphi = dg if P is None else (dg * (P > 0)) @ fixed["W_mlp"].T   # g = relu(phi W_mlp) - c
    da = np.einsum("nld,nd->nl", h, dphi)                    # phi = sum_i a_i h_i
    ds = a * (da - (a * da).sum(1, keepdims=True))           # a = softmax(s)
    dw = np.einsum("nl,nld->d", ds, h)                       # s_i = h_i . w,  w = WKQ z_eos
    return {"WKQ": np.outer(dw, fixed["z_eos"]), "WV": dWV}


def _features(phi, fixed):
    """The value map's input g (with the MLP's pre-activation P, None without an MLP)."""
    if "W_mlp" not in fixed:
        return phi, None
    P = phi @ fixed["W_mlp"]                                 # (N, m)
    return np.maximum(P, 0.0) - fixed.get("mlp_centre", 0.0), P


def retrieval_forward(params, fixed, inputs):
    """`retrieval_textbook_forward` without the rows h (tested equal; pooling: MODEL.md 1), by
    the shared w = WKQ z_eos: s = (E w)[x] + 1{pos} z_trig.w, phi = sum a E[x] + a_pos z_trig."""
    tokens, pos = _retrieval_inputs(params, fixed, inputs)
    E, z_trig, rows = fixed["E"], fixed["z_trig"], np.arange(len(pos))
    w = params["WKQ"] @ fixed["z_eos"]                       # (d,)   the learned query
    s = (E @ w)[tokens]                                      # (N, L)  E[x] w == (E w)[x]
    s[rows, pos] += z_trig @ w
    a = softmax(s, axis=1)                                   # (N, L)
    if tokens.shape[1] * GATHER < len(E):                    # short rows: gather, N L d work
        phi = np.einsum("nl,nld->nd", a, E[tokens])
    else:                                                    # long rows: phi = C E, N V d work
        phi = _token_counts(tokens, len(E), E.dtype, a.ravel()) @ E   # C[n, v]: attention on v
    phi += np.outer(a[rows, pos], z_trig)                    # (N, d)
    g, P = _features(phi, fixed)
    Z = g @ params["WV"]                                     # (N, d)
    logits = Z @ fixed["U"].T                                # (N, V)
    return logits, dict(tokens=tokens, pos=pos, a=a, P=P, g=g, params=params, fixed=fixed)


def retrieval_backward(dlogits, cache):
    tokens, pos, a, P, g, params, fixed = cache.values()                # stored order
    E, z_trig, rows = fixed["E"], fixed["z_trig"], np.arange(len(pos))
    dZ = dlogits @ fixed["U"]                                # logits = Z U^T,  Z = g WV
    dWV = g.T @ dZ
    if not params["WV"].any():                               # WV = 0: nothing reaches WKQ
        return {"WKQ": np.zeros_like(params["WKQ"]), "WV": dWV}
    dg = dZ @ params["WV"].T                                 # (N, d) or (N, m)
    dphi = dg if P is None else (dg * (P > 0)) @ fixed["W_mlp"].T   # g = relu(phi W_mlp) - c
    if tokens.shape[1] * GATHER < len(E):                    # phi = sum_i a_i h_i: e_{x_i}.dphi,
        da = np.einsum("nld,nd->nl", E[tokens], dphi)        #   gathered as in the forward
    else:
        da = (dphi @ E.T)[rows[:, None], tokens]             #   or via (N, V), as C
    da[rows, pos] += dphi @ z_trig
    ds = a * (da - (a * da).sum(1, keepdims=True))           # a = softmax(s)
    # s_i = h_i . w  =>  dw = sum_{n,i} ds_ni h_ni, accumulated per vocabulary entry
    dEw = np.bincount(tokens.ravel(), weights=ds.ravel(), minlength=len(E)).astype(E.dtype)
    dw = E.T @ dEw + ds[rows, pos].sum() * z_trig            # (d,)
    return {"WKQ": np.outer(dw, fixed["z_eos"]), "WV": dWV}  # w = WKQ z_eos


# ----------------------------------------------------------------------------- input checks

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


def _retrieval_inputs(params, fixed, inputs):
    """Check the retrieval model's arguments; return tokens (N, L) and pos (N,)."""
    d, vdim = fixed["E"].shape[1], fixed.get("W_mlp", fixed["E"]).shape[1]   # vdim: m, or d
    _check_params("retrieval", params, {"WKQ": (d, d), "WV": (vdim, d)})
    tokens = _check_tokens("tokens", inputs[0], len(fixed["E"]), 2)
    pos = _check_tokens("pos", inputs[1], tokens.shape[1], 1)
    if len(pos) != len(tokens):
        raise ValueError(f"pos has length {len(pos)}, tokens has {len(tokens)} rows")
    return tokens, pos
