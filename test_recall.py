"""Tests: gradients against centred finite differences, naive oracles, tasks, theory, runs.

Run with `make test` (it creates .venv and installs requirements.txt first).
"""
import json
import math
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

def rel_error(a, b):
    """Relative error of two tensors: ||a - b|| / (||a|| + ||b||)."""
    return np.linalg.norm(a - b) / max(1e-12, np.linalg.norm(a) + np.linalg.norm(b))


def numerical_grads(forward, params, fixed, inputs, G, h=1e-6):
    """Centred finite differences of f(params) = sum(logits * G) for every parameter entry."""
    num = {}
    for k, p in params.items():
        g = np.zeros_like(p)
        for i in np.ndindex(p.shape):
            old = p[i]
            p[i] = old + h
            fp = (forward(params, fixed, inputs)[0] * G).sum()
            p[i] = old - h
            fm = (forward(params, fixed, inputs)[0] * G).sum()
            p[i] = old
            g[i] = (fp - fm) / (2 * h)
        num[k] = g
    return num


def check_grads(forward, backward, params, fixed, inputs, rng, tol=1e-6):
    logits, cache = forward(params, fixed, inputs)
    G = rng.standard_normal(logits.shape)          # random, non-uniform upstream gradient
    grads = backward(G, cache)
    assert set(grads) == set(params)
    num = numerical_grads(forward, params, fixed, inputs, G)
    for k in params:
        assert grads[k].shape == params[k].shape, k
        assert np.linalg.norm(num[k]) > 1e-6, f"{k}: gradient is ~0, the check would be vacuous"
        err = rel_error(grads[k], num[k])
        assert err < tol, f"{k}: relative error {err:.2e}"


def small_models(rng):
    """(name, forward, backward, params, fixed, inputs, labels) for every model, tiny sizes,
    non-degenerate random parameters (zero init can hide a wrong backward)."""
    n = rng.standard_normal
    out = []
    E, U = rc.embeddings(7, 5, rng), rc.embeddings(6, 5, rng)
    x = rng.integers(0, 7, 9)
    out.append(("linear_memory", rc.linear_memory_forward, rc.linear_memory_backward,
                {"W": n((5, 5))}, {"E": E, "U": U}, x, x % 6))
    out.append(("mlp_memory", rc.mlp_memory_forward, rc.mlp_memory_backward,
                {"W1": n((5, 4)), "b1": n(4), "W2": n((4, 5))}, {"E": E, "U": U}, x, x % 6))
    task = rc.make_facts(3, 2, 2, rng, T=6)
    fixed = {"E": rc.embeddings(task["vocab"], 6, rng), "U": rc.embeddings(task["n_answers"], 6, rng)}
    p = rc.init_transformer(6, 2, 3, 4, rng)
    p["b1"] = n(4)
    tok, y = rc.sample_facts(task, 5, rng)
    out.append(("transformer", rc.transformer_forward, rc.transformer_backward, p, fixed, tok, y))
    out.append(("linear_attention", rc.linear_attention_forward, rc.linear_attention_backward,
                {"A": n((6, 6)), "WV": n((6, 4))}, {"E": fixed["E"]}, tok, y))
    for m in (None, 7):
        t = rc.make_retrieval(10, 6, 5, rng, m=m)
        tok, pos, lab = rc.sample_retrieval(t, 8, rng)
        out.append((f"retrieval(m={m})", rc.retrieval_forward, rc.retrieval_backward,
                    {"WKQ": n((6, 6)), "WV": n((6 if m is None else m, 6))},
                    rc.retrieval_fixed(t), (tok, pos), lab))
    return out


MODEL_NAMES = ["linear_memory", "mlp_memory", "transformer", "linear_attention",
               "retrieval(m=None)", "retrieval(m=7)"]


@pytest.mark.parametrize("which", range(len(MODEL_NAMES)), ids=MODEL_NAMES)
def test_gradients_at_random_point_and_after_training(which):
    rng = np.random.default_rng(1)
    name, fwd, bwd, params, fixed, inputs, y = small_models(rng)[which]
    check_grads(fwd, bwd, params, fixed, inputs, rng)
    state = train.adam_init(params)
    for _ in range(3):                               # a few real optimizer steps, then again
        logits, cache = fwd(params, fixed, inputs)
        _, dlogits = rc.cross_entropy(logits, y)
        train.adam_step(params, bwd(dlogits, cache), state, lr=0.05)
    check_grads(fwd, bwd, params, fixed, inputs, rng)


