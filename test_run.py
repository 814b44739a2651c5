"""Tests of the runner and the command line: records, resume, --jobs, --set, --list,
--only, and which record set a figure draws.

Run with `make test` (it creates .venv and installs requirements.txt first)."""
import ast
import json
import os
import subprocess
import sys

import matplotlib.pyplot as plt
import pytest

import paper_a
import paper_b
import plots
import run
import theory

HERE = os.path.dirname(os.path.abspath(__file__))


def run_cli(*args, cwd=HERE):
    return subprocess.run([sys.executable, os.path.join(HERE, "run.py"), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=60)



@pytest.mark.parametrize("args", [["nonsense"], ["fig5", "--set", "steps=-3"], ["fig5", "--bogus"],
                                  ["fig5", "--jobs", "two"], ["b_scaling", "--set", "draws=1"], []])
def test_cli_bad_option_exits_2_with_one_line(args):
    r = run_cli(*args)
    assert r.returncode == 2, r
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr



def test_cli_unquoted_set_value_with_spaces_gets_the_quoting_hint():
    r = run_cli("b_agree", "--list", "--set", 'hidden=[{"V":', "64}]")      # as a shell splits it
    assert r.returncode == 2 and "in single quotes" in r.stderr, r.stderr
    r = run_cli("fig5", "--bogus")
    assert r.returncode == 2 and "quote" not in r.stderr, r.stderr



def test_cli_help_lists_experiments():
    r = run_cli("--help")
    assert r.returncode == 0 and "fig5" in r.stdout
    r = run_cli("fig5", "--help")
    assert r.returncode == 0 and "--set" in r.stdout and "--jobs" in r.stdout



def test_cli_runs_fig5_and_writes_record(tmp_path):
    r = run_cli("fig5", "--set", "steps=20", "--out", str(tmp_path), "--seed", "3",
                "--set", "seeds=1")
    assert r.returncode == 0, r.stderr
    (rec,), listed = run.load_records(str(tmp_path), "fig5")
    assert rec["config"]["seed"] == 3 and rec["config"]["steps"] == 20
    assert len(rec["result"]["total"]) == 2 and rec["seconds"] >= 0
    assert listed["scale"] == "small" and listed["set"] == {"steps": 20, "seeds": 1}
    assert r.stdout.startswith("fig5 seed 3: plateau until step None")   # the summary's line



def _tiny_fig5(seed):
    return dict(paper_a.FIG5["small"], steps=30, eval_every=10, batch=32, n_test=64, seed=seed)



def _interrupt_at_seed_2(cfg):
    if cfg["seed"] == 2:
        raise KeyboardInterrupt
    return paper_a.fig5_one(cfg)



def test_sweep_resumes_without_recomputing(tmp_path):
    configs = [_tiny_fig5(s) for s in range(4)]
    with pytest.raises(KeyboardInterrupt):          # interrupted after k = 2 configurations
        run.sweep("fig5", configs, _interrupt_at_seed_2, str(tmp_path))
    done, _ = run.load_records(str(tmp_path), "fig5")
    assert sorted(r["config"]["seed"] for r in done) == [0, 1]
    before = {f: os.path.getmtime(f) for f in (tmp_path / "fig5").glob("[!_]*")}   # records
    seen = []

    def fn(cfg):
        seen.append(cfg["seed"])
        return paper_a.fig5_one(cfg)
    records = run.sweep("fig5", configs, fn, str(tmp_path))
    assert seen == [2, 3]                           # the finished two were not recomputed
    assert [r["config"]["seed"] for r in records] == [0, 1, 2, 3]
    assert all(os.path.getmtime(f) == t for f, t in before.items())
    assert not [f for f in os.listdir(tmp_path / "fig5") if ".tmp" in f]



def test_sweep_results_identical_for_jobs_1_and_2(tmp_path):
    configs = [_tiny_fig5(s) for s in range(3)]
    one = run.sweep("fig5", configs, paper_a.fig5_one, str(tmp_path / "a"), jobs=1)
    two = run.sweep("fig5", configs, paper_a.fig5_one, str(tmp_path / "b"), jobs=2)
    assert [r["result"] for r in one] == [r["result"] for r in two]
    assert len({json.dumps(r["result"]) for r in one}) == 3   # seeds differ, so results differ



def test_cli_list_and_only(tmp_path):
    r = run_cli("fig5", "--set", "steps=10", "--out", str(tmp_path), "--list")
    assert r.returncode == 0 and r.stdout.startswith("0\ttodo\t")
    r = run_cli("fig5", "--set", "steps=10", "--out", str(tmp_path), "--only", "0")
    assert r.returncode == 0 and len(run.load_records(str(tmp_path), "fig5")[0]) == 1
    assert "configuration 0 done; a run without --only runs the others" in r.stdout
    r = run_cli("fig5", "--set", "steps=10", "--out", str(tmp_path), "--list")
    assert r.stdout.startswith("0\tdone\t")
    r = run_cli("fig5", "--set", "steps=10", "--out", str(tmp_path), "--only", "0")
    assert r.returncode == 0 and "fig5: nothing to run" in r.stderr       # says it, not silent
    r = run_cli("fig5", "--out", str(tmp_path), "--only", "5")
    assert r.returncode == 2 and "--only" in r.stderr



def test_every_experiment_lists_its_configs_without_running(tmp_path, capsys):
    """--list prints one line per configuration and runs nothing, at every scale; the configs
    are made from the grid alone (nothing runs to find them)."""
    for name, e in run.experiments().items():
        for scale in run.SCALES:
            run.main([name, "--scale", scale, "--out", str(tmp_path), "--list"])
            lines = capsys.readouterr().out.splitlines()
            assert lines and all(line.split("\t")[1] == "todo" for line in lines), name
            grid = e["grid"].get(scale, e["grid"]["small"])
            assert len(lines) == len(run.unique(e["configs"](grid, 0))), name
        assert not list(tmp_path.glob(f"{name}/*.json")), name      # nothing ran



def test_set_overrides_fields_and_the_fields_computed_from_them():
    r = run_cli("linear", "--scale", "tiny", "--set", "d=24", "--set", "lr=500", "--list")
    cfgs = [json.loads(line.split("\t")[2]) for line in r.stdout.splitlines()]
    assert r.returncode == 0 and len(cfgs) == 2                  # 3 d x 2 seeds -> 1 d x 2 seeds
    assert cfgs == paper_a.linear_configs(dict(paper_a.LINEAR["tiny"], d=[24], lr=500.0), 0)
    assert cfgs[0]["hi"] == int(theory.linear_capacity_N(24, 0.8)) + 1    # bracket from d = 24
    r = run_cli("mlp", "--scale", "tiny", "--set", "M=none", "--set", "alpha=2", "--list")
    cfgs = [json.loads(line.split("\t")[2]) for line in r.stdout.splitlines()]
    assert {(c["d"], c["alpha"], c["M"], c["regime"]) for c in cfgs} == {(8, 2, None, "M=N")}
    r = run_cli("b_embed", "--scale", "tiny", "--set", "V=16", "--list")   # one-hot d = V + 2
    cfgs = [json.loads(line.split("\t")[2]) for line in r.stdout.splitlines()]
    assert [(c["kind"], c["d"]) for c in cfgs] == [("onehot", 18), ("gaussian", 4),
                                                   ("gaussian", 8), ("gaussian", 18)]
    r = run_cli("b_literal", "--scale", "tiny", "--set", "Lmax=16", "--list")   # every panel's
    assert {json.loads(line.split("\t")[2])["Lmax"] for line in r.stdout.splitlines()} == {16}
    assert run.parse_value("x", "3", [0.5, 1]) == [3.0] and run.parse_value("x", "3", 0.5) == 3
    assert run.parse_value("M", "none", [None, 32]) == [None]
    for args in (["mlp", "--set", "M=0"], ["mlp", "--set", "M=0.5"], ["facts", "--set", "H=2.5"]):
        r = run_cli(*args, "--scale", "tiny", "--list")     # fields that may be None
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert run.parse_value("lr", "1000", 1000.0) == 1000.0       # one config, not two
    assert run.parse_value("H", "4", None) == 4
    r = run_cli("linear", "--scale", "tiny", "--set", "d=[8, 8]", "--list")   # duplicates once
    assert len(r.stdout.splitlines()) == 2
    assert run.parse_value("d", "[8, 16]", [4]) == [8, 16]
    r = run_cli("b_agree", "--scale", "tiny", "--list", "--set", "points=[]",   # as the README
                "--set", 'hidden=[{"V": 16, "N": 99, "d": 8, "L": 4}]')   # q, m: their defaults
    cfg = json.loads(r.stdout.splitlines()[0].split("\t")[2])
    assert (cfg["V"], cfg["Ns"], cfg["q"], "m" in cfg, cfg["hidden"], cfg["draws"]) == (
        16, [99], 10.0, False, True, paper_b.B_AGREE["tiny"]["hidden_draws"])
    assert len(r.stdout.splitlines()) == 1



def test_set_checks_b_agree_points_and_orders_the_linear_bracket():
    grid = paper_b.B_AGREE["tiny"]
    point = {"V": 16, "d": 8, "L": 4, "N": 99}
    for bad, named in ((dict(V=16, d=8, L=4, n=99), "N, n"), (dict(point, Q=4), "Q"),
                       (dict(point, N="99"), "N"), (dict(point, q=-1), "q"),
                       (dict(point, N=30.5), "N"), (dict(point, d=8.0), "d")):
        with pytest.raises(ValueError, match="integers V, d, L, N >= 1, optionally m >= 1, q > 0; "
                           f"got .*: check {named}$"):
            paper_b.b_agree_configs(dict(grid, points=[bad]), 0)
    for extra in ({"m": None}, {"q": 2.5}):
        point = {"V": 16, "d": 8, "L": 4, "N": 99, **extra}
        assert paper_b.b_agree_configs(dict(grid, points=[point]), 0)
    with pytest.raises(ValueError, match="draws >= 2"):
        paper_b.b_agree_configs(dict(grid, hidden_draws=1), 0)
    swapped = paper_a.linear_configs(dict(paper_a.LINEAR["tiny"], c_lo=0.1), 0)  # c_lo < c_hi
    assert all(c["lo"] <= c["hi"] for c in swapped)



def test_a_custom_run_is_drawn_beside_its_records_not_over_figures(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                     # figures/ would be created here if used
    configs = [_tiny_fig5(0)]
    run.sweep("fig5", configs, paper_a.fig5_one, "res", overrides={"steps": 64})
    assert plots.draw("fig5", "res") == os.path.join("res", "fig5_sequential.png")
    run.sweep("fig5", configs, paper_a.fig5_one, run.RESULTS, overrides={"steps": 64})   # --set
    assert plots.draw("fig5") == os.path.join(run.RESULTS, "fig5_sequential.png")
    assert not os.path.exists("figures")



def test_set_error_shows_the_example_as_json_and_says_positive_only_for_numbers():
    with pytest.raises(ValueError) as err:
        run.parse_value("points", "[1]", [{"V": 16, "q": 10, "m": None}])
    assert 'a dict like {"V": 16, "q": 10, "m": null}' in str(err.value)
    with pytest.raises(ValueError, match="a positive int like 8"):
        run.parse_value("d", "-3", [8])
    for text in ("-1", "1.5"):                  # a field at 0 (facts' prompts_per_fact) takes >= 0
        with pytest.raises(ValueError, match="a non-negative int like 0"):
            run.parse_value("prompts_per_fact", text, 0)
    assert run.parse_value("prompts_per_fact", "0", 0) == 0
    with pytest.raises(ValueError, match="a positive int like 4"):
        run.parse_value("prompts_per_fact", "0", 4)



@pytest.mark.parametrize("args", [["--set", "nope=1"], ["--set", "d=abc"], ["--set", "d=2.5"],
                                  ["--set", "d"], ["--set", "steps=-3"], ["--seed", "-1"],
                                  ["--set", "d=8", "--set", "d =11"]])
def test_set_unknown_key_or_bad_value_exits_2_naming_the_keys(args):
    r = run_cli("linear", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert args[1] != "nope=1" or "c_hi, c_lo, d, dmax, lr, ratio, seeds, steps" in r.stderr



def test_a_run_that_fails_at_once_keeps_the_last_record_set_and_only_is_checked(tmp_path):
    """A run stopped by a bad value before its first record leaves the previous record set (what
    plots.py draws) in place; --only outside the grid is an error, with or without --list."""
    out = str(tmp_path / "res")
    assert run_cli("b_embed", "--scale", "tiny", "--out", out).returncode == 0
    before = run.load_records(out, "b_embed", "tiny")
    r = run_cli("b_embed", "--scale", "tiny", "--set", "V=1", "--out", out)
    assert r.returncode == 2 and "V must be >= 2" in r.stderr, r.stderr
    after = run.load_records(out, "b_embed", "tiny")
    assert len(after[0]) == len(before[0]) == 4 and after[1] == before[1]
    for extra in ([], ["--list"]):
        r = run_cli("b_embed", "--scale", "tiny", "--only", "4", *extra, "--out", out)
        assert r.returncode == 2 and "--only must be in [0, 4), got 4" in r.stderr, r.stderr
    for only in (-1, 1):                                 # from Python: not the last, not an error
        with pytest.raises(ValueError, match=r"only must be in \[0, 1\)"):
            run.sweep("fig5", [_tiny_fig5(0)], paper_a.fig5_one, out, only=only)
    r = run_cli("facts", "--scale", "tiny", "--set", "H=5", "--list")   # 5 heads divide no d
    assert r.returncode == 2 and "facts_configs in paper_a.py" in r.stderr, r.stderr



def test_set_run_is_drawn_from_another_folder(tmp_path):
    r = run_cli("linear", "--scale", "tiny", "--set", "d=8", "--set", "steps=200",
                "--out", str(tmp_path / "res"))
    assert r.returncode == 0, r.stderr
    (manifest,) = (tmp_path / "res" / "linear").glob("_set-*.json")
    assert manifest.name == "_set-tiny.json"
    assert json.loads(manifest.read_text())["set"] == {"d": [8], "steps": 200}
    out = tmp_path / "pics" / "lin.png"
    r = subprocess.run([sys.executable, os.path.join(HERE, "plots.py"), "linear", "--results",
                        str(tmp_path / "res"), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and out.exists(), r.stderr
    shown = run.read_json(str(out.with_suffix(".json")))
    assert shown["plotted"]["cap99"][0] == [64.0]                    # d = 8 only
    r = subprocess.run([sys.executable, os.path.join(HERE, "plots.py"), "linear", "--scale", "full",
                        "--results", str(tmp_path / "res")], capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "full" in r.stderr
    assert "--scale full" in r.stderr                                # the command that would help



def test_figure_draws_the_chosen_record_set_not_a_stray_record(tmp_path, monkeypatch):
    runs = {}
    for scale in ("small", "tiny"):
        run.main(["fig5", "--scale", scale, "--set", "steps=10", "--set", "seeds=1", "--out",
                    str(tmp_path)])
        runs[scale] = run.load_records(str(tmp_path), "fig5", scale)[0][0]
    stray = dict(runs["tiny"], config=dict(runs["tiny"]["config"], seed=9),
                 result=dict(runs["tiny"]["result"], total=[7.0, 7.0]))
    run.save_json(str(tmp_path / "fig5" / "ffffffffffff.json"), stray)   # sorts last
    drawn = {}
    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, path, **k: drawn.update(
        y=list(fig.axes[0].lines[0].get_ydata()), head=fig.texts[0].get_text()))
    for scale, rec in (("small", runs["small"]), ("tiny", runs["tiny"]), (None, runs["tiny"])):
        plots.draw("fig5", str(tmp_path), scale, str(tmp_path / "f.png"))   # None: the newest
        assert drawn["y"] == rec["result"]["total"] and rec["result"]["total"] != [7.0, 7.0]
        assert drawn["head"].startswith(f"fig5: scale {scale or 'tiny'}, 1 of 1 runs")
        assert drawn["head"].endswith("runs\n--set steps=10\n--set seeds=1")   # a line each



def test_adam_settings_do_not_rerun_other_learners():
    """Adam's steps and lr are in Adam's configs only: changing them keeps every other record."""
    pairs = ((paper_b.B_MLP["tiny"], paper_b.b_mlp_configs),
             (paper_b.B_SCALING["tiny"], paper_b.nstar_configs))
    for grid, make in pairs:
        before, after = make(grid, 0), make(dict(grid, adam_steps=99, adam_lr=0.5), 0)
        assert all(("steps" in c) == (c["method"] == "adam") for c in before)
        others = [{run.config_key(c) for c in cs if c["method"] != "adam"} for cs in (before,
                                                                                        after)]
        assert others[0] == others[1] and len(others[0]) > 0
        assert {c["steps"] for c in after if c["method"] == "adam"} == {99}


# ----------------------------------------------------------------------------- the layout

MODULES = ["recall.py", "train.py", "theory.py", "paper_a.py", "paper_b.py", "run.py",
           "plots.py", "homework.py", "bench.py"]


def _project_imports(path):
    """The project modules a file imports (import X, import X as Y), by name."""
    tree = ast.parse(open(os.path.join(HERE, path)).read())
    names = {m[:-3] for m in MODULES}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in names}
        if isinstance(node, ast.ImportFrom) and node.module in names:
            found.add(node.module)
    return found


def test_imports_go_one_way():
    """No module imports one that imports it back, directly or around a circle; the model
    imports no one, training only the model and the formulas."""
    graph = {m[:-3]: _project_imports(m) for m in MODULES}
    assert graph["recall"] == set() and graph["theory"] == set()
    assert graph["train"] == {"recall", "theory"}

    def reaches(a, b, seen=()):
        return any(c == b or (c not in seen and reaches(c, b, seen + (c,))) for c in graph[a])
    circles = [m for m in graph if reaches(m, m)]
    assert not circles, graph


def _definitions(module):
    """{name: (node, non-blank lines)} of a module's functions and constants (a grid: its
    first assignment, NAME = {"small": ...}, the scale `make` runs)."""
    text = open(os.path.join(HERE, module)).read()
    lines = text.splitlines()
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            name = node.name
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        else:
            continue
        n = len([line for line in lines[node.lineno - 1:node.end_lineno] if line.strip()])
        out[name] = (node, n)
    return out


def path_to_the_model(experiment):
    """The definitions a reader opens from `make experiment` to the model: its grid (NAME),
    its configs and one-run functions, and everything they call in their module and in
    train.py; not the model (recall.py), the formulas it is compared with (theory.py) or
    the runner.  Returns {(file, name): non-blank lines}."""
    entry = run.experiments()[experiment]
    home = entry["configs"].__module__ + ".py"
    defs = {home: _definitions(home), "train.py": _definitions("train.py")}
    seen = {(home, experiment.upper()): defs[home][experiment.upper()][1]}
    todo = [(home, entry["configs"].__name__), (home, entry["one"].__name__)]
    while todo:
        where, name = todo.pop()
        if (where, name) in seen or name not in defs[where]:
            continue
        node, n = defs[where][name]
        seen[(where, name)] = n
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in defs[where]:
                todo.append((where, sub.id))
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                if sub.value.id == "train":
                    todo.append(("train.py", sub.attr))
    return seen


@pytest.mark.parametrize("experiment", ["fig5", "linear", "tradeoff", "b_scaling"])
def test_the_path_from_make_to_the_model_fits_a_screen(experiment):
    if "withheld from the student copy" in open(os.path.join(HERE, "train.py")).read():
        pytest.skip("a student copy: its withheld functions call the textbook forms")
    path = path_to_the_model(experiment)
    files = {where for where, _ in path}
    assert len(files) <= 2 and sum(path.values()) <= 150, (sum(path.values()), path)


def test_the_code_keeps_its_budget():
    """All Python outside the tests: <= 3000 non-blank lines, none over 100 characters, at
    most 12% at 90 or more, no function over 50 lines; the docs' sizes and widths."""
    lines = []
    for module in MODULES:
        text = open(os.path.join(HERE, module)).read()
        lines += [line for line in text.splitlines() if line.strip()]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                assert node.end_lineno - node.lineno < 50, (module, node.name)
    long = [line for line in lines if len(line) >= 90]
    assert len(lines) <= 3000 and max(len(line) for line in lines) <= 100
    assert len(long) <= 0.12 * len(lines), (len(long), len(lines))
    docs = {name: open(os.path.join(HERE, name)).read().splitlines()
            for name in ("README.md", "MODEL.md", "RESULTS.md", "EXERCISES.md")}
    assert len(docs["README.md"]) <= 200
    assert sum(len(v) for k, v in docs.items() if k != "README.md") <= 900
    for name, text in docs.items():
        code = False
        for line in text:
            if line.startswith("    "):
                continue                                     # an indented code block
            code = code != line.startswith("```")
            if code or line.startswith("```"):
                continue
            limit = 160 if line.startswith("|") else 120
            assert len(line) <= limit, (name, line[:60])


def test_committed_figures_redraw_from_their_data_without_a_run(tmp_path, monkeypatch):
    """On a fresh clone (no results/) a figure redraws from figures/data/, the record set it
    was drawn from; --talk writes beside the committed figure, never over it."""
    for name in plots.FIGURES:
        assert os.path.exists(os.path.join(HERE, plots.DATA, f"{name}.json")), name
    monkeypatch.chdir(tmp_path)
    os.symlink(os.path.join(HERE, "figures"), "committed")
    monkeypatch.setattr(plots, "DATA", os.path.join("committed", "data"))
    for name in ("linear", "b_agree"):
        path = plots.draw(name, talk=True)
        assert path == os.path.join("figures", "talk", plots.FILES.get(name, name + ".png"))
        assert os.path.getsize(path) > 10000
    assert not os.path.exists(os.path.join("figures", "linear.png"))
