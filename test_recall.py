"""Tests: gradients against centred finite differences, naive oracles, tasks, theory, runs.

Run with `make test` (it creates .venv and installs requirements.txt first).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import recall as rc
import theory
import train
import plots

HERE = os.path.dirname(os.path.abspath(__file__))


# ----------------------------------------------------------------------------- core


# ----------------------------------------------------------------------------- paper A experiments


# ----------------------------------------------------------------------------- paper B experiments

def _naive_retrieval_loss(WKQ, WV, fixed, tokens, pos, labels):
    """Mean cross-entropy of the retrieval model, one sample and one position at a time."""
    E, U, z, q = fixed["E"], fixed["U"], fixed["z_trig"], fixed["z_eos"]
    total = 0.0
    for n in range(len(labels)):
        h = [E[tokens[n, i]] + (z if i == pos[n] else 0.0) for i in range(tokens.shape[1])]
        s = [float(hi @ WKQ @ q) for hi in h]
        a = np.exp(np.array(s) - max(s))
        a /= a.sum()
        phi = sum(ai * hi for ai, hi in zip(a, h))
        if "W_mlp" in fixed:
            phi = np.maximum(phi @ fixed["W_mlp"], 0.0)
        logits = [float(phi @ WV @ U[v]) for v in range(len(U))]
        mx = max(logits)
        total += -(logits[labels[n]] - mx - np.log(sum(np.exp(l - mx) for l in logits)))
    return total / len(labels)


def _naive_grad(f, W, h=1e-6):
    g = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        g[idx] = (f(Wp) - f(Wm)) / (2 * h)
    return g


@pytest.mark.parametrize("m", [None, 3])
def test_three_step_matches_naive_steps(m):
    """three_step against the three steps done by hand: an unvectorised loss and centred
    finite differences, at step sizes large enough that every step matters."""
    rng = np.random.default_rng(5)
    task = rc.make_retrieval(5, 4, 3, rng, m=m)
    fixed = rc.retrieval_fixed(task)
    tokens, pos, labels = rc.sample_retrieval(task, 6, rng)
    eta, gamma = 0.7, 3.0
    loss = lambda WKQ, WV: _naive_retrieval_loss(WKQ, WV, fixed, tokens, pos, labels)
    vdim = 4 if m is None else m
    WKQ0, WV0 = np.zeros((4, 4)), np.zeros((vdim, 4))
    WV1 = -eta * _naive_grad(lambda W: loss(WKQ0, W), WV0)
    WKQ1 = -gamma * _naive_grad(lambda W: loss(W, WV1), WKQ0)
    WV2 = WV1 - gamma * _naive_grad(lambda W: loss(WKQ1, W), WV1)
    assert np.abs(WKQ1).max() > 1e-3 and np.abs(WV2 - WV1).max() > 1e-3   # non-degenerate
    got = train.three_step(fixed, tokens, pos, labels, eta, gamma, chunk=4)   # chunks of 4 + 2
    np.testing.assert_allclose(got["WKQ"], WKQ1, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got["WV"], WV2, rtol=1e-6, atol=1e-9)
    info = {}
    q = float(np.linalg.norm(WKQ1 @ fixed["z_eos"]))
    again = train.three_step(fixed, tokens, pos, labels, eta, query_norm=q, info=info)
    assert abs(info["gamma"] - gamma) < 1e-6 * gamma
    np.testing.assert_allclose(again["WV"], WV2, rtol=1e-6, atol=1e-9)


def test_coverage_bound_by_hand():
    assert theory.coverage_bound(2, 1) == pytest.approx(0.75)        # 1 - (1/2)(1/2)
    assert theory.coverage_bound(10, 0) == pytest.approx(0.1)        # nothing seen: chance


def test_saturated_noise_terms_by_hand():
    """p = 1, nu = 0, z2 = 1, no token-to-token spread: 2/d + (V/N)(1 + V/d) + V/d^2."""
    V, N, d = 100, 1000, 10
    A = N / V
    T = theory.retrieval_noise_terms(V, N, d, p_t=1.0, nu2_t=0.0, f_t=1.0, S=A, p2=1.0,
                                     K2=1.0, vK=0.0, rho2=0.0)
    assert T["distractor"] == 0.0
    assert sum(T.values()) == pytest.approx(0.2 + 0.1 * 11 + 1.0)
    assert theory.retrieval_signal(V, N, 1.0, 1.0, 1.0, 1.0) == pytest.approx(A)


def test_attention_and_query_by_hand():
    p, nu2 = theory.attention_meanfield(0.0, 16, 5, 0.0)             # no query: uniform
    assert p == pytest.approx(1 / 5) and nu2 == pytest.approx(4 / 25)
    p, _ = theory.attention_meanfield(np.log(3.0), 10 ** 9, 4, 0.0)  # e^beta = L - 1
    assert p == pytest.approx(0.5, rel=1e-6)
    # R = L(L-1) sqrt(V)(1 + V/d)/(2 d N) = 2*1*2*2/16 = 1/2
    assert theory.query_cosine(4, 2, 4, 2) == pytest.approx(1 / np.sqrt(1.25))
    assert theory.arccos_kernel(1.0) == pytest.approx(0.5)
    assert theory.arccos_kernel(0.0) == pytest.approx(1 / (2 * np.pi))
    import math
    xs = np.array([-3.0, -0.5, 0.0, 1.0, 6.0])
    np.testing.assert_allclose(theory._erfc(xs), [math.erfc(x) for x in xs], rtol=2e-7)


def test_accuracy_formula_limits_and_solvers():
    acc = lambda **k: theory.retrieval_accuracy(**dict(dict(V=64, N=4000, d=64, L=8, q=10.0), **k))
    assert acc(N=10 ** 7, d=4096) > 0.99                             # everything large: recall
    assert acc(q=0.0, L=64, N=200) < 0.05                            # no attention: near chance
    assert acc(N=2000) < acc(N=8000) and acc(d=32) < acc(d=128)      # monotone in N and d
    assert acc(N=100) <= theory.coverage_bound(64, 100) + 1e-12
    nstar = theory.critical_N(64, 64, 8, 10.0, 0.5)
    assert theory.retrieval_accuracy(64, nstar * 1.01, 64, 8, 10.0) >= 0.5
    assert theory.retrieval_accuracy(64, nstar * 0.97, 64, 8, 10.0) < 0.5
    assert theory.critical_N(128, 8, 8, 10.0, 0.9) == float("inf")  # 2V/d^2 alone forbids it
    assert theory.loglog_slope([1, 2, 4], [3, 12, 48]) == pytest.approx(2.0)


def test_three_step_accuracy_matches_theory_at_one_point():
    """One saturated point of the agreement table, small enough for the test suite."""
    r = train.run_retrieval_one(train._b_cfg(64, 64, 4, 2000, 0, q=10.0, n_test=1000))
    pred = theory.retrieval_accuracy(64, 2000, 64, 4, 10.0, z2=r["z2"])
    assert r["attention"] > 0.99 and r["cos_query_trig"] > 0.99
    assert abs(r["accuracy"] - pred) < 0.10, (r["accuracy"], pred)


@pytest.mark.parametrize("name", ["b_agree", "b_phase", "b_nstar", "b_embed", "b_mlp", "b_long",
                                  "b_length"])
def test_paper_b_experiment_tiny(name, tmp_path):
    """Each experiment at tiny scale writes records, and its figure renders into tmp_path."""
    runner = train.EXPERIMENTS[name][0]
    kwargs = {"seeds": 1} if name == "b_agree" else {}
    records = runner(out=str(tmp_path), scale="tiny", jobs=1, seed=0, **kwargs)
    assert records and all("result" in r for r in records)
    assert len(os.listdir(tmp_path / name)) == len(records)
    path = plots.FIGURES[name](str(tmp_path), str(tmp_path / f"{name}.png"))
    assert os.path.getsize(path) > 1000


def test_three_step_argmax_does_not_depend_on_eta_at_fixed_query_norm():
    """For eta -> 0 only the query norm q matters: eta = 1e-3 and 1e-6 predict the same labels."""
    rng = np.random.default_rng(3)
    task = rc.make_retrieval(32, 16, 4, rng)
    fixed = rc.retrieval_fixed(task)
    tokens, pos, labels = rc.sample_retrieval(task, 500, rng)
    test = rc.sample_retrieval(task, 300, rng)
    preds = []
    for eta in (1e-3, 1e-6):
        p = train.three_step(fixed, tokens, pos, labels, eta, query_norm=4.0)
        preds.append(rc.retrieval_forward(p, fixed, test[:2])[0].argmax(1))
    assert (preds[0] == preds[1]).mean() > 0.99
    p = train.three_step(fixed, tokens, pos, labels, 1e-3, query_norm=0.5)    # q does matter
    assert (rc.retrieval_forward(p, fixed, test[:2])[0].argmax(1) == preds[0]).mean() < 0.9


def test_critical_d_and_max_V_solve_the_formula():
    acc = theory.retrieval_accuracy
    dstar = theory.critical_d(128, 8000, 8, 10.0, 0.5)
    assert acc(128, 8000, int(np.ceil(dstar * 1.02)), 8, 10.0) >= 0.5 > acc(128, 8000, int(dstar * 0.95), 8, 10.0)
    vstar = theory.max_V(8000, 128, 8, 10.0, 0.5)
    assert acc(int(vstar), 8000, 128, 8, 10.0) >= 0.5 > acc(int(vstar * 1.1), 8000, 128, 8, 10.0)


def test_noise_term_check_tiny(tmp_path):
    """b_terms at tiny scale: every logit part is measured and the table renders."""
    recs = train.run_b_terms(out=str(tmp_path), scale="tiny", jobs=1, seed=0)
    r = recs[0]["result"]
    assert r["sigma2"] > 0 and r["e_e"] > 0 and r["z_ze"] > 0 and r["x_nu"] >= 0
    assert set(r["theory"]) == {"overlap", "mean_bias", "crosstalk", "distractor"}
    assert "| 16 | 16 | 4 | 200 |" in train.terms_table(recs)
