"""theory.py -- capacity formulas, bounds and predictions, each with its source named.

Sources: [paper A] Nichani, Lee, Bietti (ICLR 2025); [paper A figure] a line its authors
drew; [paper B] Vural, Bietti, Soltanolkotabi, Wu (ICLR 2026); [ours] derived here
(MODEL.md).  Paper B's formulas are not available here: every paper-B formula below is
this project's own, derived for its concrete model (MODEL.md 3, 4), not the paper's."""
import math

import numpy as np


# ------------------------------------------------------------------ paper A

def transformer_params(d, H, dh, m):
    """[paper A] Parameters of the one-layer transformer, embeddings excluded."""
    return 4 * H * dh * d + 2 * m * d


# The lines drawn beside the measurements.  [Barnfield et al.; Giorlandino et al.]: the
# sharp top-1 threshold d^2 = 2 N ln N; the others [paper A figure]: lines its authors drew.
C_SHARP_LINEAR = 2.0      # d^2 = 2 N ln N
C_AUTHORS_LINEAR = 1.3    # d^2 = 1.3 N ln N, Fig. 1 left
C_AUTHORS_MLP_MN = 0.35   # m d = 0.35 N ln N, MLP memory with M = N classes
C_AUTHORS_MLP_M32 = 1.2   # m d = 1.2 N, MLP memory with M = 32 classes
C_AUTHORS_FACTS = 0.15    # facts = 0.15 params, the transformer of Fig. 4 left


def solve_n_log_n(y):
    """[ours] The N >= 1 with N ln N = y (y >= 0), by Newton's method on N ln N - y."""
    if y < 0:
        raise ValueError(f"need y >= 0, got {y}")
    N = max(1.0, y / max(1.0, math.log(max(y, math.e))))  # exercise 8
    for _ in range(100):
        step = (N * math.log(N) - y) / (math.log(N) + 1.0)
        N = max(1.0, N - step)
        if abs(step) < 1e-12 * N:
            break
    return N


def linear_capacity_N(d, c=C_SHARP_LINEAR):
    """The N with d^2 = c N ln N: a linear memory's capacity at constant c."""
    return solve_n_log_n(d * d / c)


def mlp_reference_N(md, regime):
    """[paper A figure] The N on the authors' line of `regime` (MLP memory) at m d."""
    if regime == "M=N":
        return solve_n_log_n(md / C_AUTHORS_MLP_MN)
    if regime == "M=32":
        return md / C_AUTHORS_MLP_M32
    raise ValueError(f'regime must be "M=N" or "M=32", got {regime!r}')


def fit_constant(x, y):
    """[ours] The c of y = c x best in log space: the geometric mean of y / x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.size == 0 or (x <= 0).any() or (y <= 0).any():
        raise ValueError("fit_constant needs equal-length, non-empty, positive x and y")
    return float(np.exp(np.mean(np.log(y / x))))


def bits_per_param_linear(c):
    """[ours] Bits per parameter implied by d^2 = c N ln N with M = N: 1 / (c ln 2)."""
    return 1.0 / (c * math.log(2))


def bits_per_param_mlp(c, regime, M=32):
    """[ours] Bits per parameter (2 m d) of the MLP line: 1 / (2 c ln 2) or log2 M / (2 c)."""
    if regime == "M=N":
        return 1.0 / (2 * c * math.log(2))
    if regime == "M=32":
        return math.log2(M) / (2 * c)
    raise ValueError(f'regime must be "M=N" or "M=32", got {regime!r}')


def authors_frontier_mlp(attn_params, facts):
    """[paper A figure, scaled by us] The authors' frontier (MODEL.md A4): MLP parameters
    max(0, 2.25 facts - attn/2) for attention >= 1.25 facts, else inf."""
    a = np.asarray(attn_params, float)
    mlp = np.maximum(0.0, 2300 / 1024 * facts - a / 2)
    return np.where(a < 1280 / 1024 * facts, np.inf, mlp)

# ------------------------------------------------------------------ paper B, retrieval
# The three-step model (eta -> 0), its accuracy, the symbols: MODEL.md 3, 4 (4.k: item k).

def _normal_nodes(n):                 # Gauss-Hermite nodes and weights: E f(Z), Z ~ N(0,1)
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


def _erfc(z):
    """erfc, vectorised: Numerical Recipes' erfcc (relative error < 1.2e-7)."""
    z = np.asarray(z, dtype=float)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.5 * a)
    c = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
         -1.13520398, 1.48851587, -0.82215223, 0.17087277]
    r = t * np.exp(np.polyval(c[::-1], t) - a * a)     # 2x faster than -a * a + polyval
    return np.where(z >= 0, r, 2.0 - r)