def test_cross_entropy_gradient_and_stability():
    rng = np.random.default_rng(2)
    logits, y = rng.standard_normal((4, 5)), np.array([0, 3, 4, 1])
    loss, dl = rc.cross_entropy(logits, y)
    num = np.zeros_like(logits)
    for i in np.ndindex(logits.shape):
        e = np.zeros_like(logits)
        e[i] = 1e-6
        num[i] = (rc.cross_entropy(logits + e, y)[0] - rc.cross_entropy(logits - e, y)[0]) / 2e-6
    assert rel_error(dl, num) < 1e-7
    huge = np.array([[1e6, -1e6, 0.0], [-3e8, 2e8, 2e8]])
    loss, dl = rc.cross_entropy(huge, np.array([1, 2]))
    assert np.isfinite(loss) and np.isfinite(dl).all()
    assert loss == pytest.approx((2e6 + np.log(2)) / 2)


def naive_transformer(params, E, U, tokens):
    """Loop-by-loop oracle of the transformer forward pass (tests only)."""
    H, d, dh = params["WQ"].shape
    B, T = tokens.shape
    out = np.zeros((B, len(U)))
    for b in range(B):
        heads = []
        for h in range(H):
            q = E[tokens[b, -1]] @ params["WQ"][h]
            scores = np.array([(E[tokens[b, t]] @ params["WK"][h]) @ q / np.sqrt(dh) for t in range(T)])
            a = np.exp(scores - scores.max())
            a /= a.sum()
            heads.append(sum(a[t] * (E[tokens[b, t]] @ params["WV"][h]) for t in range(T)))
        x = np.concatenate(heads) @ params["WO"]
        y = x + np.maximum(x @ params["W1"] + params["b1"], 0) @ params["W2"]
        out[b] = [y @ U[j] for j in range(len(U))]
    return out


def naive_retrieval(params, fixed, tokens, pos):
    """Loop-by-loop oracle of the retrieval forward pass (tests only)."""
    N, L = tokens.shape
    out = []
    for n in range(N):
        h = [fixed["E"][tokens[n, i]] + (fixed["z_trig"] if i == pos[n] else 0) for i in range(L)]
        s = np.array([h[i] @ params["WKQ"] @ fixed["z_eos"] for i in range(L)])
        a = np.exp(s - s.max())
        a /= a.sum()
        phi = sum(a[i] * h[i] for i in range(L))
        g = phi if "W_mlp" not in fixed else np.maximum(phi @ fixed["W_mlp"], 0)
        out.append(g @ params["WV"] @ fixed["U"].T)
    return np.array(out)


