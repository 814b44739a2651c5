"""theory.py -- capacity formulas, bounds and predictions, each with its source named.

Sources: [paper A] Nichani, Lee, Bietti (ICLR 2025); [paper A figure] a reference line drawn
by its authors; [paper B] Vural, Bietti, Soltanolkotabi, Wu (ICLR 2026); [ours] derived in
this project for the concrete model it fixes, and checked against its simulations.
"""
import math

import numpy as np


# ----------------------------------------------------------------------------- counting and parameters

def transformer_params(d, H, dh, m):
    """[paper A] Parameters of the one-layer transformer without embeddings: 4 H dh d + 2 m d."""
    return 4 * H * dh * d + 2 * m * d


def fact_bits(S, R, D):
    """[counting] Information in an arbitrary fact table: S R log2 D bits."""
    return S * R * math.log2(D)


def map_bits(N, M):
    """[counting] Information in an arbitrary map of N items into M classes: N log2 M bits."""
    return N * math.log2(M)


# ----------------------------------------------------------------------------- paper A, memories

# Reference constants, each with its source.
C_SHARP_LINEAR = 2.0      # [later work: Barnfield et al.; Giorlandino et al.] d^2 = 2 N ln N, top-1 recall
C_AUTHORS_LINEAR = 1.3    # [paper A figure] the guide line d^2 = 1.3 N ln N of Fig. 1 left
C_AUTHORS_MLP_MN = 0.35   # [paper A figure] m d = 0.35 N ln N, MLP memory with M = N classes
C_AUTHORS_MLP_M32 = 1.2   # [paper A figure] m d = 1.2 N, MLP memory with M = 32 classes
C_AUTHORS_FACTS = 0.15    # [paper A figure] facts = 0.15 params, one-layer transformer (Fig. 4 left)
GARDNER_BITS = 2.0        # [Gardner 1988] at most 2 bits per weight for random dichotomies


def linear_memory_params(d):
    """[paper A] Parameters of the linear memory E[x] W U^T: W is d x d."""
    return d * d


def mlp_memory_params(d, m, bias=True):
    """[paper A] Parameters of the MLP memory: W1 (d x m), b1 (m), W2 (m x d).  The authors'
    x-axis is m d and their bits-per-parameter figures use 2 m d (bias=False)."""
    return 2 * m * d + (m if bias else 0)


def solve_n_log_n(y):
    """[ours] The N >= 1 with N ln N = y (y >= 0), by Newton's method on f(N) = N ln N - y."""
    if y < 0:
        raise ValueError(f"need y >= 0, got {y}")
    N = max(1.0, y / max(1.0, math.log(max(y, math.e))))
    for _ in range(100):
        step = (N * math.log(N) - y) / (math.log(N) + 1.0)
        N = max(1.0, N - step)
        if abs(step) < 1e-12 * N:
            break
    return N


def linear_capacity_N(d, c=C_SHARP_LINEAR):
    """[later work / paper A figure] The N solving d^2 = c N ln N: how many associations a
    d x d linear memory stores (c = 2: sharp top-1 threshold; c = 1.3: the authors' guide)."""
    return solve_n_log_n(d * d / c)


def linear_capacity_d(N, c=C_SHARP_LINEAR):
    """[later work / paper A figure] The d solving d^2 = c N ln N (inverse of linear_capacity_N)."""
    return math.sqrt(c * N * math.log(N))


def mlp_reference_md(N, regime):
    """[paper A figure] The authors' reference lines for the MLP memory, as m d for N items:
    regime "M=N": m d = 0.35 N ln N;  regime "M=32": m d = 1.2 N."""
    if regime == "M=N":
        return C_AUTHORS_MLP_MN * N * math.log(N)
    if regime == "M=32":
        return C_AUTHORS_MLP_M32 * N
    raise ValueError(f'regime must be "M=N" or "M=32", got {regime!r}')


