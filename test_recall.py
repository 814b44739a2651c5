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

import math   # noqa: E402  (used by the paper A tests only)


def test_theory_memory_formulas_hand_computed():
    assert theory.solve_n_log_n(math.e) == pytest.approx(math.e, rel=1e-9)       # e ln e = e
    assert theory.solve_n_log_n(0.0) == pytest.approx(1.0)                        # 1 ln 1 = 0
    # d^2 = 2 N ln N at N = 100: d^2 = 200 ln 100 = 921.03, d = 30.348
    assert theory.linear_capacity_d(100) == pytest.approx(math.sqrt(200 * math.log(100)))
    assert theory.linear_capacity_N(math.sqrt(200 * math.log(100))) == pytest.approx(100)
    assert theory.linear_capacity_N(32, 1.3) > theory.linear_capacity_N(32, 2.0)   # smaller c, more N
    assert theory.mlp_reference_md(100, "M=32") == pytest.approx(120.0)
    assert theory.mlp_reference_md(100, "M=N") == pytest.approx(35 * math.log(100))
    assert theory.mlp_reference_N(120.0, "M=32") == pytest.approx(100.0)
    assert theory.mlp_reference_N(35 * math.log(100), "M=N") == pytest.approx(100.0)
    with pytest.raises(ValueError):
        theory.mlp_reference_md(10, "M=7")
    assert theory.linear_memory_params(32) == 1024
    assert theory.mlp_memory_params(8, 16) == 2 * 8 * 16 + 16                    # W1, b1, W2
    assert theory.mlp_memory_params(8, 16, bias=False) == 256
    assert theory.bits_per_param(8, 4, 16) == pytest.approx(1.0)                   # 8 * 2 / 16
    assert theory.counting_bound_N(1024) == pytest.approx(256.0)                   # 256 log2 256 = 2048
    assert theory.counting_bound_N(60, M=8) == pytest.approx(40.0)                 # 2 * 60 / 3
    assert theory.facts_reference(1000) == pytest.approx(150.0)
    assert theory.facts_information_bound(300, 8) == pytest.approx(200.0)
    assert theory.fit_constant([1, 2], [2, 8]) == pytest.approx(math.sqrt(8))     # geomean(2, 4)
    with pytest.raises(ValueError):
        theory.fit_constant([1, 0], [1, 1])
    # the bits per parameter the authors' lines imply (PAPERS C: ~1.1 linear, ~2.1 MLP)
    assert theory.bits_per_param_linear(1.3) == pytest.approx(1 / (1.3 * math.log(2)))
    assert theory.bits_per_param_linear(1.3) == pytest.approx(1.11, abs=0.01)
    assert theory.bits_per_param_mlp(0.35, "M=N") == pytest.approx(2.06, abs=0.01)
    assert theory.bits_per_param_mlp(1.2, "M=32") == pytest.approx(5 / 2.4)
    # the authors' Fig. 4 right frontier at 1024 facts: attention >= 1280, attn/2 + MLP = 2300
    assert theory.attention_params_for_facts(1024) == pytest.approx(4600)
    assert theory.mlp_params_for_facts(1024) == pytest.approx(1660)
    f = theory.authors_frontier_mlp([1000, 1280, 2000, 5000], 1024)
    assert np.isinf(f[0]) and f[1] == pytest.approx(1660) and f[2] == pytest.approx(1300) and f[3] == 0


def test_eos_transformer_matches_core_model():
    rng = np.random.default_rng(3)
    task = rc.make_facts(5, 4, 3, rng, T=7)
    d, H, dh, m = 6, 3, 2, 5
    fixed = {"E": rc.embeddings(task["vocab"], d, rng), "U": rc.embeddings(task["n_answers"], d, rng),
             "eos": task["eos"]}
    params = rc.init_transformer(d, H, dh, m, rng)
    params["b1"] = rng.standard_normal(m)                 # non-zero, so the relu mask is mixed
    x, _ = rc.sample_facts(task, 11, rng)
    ref, ref_cache = rc.transformer_forward(params, fixed, x)
    out, cache = train.eos_transformer_forward(params, fixed, x)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(ref.shape)
    ref_grads, grads = rc.transformer_backward(g, ref_cache), train.eos_transformer_backward(g, cache)
    assert set(grads) == set(ref_grads)
    for k in ref_grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_linear_memory_lr_1000_is_finite_and_learns():
    t = train.linear_memory_trial(20, 8, seed=0, lr=1000.0, steps=300)
    assert t["first100"] is not None and t["first99"] <= t["first100"]
    far = train.linear_memory_trial(60, 8, seed=0, lr=1000.0, steps=100)   # d^2 = 0.26 N ln N
    assert far["first99"] is None and far["best"] < 0.99   # raises if W had gone non-finite


def _plotted_json(path):
    with open(os.path.splitext(str(path))[0] + ".json") as f:
        return json.load(f)