def _Phi(x):                              # the standard normal CDF
    return 0.5 * _erfc(-np.asarray(x, dtype=float) / math.sqrt(2.0))


def coverage_bound(V, N):
    """[ours] Any learner's accuracy <= 1 - (1 - 1/V)^N (1 - 1/V): an unseen token is
    chance."""
    return 1.0 - (1.0 - 1.0 / V) ** N * (1.0 - 1.0 / V)


def label_information(V, N, L, samples=2000, seed=0):
    """[ours] I(pi^-1(y); C[:, y]) in nats (Monte Carlo): what one label's column of the
    token-by-label counts C tells of its token x, over counts c ~ Binomial(N, 1/V).  The
    column is c e_x plus Multinomial((L - 1) c, 1/V), so P(x | column) ~ C_x! / (C_x - c)!."""
    rng = np.random.default_rng(seed)
    c = rng.binomial(N, 1 / V, samples)[:, None]                      # (samples, 1)
    C = rng.multinomial((L - 1) * c[:, 0], np.full(V, 1 / V))        # (samples, V)
    C[:, 0] += c[:, 0]                                                # token 0 is x
    log_factorial = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, C.max() + 1)))])
    logw = log_factorial[C] - log_factorial[np.maximum(C - c, 0)]
    logw[C < c] = -np.inf                                             # x cannot be there
    top = logw.max(1, keepdims=True)
    log_total = top[:, 0] + np.log(np.exp(logw - top).sum(1))
    return float(np.mean(math.log(V) + logw[:, 0] - log_total))


def first_gradient_information(V, N, d, L, samples=2000, seed=0):
    """[ours] An upper estimate of I(pi; G) in nats, G the first gradient (MODEL.md 3): at
    most V label_information (G is a function of C), and, with the projected counts taken
    as Gaussian (each entry of G adds N (L - 1) cells), at most a Gaussian channel's
    (r/2) ln(1 + (1 + A)/(L - 1)), r = min(d, V) min(d, V - 1), A = N/V."""
    r = min(d, V) * min(d, V - 1)
    gaussian = r / 2 * math.log1p((1 + N / V) / (L - 1))
    return min(gaussian, V * label_information(V, N, L, samples, seed))


def first_gradient_bound(V, N, d, L, samples=2000, seed=0):
    """[ours] The accuracy no learner that sees only the first gradient (and the
    embeddings) can exceed, by Fano's inequality per token: its mean error e has
    h(e) + e ln(V - 1) >= ln(V!)/V - I/V, I = first_gradient_information; capped by
    coverage_bound.  Vacuous below about 1/ln V (Fano's slack)."""
    need = math.lgamma(V + 1) / V - first_gradient_information(V, N, d, L, samples, seed) / V
    lo, hi = 0.0, 1.0 - 1.0 / V                   # h(e) + e ln(V-1) rises on [0, 1 - 1/V]
    for _ in range(50):
        e = (lo + hi) / 2
        if -e * math.log(e) - (1 - e) * math.log(1 - e) + e * math.log(V - 1) < need:
            lo = e
        else:
            hi = e
    return min(1.0 - lo, coverage_bound(V, N))


def first_gradient_N(V, d, L, tau, samples=2000, seed=0):
    """[ours] The N where first_gradient_bound reaches tau (to 2%): no learner that sees
    only the first gradient reaches tau with fewer; inf if not below 1e8."""
    def reaches(N):
        return first_gradient_bound(V, N, d, L, samples, seed) >= tau
    if not reaches(1e8):
        return math.inf
    return bisect_log(reaches, 1, 1e8, ratio=1.02, at_lo=reaches(1))[1]


def query_cosine(V, N, d, L):
    """[ours] The cosine of the learned query w = WKQ1 z_eos with z_trig (MODEL.md 4.2):
    1/sqrt(1 + R^2), R the step-2 noise along the mean embedding over the trigger part."""
    R = L * (L - 1) * math.sqrt(V) * (1 + V / d) / (2 * d * N)
    return 1.0 / math.sqrt(1.0 + R * R)