def mlp_reference_N(md, regime):
    """[paper A figure] Inverse of mlp_reference_md: the N the authors' line gives for m d."""
    if regime == "M=N":
        return solve_n_log_n(md / C_AUTHORS_MLP_MN)
    if regime == "M=32":
        return md / C_AUTHORS_MLP_M32
    raise ValueError(f'regime must be "M=N" or "M=32", got {regime!r}')


def bits_per_param(N, M, params):
    """[counting] Bits stored per parameter when N items are mapped to M classes: N log2 M / params."""
    return map_bits(N, M) / params


def counting_bound_N(params, M=None, bits=GARDNER_BITS):
    """[counting + Gardner] The largest N whose map fits into params parameters at `bits` bits
    each: N log2 M = bits * params; with M=None the classes are the items (M = N)."""
    if M is None:
        return solve_n_log_n(bits * params * math.log(2))
    return bits * params / math.log2(M)


def facts_reference(params):
    """[paper A figure] The authors' line for the transformer: facts = 0.15 params."""
    return C_AUTHORS_FACTS * params


def facts_information_bound(params, D, bits=GARDNER_BITS):
    """[counting] Facts storable if each parameter holds `bits` bits: S R log2 D <= bits params."""
    return bits * params / math.log2(D)


def fit_constant(x, y):
    """[ours] The c of y = c x that best fits in log space: the geometric mean of y / x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.size == 0 or (x <= 0).any() or (y <= 0).any():
        raise ValueError("fit_constant needs equal-length, non-empty, positive x and y")
    return float(np.exp(np.mean(np.log(y / x))))


def bits_per_param_linear(c):
    """[ours] Bits per parameter implied by d^2 = c N ln N with M = N: 1 / (c ln 2)."""
    return 1.0 / (c * math.log(2))


def bits_per_param_mlp(c, regime, M=32):
    """[ours] Bits per parameter (params = 2 m d) implied by the MLP line with constant c:
    "M=N": m d = c N ln N -> 1 / (2 c ln 2);   "M=32": m d = c N -> log2 M / (2 c)."""
    if regime == "M=N":
        return 1.0 / (2 * c * math.log(2))
    if regime == "M=32":
        return math.log2(M) / (2 * c)
    raise ValueError(f'regime must be "M=N" or "M=32", got {regime!r}')


# Fig. 4 right.  The authors' hand-drawn frontier for S = R = 32 (1024 facts), d = 32, dh = 8:
# attention params d dh H >= 1280, and attention/2 + MLP params d m >= 2300.  [ours] We scale it
# linearly with the number of facts, which is what "params proportional to facts" claims.
AUTHORS_ATTN_MIN_PER_FACT = 1280 / 1024
AUTHORS_BUDGET_PER_FACT = 2300 / 1024


def attention_params_for_facts(facts):
    """[paper A figure, scaled by us] Attention params d dh H that store the facts with no MLP:
    the authors' frontier at MLP = 0, 2 * 2300/1024 = 4.5 per fact."""
    return 2 * AUTHORS_BUDGET_PER_FACT * facts


def mlp_params_for_facts(facts):
    """[paper A figure, scaled by us] MLP params d m that store the facts when attention is at
    the authors' minimum: (2300 - 1280/2)/1024 = 1.6 per fact."""
    return (AUTHORS_BUDGET_PER_FACT - AUTHORS_ATTN_MIN_PER_FACT / 2) * facts


def authors_frontier_mlp(attn_params, facts):
    """[paper A figure, scaled by us] MLP params on the authors' frontier for given attention
    params: max(0, 2.25 facts - attn/2), or inf below the attention minimum 1.25 facts."""
    a = np.asarray(attn_params, float)
    mlp = np.maximum(0.0, AUTHORS_BUDGET_PER_FACT * facts - a / 2)
    return np.where(a < AUTHORS_ATTN_MIN_PER_FACT * facts, np.inf, mlp)



# ----------------------------------------------------------------------------- paper B, retrieval