def test_linear_tiny_run_and_figure(tmp_path):
    cfgs = [dict(c, steps=300) for c in train.linear_configs("small", 0) if c["d"] in (8, 11)][:4]
    recs = train.sweep("linear", cfgs, train.run_linear_one, str(tmp_path), 1)
    for r in recs:
        res = r["result"]
        assert res["cap99"] >= res["cap100"] > res["hebb100"] >= 2   # training beats Hebbian
        assert r["config"]["seed"] in (0, 1, 2) and r["seconds"] >= 0
    mtimes = [os.path.getmtime(p) for p in (tmp_path / "linear").iterdir()]
    train.sweep("linear", cfgs, train.run_linear_one, str(tmp_path), 1)   # resumes: no rerun
    assert mtimes == [os.path.getmtime(p) for p in (tmp_path / "linear").iterdir()]
    path = plots.plot_linear(str(tmp_path), str(tmp_path / "linear.png"))
    assert os.path.exists(path)
    shown = _plotted_json(path)
    ds = sorted({c["d"] for c in cfgs})
    assert shown["plotted"]["cap99"][0] == [float(d * d) for d in ds]
    for d, y in zip(ds, shown["plotted"]["cap99"][1]):
        assert y == pytest.approx(np.mean([r["result"]["cap99"] for r in recs if r["config"]["d"] == d]))
    assert shown["fits"]["cap99"]["c"] == pytest.approx(train.linear_fits(recs)["cap99"]["c"])


def test_mlp_tiny_run_and_figure(tmp_path):
    cfgs = [dict(c, steps=400) for c in train.mlp_configs("small", 0)
            if c["d"] == 8 and c["alpha"] in (1, 2)]
    recs = train.sweep("mlp", cfgs, train.run_mlp_one, str(tmp_path), 1)
    for regime in ("M=N", "M=32"):
        caps = [r["result"]["cap99"] for r in sorted(recs, key=lambda r: r["config"]["alpha"])
                if r["config"]["regime"] == regime]
        assert len(caps) == 2 and caps[1] > caps[0]          # wider MLP stores more
    path = plots.plot_mlp(str(tmp_path), str(tmp_path / "mlp.png"))
    shown = _plotted_json(path)
    r = next(r for r in recs if r["config"]["regime"] == "M=32" and r["config"]["alpha"] == 2)
    assert shown["plotted"]["M=32 alpha=2"] == [[float(r["result"]["md"])], [float(r["result"]["cap99"])]]
    assert set(shown["fits"]) == {"M=N", "M=32"} and shown["fits"]["M=32"]["c"] > 0


def test_facts_tiny_run_and_figure(tmp_path):
    cfg = {"d": 8, "H": 2, "dh": 4, "m": 8, "a": 1, "b": 1, "D": 4, "T": 6, "lrs": [3e-2],
           "steps": 150, "batch": 64, "eval_every": 25, "patience": 100, "n_test": 256,
           "prompts_per_fact": 2, "lo": 2, "hi": 4, "seed": 0}
    recs = train.sweep("facts", [cfg, dict(cfg, m=16)], train.run_facts_one, str(tmp_path), 1)
    for r in recs:
        res = r["result"]
        assert res["params"] == theory.transformer_params(8, 2, 4, r["config"]["m"])
        assert 2 <= res["S_all"] <= res["S_fresh99"] <= 4
        assert res["facts_fresh99"] == res["S_fresh99"] ** 2
    path = plots.plot_facts(str(tmp_path), str(tmp_path / "facts.png"))
    shown = _plotted_json(path)
    assert shown["plotted"]["facts_all"] == [[float(r["result"]["params"]) for r in recs],
                                             [float(r["result"]["facts_all"]) for r in recs]]


def test_tradeoff_frontier_and_tiny_run(tmp_path):
    fake = [{"result": {"attn_params": a, "mlp_params": m, "fresh_acc": acc}}
            for a, m, acc in [(10, 1, 0.5), (10, 4, 0.995), (10, 16, 1.0), (20, 1, 0.99), (20, 4, 1.0),
                              (5, 1, 0.1), (5, 4, 0.2)]]
    assert train.tradeoff_frontier(fake) == [(5, None), (10, 4), (20, 1)]
    base = {"d": 8, "dh": 2, "S": 3, "D": 4, "T": 6, "lrs": [3e-2], "steps": 100, "batch": 64,
            "eval_every": 25, "patience": None, "n_test": 256, "prompts_per_fact": 2, "seed": 0}
    cfgs = [dict(base, H=H, m=m) for H in (1, 2) for m in (2, 8)]
    recs = train.sweep("tradeoff", cfgs, train.run_tradeoff_one, str(tmp_path), 1)
    assert all(0 <= r["result"]["fresh_acc"] <= 1 and r["result"]["facts"] == 9 for r in recs)
    path = plots.plot_tradeoff(str(tmp_path), str(tmp_path / "tradeoff.png"))
    shown = _plotted_json(path)["plotted"]
    assert shown["attn"] == [16, 32] and shown["mlp"] == [16, 64]
    for r in recs:
        res = r["result"]
        i, j = shown["mlp"].index(res["mlp_params"]), shown["attn"].index(res["attn_params"])
        assert shown["acc"][i][j] == res["fresh_acc"]


def test_plots_use_one_scale_and_drop_stale_records():
    cur = train.linear_configs("small", 0)[:2]
    stale = dict(cur[0], steps=7)                         # a config the code no longer builds
    full = train.linear_configs("full", 0)[0]
    recs = [{"config": c} for c in cur + [stale]]
    assert [r["config"] for r in plots._one_scale(recs, train.linear_configs)] == cur
    assert [r["config"] for r in plots._one_scale(recs + [{"config": full}])] == [full]


# ----------------------------------------------------------------------------- paper B experiments