def attention_meanfield(q, d, L, g, z2=1.0, cos=1.0):
    """[ours] Attention p on the marked position, distractor mass |nu|^2 (nu2), for a
    token of score g at query norm q (MODEL.md 4.3)."""
    g = np.asarray(g, dtype=float)
    beta, tau2 = q * cos * math.sqrt(z2), q * q / d
    p = 1.0 / (1.0 + (L - 1) * np.exp(tau2 / 2 - beta - g))
    nu2 = p ** 2 * (L - 1) * np.exp(2 * tau2 - 2 * beta - 2 * g)
    nu2 = np.clip(nu2, (1 - p) ** 2 / (L - 1), (1 - p) ** 2)
    return p, nu2


def retrieval_noise_terms(V, N, d, p_t, nu2_t, f_t, S, p2, K2, vK, rho2, z2=1.0):
    """[ours] A wrong logit's variances over S^2 (MODEL.md 4.5); p2, K2, vK, rho2: E p^2,
    E K^2, Var K, E nu2 over tokens."""
    A = N / V
    S2 = S * S
    overlap = A ** 2 * p_t ** 2 * (p2 + p_t ** 2) / d / S2
    mean_bias = ((f_t ** 2 + nu2_t * z2 / d) * (A * K2 + A ** 2 * vK) * (1 + V / d)
                 / S2)
    crosstalk = (V * A ** 2 * p2 * (p_t ** 2 + nu2_t) / d ** 2
                 + A ** 2 * p2 * nu2_t / d) / S2
    distractor = ((V * ((1 + z2) * p_t ** 2 + nu2_t) / d + p_t ** 2 + nu2_t)
                  * A * rho2 * (1 / d + 1 / V) / S2)
    return {"overlap": overlap, "mean_bias": mean_bias, "crosstalk": crosstalk,
            "distractor": distractor}


def frozen_bias_draws(V, A, d, q, L, z2=1.0, cos=1.0, draws=64, seed=0):
    """[ours] Per-run bias vectors (draws, V-1) of the wrong labels, unit sd, shared by a
    run's test rows: c_v K(x_v), c_v ~ Poisson(A), plus crosstalk (MODEL.md 4.7)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((draws, V - 1))
    p, _ = attention_meanfield(q, d, L, q / math.sqrt(d) * x, z2, cos)
    xi = rng.poisson(A, x.shape) * p * (z2 + math.sqrt(z2 / d) * x)
    norms = 1 + math.sqrt(2 / d) * rng.standard_normal(x.shape)       # |u_v|^2
    xi = (xi - xi.mean(1, keepdims=True)) * norms
    sd = xi.std()
    crosstalk = math.sqrt(V / d) * sd * rng.standard_normal(x.shape)
    return (xi + crosstalk) / (sd * math.sqrt(1 + V / d))


def _token_nodes(V, N, d, L, q, m=None, z2=1.0, n_nodes=24):
    """[ours] The answer token at Gauss-Hermite nodes x of its score x q / sqrt(d): per
    node its weight, signal S and, if S > 0, noise terms, f, nu2, competitor means c and
    the signal's spread v_c (MODEL.md 4.4-4.6); and the node weights."""
    A = N / V
    x, wx = _normal_nodes(n_nodes)
    g = q / math.sqrt(d) * x                                 # token scores e_x.w
    cos = query_cosine(V, N, d, L)
    p, nu2 = attention_meanfield(q, d, L, g, z2, cos)
    K = p * (z2 + math.sqrt(z2 / d) * x)                  # e_x.z_trig = sqrt(z2 / d) x
    p2, K2, Kbar = float(wx @ p ** 2), float(wx @ K ** 2), float(wx @ K)
    vK, rho2 = K2 - Kbar ** 2, float(wx @ nu2)
    et2 = 1 - 1 / d                      # E |e_t|^2 off z_trig; f_t K_t holds the rest
    nodes = []
    for xt, gt, pt, n2t, Kt, wt in zip(x, g, p, nu2, K, wx):
        ft = Kt / z2                                         # (phi_t . z_trig) / z2
        S = A * pt * pt * et2 + ft * A * (Kt - Kbar)      # signal: mean lead (MODEL.md 4.4)
        nodes.append({"x": xt, "w": wt, "S": S})
        if S <= 0:                                           # not stored at all: chance
            continue
        terms = retrieval_noise_terms(V, N, d, pt, n2t, ft, S, p2, K2, vK, rho2, z2)
        if m is not None:
            with np.errstate(divide="ignore", over="ignore"):   # p_t -> 0: no signal
                terms = mlp_terms(terms, V, d, m, pt, n2t, z2, A * vK / (K2 + A * vK))
        v_c = A * (pt * pt * et2 + ft * Kt) ** 2 / S ** 2    # own count ~ Poisson(A)
        c = pt * np.exp(g - q * cos * math.sqrt(z2) - gt) * A * p * et2 / S   # (nodes,)
        nodes[-1].update(terms=terms, f=ft, nu2=n2t, v_c=v_c, c=c)
    return nodes, wx