def test_transformer_matches_naive_loops():
    rng = np.random.default_rng(3)
    task = rc.make_facts(4, 3, 2, rng, T=7)
    E, U = rc.embeddings(task["vocab"], 8, rng), rc.embeddings(task["n_answers"], 8, rng)
    p = rc.init_transformer(8, 3, 2, 5, rng)
    p["b1"] = rng.standard_normal(5)
    tok, _ = rc.sample_facts(task, 6, rng)
    logits, _ = rc.transformer_forward(p, {"E": E, "U": U}, tok)
    np.testing.assert_allclose(logits, naive_transformer(p, E, U, tok), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("m", [None, 9])
def test_retrieval_matches_naive_loops(m):
    rng = np.random.default_rng(4)
    t = rc.make_retrieval(12, 6, 5, rng, m=m)
    tok, pos, _ = rc.sample_retrieval(t, 7, rng)
    p = {"WKQ": rng.standard_normal((6, 6)) * 3, "WV": rng.standard_normal((6 if m is None else m, 6))}
    fixed = rc.retrieval_fixed(t)
    logits, _ = rc.retrieval_forward(p, fixed, (tok, pos))
    np.testing.assert_allclose(logits, naive_retrieval(p, fixed, tok, pos), rtol=1e-10, atol=1e-12)


def test_facts_task_structure_and_determinism():
    rng = np.random.default_rng(5)
    task = rc.make_facts(6, 3, 4, rng, T=9)
    S, R, T = 6, 3, 9
    assert task["vocab"] == 2 * (S + R) + 1 and task["eos"] == 2 * (S + R) and task["n_answers"] == 12
    assert ((task["table"] // 4) == np.arange(R)[None, :]).all()      # answers in relation's block
    tok, y = rc.sample_facts(task, 500, rng)
    assert tok.shape == (500, T) and (tok[:, -1] == task["eos"]).all()
    body = tok[:, :-1]
    is_s, is_r = body < S, (body >= S) & (body < S + R)
    assert (is_s.sum(1) == 1).all() and (is_r.sum(1) == 1).all()
    assert (body[~(is_s | is_r)] >= S + R).all() and (body < task["eos"]).all()
    s, r = body[is_s], body[is_r] - S
    assert (y == task["table"][s, r]).all()
    assert len(np.unique(np.argmax(is_s, 1))) == T - 1                # every position in [0, T-2]
    a = rc.sample_facts(task, 50, np.random.default_rng(9))
    b = rc.sample_facts(task, 50, np.random.default_rng(9))
    assert all((u == v).all() for u, v in zip(a, b))
    structured = rc.make_facts(16, 4, 8, rng, structured=True)["table"]
    assert (structured == np.arange(16)[:, None] // 2 + 8 * np.arange(4)[None, :]).all()
    tok, y = rc.sample_facts(task, 6, rng, subjects=np.arange(6), relations=np.full(6, 2))
    assert (y == task["table"][:, 2]).all()


def test_retrieval_task_structure_and_determinism():
    rng = np.random.default_rng(6)
    t = rc.make_retrieval(20, 8, 6, rng, m=5)
    assert t["E"].shape == (20, 8) and t["U"].shape == (20, 8) and t["W_mlp"].shape == (8, 5)
    assert sorted(t["perm"]) == list(range(20))
    tok, pos, lab = rc.sample_retrieval(t, 300, rng)
    assert tok.shape == (300, 6) and tok.min() >= 0 and tok.max() < 20
    assert pos.min() >= 0 and pos.max() < 6
    assert (lab == t["perm"][tok[np.arange(300), pos]]).all()
    u = rc.make_retrieval(20, 8, 6, np.random.default_rng(3))
    v = rc.make_retrieval(20, 8, 6, np.random.default_rng(3))
    assert all(np.array_equal(u[k], v[k]) for k in ("E", "U", "z_trig", "z_eos", "perm"))
    o = rc.make_retrieval(20, 22, 6, rng, kind="onehot")
    H = np.vstack([o["E"], o["z_trig"], o["z_eos"]])
    np.testing.assert_array_equal(H @ H.T, np.eye(22))                # fully orthogonal control


def test_embeddings_kinds():
    rng = np.random.default_rng(7)
    G = rc.embeddings(4000, 50, rng)
    assert abs(G.var() - 1 / 50) < 2e-3
    S = rc.embeddings(30, 10, rng, "sphere")
    np.testing.assert_allclose(np.linalg.norm(S, axis=1), 1.0)
    np.testing.assert_array_equal(rc.embeddings(3, 5, rng, "onehot"), np.eye(3, 5))


def test_loss_at_zero_value_weights_is_log_classes():
    rng = np.random.default_rng(8)
    for name, fwd, bwd, params, fixed, inputs, y in small_models(rng):
        zero = {"linear_memory": "W", "mlp_memory": "W2", "transformer": "WV",
                "linear_attention": "WV"}.get(name, "WV")
        params[zero] = np.zeros_like(params[zero])
        if name == "transformer":
            params["b1"] = np.zeros_like(params["b1"])   # x = 0 and relu(0) = 0 => logits = 0
        logits, _ = fwd(params, fixed, inputs)
        loss, _ = rc.cross_entropy(logits, y)
        assert loss == pytest.approx(np.log(logits.shape[1]), abs=1e-12), name


def test_adam_lr_1000_linear_memory_stays_finite_and_learns():
    rng = np.random.default_rng(9)
    E, U = rc.embeddings(24, 16, rng, "sphere"), rc.embeddings(24, 16, rng, "sphere")
    params, x = {"W": np.zeros((16, 16))}, np.arange(24)
    state = train.adam_init(params)
    for _ in range(200):
        logits, cache = rc.linear_memory_forward(params, {"E": E, "U": U}, x)
        loss, dl = rc.cross_entropy(logits, x)
        train.adam_step(params, rc.linear_memory_backward(dl, cache), state, lr=1000.0)
    assert np.isfinite(params["W"]).all() and np.isfinite(loss)
    assert rc.accuracy(logits, x) == 1.0                # d^2 = 256 > 2 N ln N = 153: fits


def test_adam_and_sgd_steps_by_hand():
    p, g = {"w": np.array([1.0, -2.0])}, {"w": np.array([0.5, -4.0])}
    train.sgd_step(p, g, 0.1)
    np.testing.assert_allclose(p["w"], [0.95, -1.6])
    p = {"w": np.array([1.0, -2.0])}
    state = train.adam_init(p)
    train.adam_step(p, g, state, lr=0.1)                # first step: m_hat/sqrt(v_hat) = sign(g)
    np.testing.assert_allclose(p["w"], [1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 4 / (4 + 1e-8)])


def test_bisect_capacity_finds_threshold():
    calls = []
    def ok(n):
        calls.append(n)
        return n <= 137
    assert train.bisect_capacity(ok, 10, 1000, ratio=1.0) == 137
    assert train.bisect_capacity(lambda n: n <= 5, 10, 1000) == 10       # even lo fails
    assert train.bisect_capacity(lambda n: True, 10, 1000) == 1000
    got = train.bisect_capacity(lambda n: n <= 500, 10, 1000, ratio=1.05)
    assert 500 / 1.05 <= got <= 500
    seen = []
    twice, cache = train.memoised(lambda n: seen.append(n) or 2 * n)
    assert [twice(3), twice(3), twice(4)] == [6, 6, 8] and seen == [3, 4] and cache == {3: 6, 4: 8}


def test_fig5_relation_is_learned_before_subject():
    cfg = train.fig5_config(steps=4800, eval_every=100)
    cfg.update(batch=256, n_test=1024)                 # reduced batch: same dynamics, 4x cheaper
    c = train.run_fig5_one(cfg)
    step, rel, sub = map(np.asarray, (c["step"], c["relation"], c["subject"]))
    t_rel = step[np.argmax(rel < np.log(4) / 2)] if (rel < np.log(4) / 2).any() else None
    t_sub = step[np.argmax(sub < np.log(8) / 2)] if (sub < np.log(8) / 2).any() else None
    assert t_rel is not None and t_sub is not None, (t_rel, t_sub)
    assert t_rel + 500 < t_sub                            # a hallucination stage in between
    mid = (step > t_rel + 200) & (step < (t_rel + t_sub) / 2)      # first half of the stage
    np.testing.assert_allclose(np.asarray(c["total"])[mid], np.log(8), atol=0.1)


def test_fig5_figure_renders(tmp_path):
    cfg = train.fig5_config(steps=40, eval_every=10)
    cfg.update(batch=64, n_test=128)
    rec = {"experiment": "fig5", "config": cfg, "result": train.run_fig5_one(cfg), "seconds": 0}
    train.save_json(str(tmp_path / "fig5" / "x.json"), rec)
    path = plots.plot_fig5(str(tmp_path), str(tmp_path / "f.png"))
    assert os.path.getsize(path) > 10000


@pytest.mark.parametrize("call, word", [
    (lambda: rc.embeddings(5, 3, np.random.default_rng(), "onehot"), "d >= n"),
    (lambda: rc.embeddings(5, 0, np.random.default_rng()), "d"),
    (lambda: rc.embeddings(5, 3, np.random.default_rng(), "cube"), "kind"),
    (lambda: rc.make_facts(0, 2, 2, np.random.default_rng()), "S"),
    (lambda: rc.make_facts(2, 2, 2, np.random.default_rng(), T=2), "T"),
    (lambda: rc.make_retrieval(10, 4, 1, np.random.default_rng()), "L"),
    (lambda: rc.make_retrieval(10, 4, 3, np.random.default_rng(), kind="onehot"), "d >= n"),
    (lambda: rc.init_transformer(8, 2, 0, 4, np.random.default_rng()), "dh"),
    (lambda: rc.cross_entropy(np.zeros((2, 3)), np.array([0, 3])), "y"),
    (lambda: rc.linear_memory_forward({"W": np.zeros((3, 3))},
                                      {"E": np.eye(4, 3), "U": np.eye(4, 3)}, np.array([0, 4])), "x"),
    (lambda: rc.linear_memory_forward({"W": np.zeros((2, 3))},
                                      {"E": np.eye(4, 3), "U": np.eye(4, 3)}, np.array([0])), "W"),
    (lambda: train.bisect_capacity(lambda n: True, 0, 5), "lo"),
])
def test_bad_inputs_raise_value_error_with_message(call, word):
    with pytest.raises(ValueError, match=word):
        call()


def run_cli(*args, cwd=HERE):
    return subprocess.run([sys.executable, os.path.join(HERE, "train.py"), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=60)


@pytest.mark.parametrize("args", [["nonsense"], ["fig5", "--steps", "-3"], ["fig5", "--bogus"],
                                  ["fig5", "--jobs", "two"], []])
def test_cli_bad_option_exits_2_with_one_line(args):
    r = run_cli(*args)
    assert r.returncode == 2, r
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cli_help_lists_experiments():
    r = run_cli("--help")
    assert r.returncode == 0 and "fig5" in r.stdout
    r = run_cli("fig5", "--help")
    assert r.returncode == 0 and "--steps" in r.stdout and "--jobs" in r.stdout


def test_cli_runs_fig5_and_writes_record(tmp_path):
    r = run_cli("fig5", "--steps", "20", "--out", str(tmp_path), "--seed", "3")
    assert r.returncode == 0, r.stderr
    (rec,) = train.load_records(str(tmp_path), "fig5")
    assert rec["config"]["seed"] == 3 and rec["config"]["steps"] == 20
    assert len(rec["result"]["total"]) == 2 and rec["seconds"] >= 0


def _tiny_fig5(seed):
    cfg = train.fig5_config(steps=30, seed=seed, eval_every=10)
    cfg.update(batch=32, n_test=64)
    return cfg


def _interrupt_at_seed_2(cfg):
    if cfg["seed"] == 2:
        raise KeyboardInterrupt
    return train.run_fig5_one(cfg)


def test_sweep_resumes_without_recomputing(tmp_path):
    configs = [_tiny_fig5(s) for s in range(4)]
    with pytest.raises(KeyboardInterrupt):          # interrupted after k = 2 configurations
        train.sweep("fig5", configs, _interrupt_at_seed_2, str(tmp_path))
    done = train.load_records(str(tmp_path), "fig5")
    assert sorted(r["config"]["seed"] for r in done) == [0, 1]
    before = {f: os.path.getmtime(tmp_path / "fig5" / f) for f in os.listdir(tmp_path / "fig5")}
    seen = []
    def fn(cfg):
        seen.append(cfg["seed"])
        return train.run_fig5_one(cfg)
    records = train.sweep("fig5", configs, fn, str(tmp_path))
    assert seen == [2, 3]                           # the finished two were not recomputed
    assert [r["config"]["seed"] for r in records] == [0, 1, 2, 3]
    assert all(os.path.getmtime(tmp_path / "fig5" / f) == t for f, t in before.items())
    assert not [f for f in os.listdir(tmp_path / "fig5") if ".tmp" in f]


def test_sweep_results_identical_for_jobs_1_and_2(tmp_path):
    configs = [_tiny_fig5(s) for s in range(3)]
    one = train.sweep("fig5", configs, train.run_fig5_one, str(tmp_path / "a"), jobs=1)
    two = train.sweep("fig5", configs, train.run_fig5_one, str(tmp_path / "b"), jobs=2)
    assert [r["result"] for r in one] == [r["result"] for r in two]
    assert len({json.dumps(r["result"]) for r in one}) == 3   # seeds differ, so results differ


def test_cli_list_and_only(tmp_path):
    r = run_cli("fig5", "--steps", "10", "--out", str(tmp_path), "--list")
    assert r.returncode == 0 and r.stdout.startswith("0\ttodo\t")
    r = run_cli("fig5", "--steps", "10", "--out", str(tmp_path), "--only", "0")
    assert r.returncode == 0 and len(train.load_records(str(tmp_path), "fig5")) == 1
    r = run_cli("fig5", "--steps", "10", "--out", str(tmp_path), "--list")
    assert r.stdout.startswith("0\tdone\t")
    r = run_cli("fig5", "--out", str(tmp_path), "--only", "5")
    assert r.returncode == 2 and "--only" in r.stderr


# ----------------------------------------------------------------------------- paper A experiments



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
    assert theory.transformer_params(32, 8, 4, 32) == 4 * 8 * 4 * 32 + 2 * 32 * 32   # 6144
    assert theory.map_bits(16, 8) == pytest.approx(48.0)                           # 16 * 3
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
    f = theory.authors_frontier_mlp([1000, 1280, 2000, 5000], 1024)
    assert np.isinf(f[0]) and f[1] == pytest.approx(1660) and f[2] == pytest.approx(1300) and f[3] == 0


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


def test_facts_tiny_scale_runs_in_single_precision_and_plots(tmp_path, monkeypatch):
    for name in ("fig5", "facts", "tradeoff"):      # single precision by default
        assert train.build_parser().parse_args([name]).dtype == "float32"
    cfgs = train.facts_configs("tiny", 0)
    assert [c["d"] for c in cfgs] == [20, 16] and {c["dtype"] for c in cfgs} == {"float32"}
    assert {c["dtype"] for c in train.facts_configs("tiny", 0, "float64")} == {"float64"}
    seen = set()
    real = rc.transformer_forward
    def spy(params, fixed, tokens):
        seen.add((params["WQ"].dtype, fixed["E"].dtype))
        return real(params, fixed, tokens)
    monkeypatch.setattr(rc, "transformer_forward", spy)
    recs = train.run_facts(str(tmp_path), scale="tiny")
    assert seen == {(np.dtype("float32"), np.dtype("float32"))}
    for r in recs:
        res, c = r["result"], r["config"]
        assert res["params"] == theory.transformer_params(c["d"], c["H"], c["dh"], c["m"])
        assert c["lo"] <= res["S_all"] <= res["S_fresh99"] <= c["hi"]
        assert res["facts_fresh99"] == res["S_fresh99"] ** 2
        assert res["lo_fails"] == (not res["trials"][0]["fresh99"])   # trials sorted by S
    path = plots.plot_facts(str(tmp_path), str(tmp_path / "facts.png"))
    P, F = _plotted_json(path)["plotted"]["facts_all"]
    assert sorted(zip(P, F)) == sorted((r["result"]["params"], r["result"]["facts_all"]) for r in recs)


def test_tradeoff_frontier_fits_and_tiny_run(tmp_path):
    fake = [{"result": {"attn_params": a, "mlp_params": m, "fresh_acc": acc, "facts": 10}}
            for a, m, acc in [(10, 1, 0.5), (10, 4, 0.995), (10, 16, 1.0), (20, 1, 0.99), (20, 4, 1.0),
                              (5, 1, 0.1), (5, 4, 0.2)]]
    assert train.tradeoff_frontier(fake) == [(5, None), (10, 4), (20, 1)]
    fit = train.tradeoff_fits(fake)["frontier"]
    # attn / ca + mlp / cm = 10 through (10, 4) and (20, 1): 1/ca = 3/7, 1/cm = 10/7
    assert fit["attn_params_per_fact"] == pytest.approx(7 / 3)
    assert fit["mlp_params_per_fact"] == pytest.approx(0.7)
    assert fit["monotone"] == 1.0
    fake.append({"result": {"attn_params": 40, "mlp_params": 4, "fresh_acc": 1.0, "facts": 10}})
    fake.append({"result": {"attn_params": 40, "mlp_params": 1, "fresh_acc": 0.5, "facts": 10}})
    assert train.tradeoff_fits(fake)["frontier"]["monotone"] == 0.0
    recs = train.run_tradeoff(str(tmp_path), scale="tiny")
    assert len(recs) == 4 and all(r["config"]["dtype"] == "float32" for r in recs)
    for r in recs:    # each cell reports its best learning rate
        assert r["result"]["fresh_acc"] == max(u["fresh_acc"] for u in r["result"]["runs"])
    path = plots.plot_tradeoff(str(tmp_path), str(tmp_path / "tradeoff.png"))
    shown = _plotted_json(path)["plotted"]
    assert shown["attn"] == [64, 256] and shown["mlp"] == [16, 128]
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
