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