def retrieval_accuracy(V, N, d, L, q, m=None, z2=1.0):
    """[ours] Predicted accuracy of three steps (eta -> 0) at query norm q, MLP width m:
    retrieval_accuracy_frozen with all the noise fresh (MODEL.md 4.6)."""
    return retrieval_accuracy_frozen(V, N, d, L, q, m, z2, draws=1, fresh=True)[0]


def retrieval_accuracy_frozen(V, N, d, L, q, m=None, z2=1.0, draws=8, n_test=2000,
                              seed=0, fresh=False, n_z=64, bias_lift=0.31):
    """[ours] Predicted test accuracy (MODEL.md 4.6-4.7): (mean, sd) over `draws` frozen
    biases b (frozen_bias_draws) of size sb2 (0 if fresh) weighted by the fitted
    lift = 1 + bias_lift sqrt(1/d + 2/V) (what it corrects: MODEL.md 4.7), fresh noise
    sf^2, distractors' labels c_v:
        acc(b) = E_x E_Z[ prod_{v != y} Phi((1 + s_o Z - lift sqrt(sb2) b_v - c_v)/sf) ],
        sd^2 = Var_b acc(b) + E_b[acc(b)(1 - acc(b))] (1/V + 1/n_test)."""
    integers = all(isinstance(k, (int, np.integer)) for k in (V, L, draws))
    positive = min(N, d, draws, 1 if m is None else m) >= 1
    others = min(q, bias_lift) >= 0 and z2 > 0
    if not (integers and min(V, L) >= 2 and positive and others):
        raise ValueError("need integers V, L >= 2, draws >= 1; N, d, m >= 1; q, "
                         f"bias_lift >= 0; z2 > 0; got {locals()}")
    nodes, wx = _token_nodes(V, N, d, L, q, m, z2)
    z, wz = _normal_nodes(n_z)
    n_comp = min(L - 1, V - 1)                               # distractors' labels
    cos = query_cosine(V, N, d, L)
    bias = frozen_bias_draws(V, N / V, d, q, L, z2, cos, draws, seed)
    acc, lift = np.zeros(draws), 1 + bias_lift * math.sqrt(1 / d + 2 / V)
    wg = wx[1::3] / wx[1::3].sum()       # distractor scores: every third node (symmetric)
    for t in nodes:
        if t["S"] <= 0 or not math.isfinite(sum(t["terms"].values())):   # not stored
            acc += t["w"] / V
            continue
        terms, f = t["terms"], t["f"]
        sb2 = 0.0
        if not fresh:
            sb2 = (terms["mean_bias"] * f ** 2 / (f ** 2 + t["nu2"] * z2 / d)
                   + terms.get("mlp_frozen", 0.0))
        sf = math.sqrt(sum(terms.values()) - sb2)
        s_o = math.sqrt(sf ** 2 + 4 / d + t["v_c"] + sb2 * V / (V + d))
        a = (1 + s_o * z) / sf                                       # (nz,)
        b = lift * math.sqrt(sb2) / sf * bias[:, :, None]            # (draws, V-1, 1)
        lp = np.log(_Phi(a - b[:, n_comp:]) + 1e-300).sum(1)        # (draws, nz)
        comp = _Phi(a - (t["c"] / sf)[1::3, None] - b[:, :n_comp, :, None])
        lp += np.log(np.einsum("g,kcgz->kcz", wg, comp) + 1e-300).sum(1)
        acc += t["w"] * (np.exp(lp) @ wz)
    acc = np.minimum(acc, coverage_bound(V, N))
    sd = math.sqrt(acc.var() + float(np.mean(acc * (1 - acc))) * (1 / V + 1 / n_test))
    return float(acc.mean()), sd


# The fixed random MLP (MODEL.md 4.5): phi_t.phi_n via kappa(c), at the cosine c0 between
# tokens, c1 within one.

def arccos_kernel(c):  # exercise 9
    """[standard] kappa(c) = E[relu(a) relu(b)] for standard Gaussians a, b with
    correlation c (the arc-cosine kernel of degree 1), in closed form; c may be an array."""
    t = np.arccos(np.clip(c, -1.0, 1.0))                     # the angle between a and b
    return (np.sin(t) + (np.pi - t) * np.cos(t)) / (2 * np.pi)


def _relu_token_var(c, n=32):
    """[ours] The part of relu(a) relu(b) new for each token (MODEL.md 4.5): E[r1^2 v]
    (frozen) and E[v^2] (fresh)."""
    x, w = _normal_nodes(n)
    mu, sd = math.sqrt(c) * x, math.sqrt(max(1.0 - c, 1e-12))
    cdf = _Phi(mu / sd)
    pdf = np.exp(-0.5 * (mu / sd) ** 2) / math.sqrt(2 * math.pi)
    r1 = mu * cdf + sd * pdf
    v = (mu * mu + sd * sd) * cdf + mu * sd * pdf - r1 ** 2
    return float(w @ (r1 ** 2 * v)), float(w @ (v * v))       # frozen, fresh


def mlp_terms(terms, V, d, m, p_t, nu2_t, z2=1.0, spread=0.0):
    """[ours] The noise terms with the MLP, over its signal kappa(c1) - kappa(c0), and the
    finite width's MLP noise (MODEL.md 4.5)."""
    scale = (1 + z2) * p_t ** 2 + nu2_t
    c0 = z2 * p_t ** 2 / scale                   # between two tokens
    c1 = (1 + z2) * p_t ** 2 / scale             # within one
    dk = arccos_kernel(c1) - arccos_kernel(c0)
    slope = (np.pi - np.arccos(c0)) / (2 * np.pi)
    lin = c1 - c0
    out = dict(terms)                            # the same order of keys: the same sums
    for k in ("overlap", "crosstalk", "distractor"):
        out[k] = terms[k] * (slope * lin / dk) ** 2
    weight = (1 - spread) * (arccos_kernel(c0) / c0) ** 2 + spread * slope ** 2
    out["mean_bias"] = terms["mean_bias"] * weight * (lin / dk) ** 2
    frozen, fresh = (v * (1 + V / d) / (m * dk ** 2) for v in _relu_token_var(c0))
    return dict(out, mlp_frozen=frozen, mlp_fresh=fresh)


def bisect_log(pred, lo, hi, ratio=1.001, integer=False, at_lo=None):
    """Where a monotone pred flips, bisecting in log scale to hi / lo <= ratio (integers:
    or hi = lo + 1): (lo, hi).  at_lo: pred(lo) if known."""
    at_lo = pred(lo) if at_lo is None else at_lo
    while hi / lo > ratio and not (integer and hi - lo <= 1):
        mid = math.sqrt(lo * hi)
        if integer:
            mid = min(max(int(round(mid)), lo + 1), hi - 1)
        if pred(mid) == at_lo:
            lo = mid
        else:
            hi = mid
    return lo, hi


def critical_N(V, d, L, q, tau, m=None, z2=1.0, draws=32, seed=0):
    """[ours] N*: the least N whose predicted mean accuracy (frozen bias, MODEL.md 4.8)
    reaches tau, to 1%; inf if none below 1e9."""
    def reaches(N):
        mean = retrieval_accuracy_frozen(V, N, d, L, q, m, z2, draws=draws, seed=seed)[0]
        return mean >= tau
    if not reaches(1e9):
        return math.inf
    if reaches(1):
        return 1
    return bisect_log(reaches, 1, 1e9, ratio=1.01, at_lo=False)[1]


def coverage_N(V, tau):
    """[ours] The N where coverage_bound reaches tau: no learner reaches tau with fewer."""
    return math.log(1 - tau) / math.log(1 - 1 / V) - 1


def loglog_slope(x, y):
    """Least-squares slope of log y against log x (finite points; nan if < 2 x values)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if len(set(x[ok])) < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])
