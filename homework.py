"""homework.py -- the exercises of EXERCISES.md: a student copy of the code, and a checker.

    python homework.py make [DIR]   write the student copy (default homework/)
    python homework.py check [N]    check every exercise (or N only); exit 1 if one failed"""
import ast
import math
import os
import re
import shutil
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ["recall.py", "train.py", "theory.py"]
COPIED = MODULES + ("paper_a.py paper_b.py run.py plots.py bench.py test_recall.py "
                    "test_run.py homework.py Makefile requirements.txt pyproject.toml LICENSE "
                    ".gitignore README.md MODEL.md RESULTS.md EXERCISES.md "
                    "data/b_agree_points.json").split()
# A trailing `# exercise N` marks a solution: on a def line its body, else the rest of it.
MARK = re.compile(r"#\s*exercise (\d+)\s*$")
GRAD = "test_gradients_at_random_point_and_after_training"
EXERCISES = {  # N: (the function to write, its tests in test_recall.py)
    1: ("cross_entropy", ["test_cross_entropy_gradient_and_stability"]),
    2: ("linear_memory_backward", [f"{GRAD}[linear_memory]"]),
    3: ("mlp_memory_backward", [f"{GRAD}[mlp_memory]"]),
    4: ("transformer_textbook_backward", [f"{GRAD}[transformer_textbook]"]),
    5: ("linear_attention_textbook_backward", [f"{GRAD}[linear_attention_textbook]"]),
    6: ("retrieval_textbook_backward", [f"{GRAD}[retrieval_textbook(m={m})]"
                                        for m in (None, 7)]),
    7: ("three_step", [f"test_three_step_matches_naive_steps[{m}]" for m in (None, 3)]),
    8: ("solve_n_log_n", ["test_theory_memory_formulas_hand_computed"]),
    9: ("arccos_kernel", ["test_arccos_kernel_by_hand_and_monte_carlo"]),
}
# Withheld from the student copy, as they hold answers in another form: there a fast
# X_backward (and its X_forward) calls the textbook form, three_step_limit the literal steps
# at eta = 1e-6 (the same argmax).
WITHHELD = {"transformer_backward": "exercises 3 and 4",
            "retrieval_backward": "exercises 3 and 6",
            "linear_attention_backward": "exercise 5", "three_step_limit": "exercise 7"}
CALLS = {"three_step_limit": "three_step_small_eta(fixed, tokens, pos, labels, query_norm, "
                             "gamma_eta)"}
NEEDS = {7: [1, 6]}     # an exercise whose tests run these exercises' code


def comment(pad, text):
    text = " ".join(text.replace("`", "").split())
    return textwrap.fill(text, 92, initial_indent=pad + "# ", subsequent_indent=pad + "#   ") + "\n"


def student(name, src, found):
    """The student copy of a module; adds the exercises and WITHHELD names met to found."""
    lines = src.splitlines(keepends=True)
    functions = [f for f in ast.parse(src).body if isinstance(f, ast.FunctionDef)]
    marked = [(i, int(m[1])) for i, m in enumerate(map(MARK.search, lines), 1) if m]
    for f in reversed(functions):       # bottom up: the line numbers above still hold
        body = f.body[1:] if ast.get_docstring(f) is not None else f.body
        start = body[0].lineno
        pad = re.match(r"\s*", lines[start - 1]).group()
        marks = [(i, n) for i, n in marked if f.lineno <= i <= f.end_lineno]
        fast = re.sub("_forward$", "_backward", f.name)
        if marks:                       # the solution: from the mark (or the body) to the end
            i, n = marks[0]
            if len(marks) > 1 or EXERCISES.get(n, [""])[0] != f.name:
                die(f"{name}:{i}: '# exercise {n}' is in {f.name}, not where EXERCISES says")
            new = [comment(pad, f"exercise {n}: see EXERCISES.md for the task and two hints"),
                   f'{pad}raise NotImplementedError("exercise {n}: {f.name} is not written")\n']
            start = max(start, i)
        elif fast in WITHHELD:          # the copy calls what the student writes instead
            n = f.name
            twin = re.sub("_(forward|backward)$", r"_textbook_\1", n)
            call = CALLS.get(n, f"{twin}({', '.join(a.arg for a in f.args.args)})")
            new = [comment(pad, f"{n} is withheld from the student copy (it holds the answer "
                                f"to {WITHHELD[fast]}); this copy calls {call.split('(')[0]}"),
                   f"{pad}return {call}\n"]
        else:
            continue
        lines[start - 1:f.end_lineno] = new
        found.add(n)
    return "".join(lines)


class _Seen:
    """pytest plugin: per test what it gave assert_worst and its first error, as ('Type at
    file:line: message', the exception or None if the test did not run)."""
    def __init__(self, tests):
        self.tests = tests
        self.measured = {}
        self.errors = {}
        self.test = None

    def pytest_collectreport(self, report):        # failed, e.g. a SyntaxError in recall.py
        if report.failed:
            text = report.longreprtext.strip()
            kind, _, msg = re.sub(r"^E\s+", "", text.split("\n")[-1]).partition(": ")
            where = _where(re.findall(r'(\w+\.py)(?:", line |:)(\d+)', text))
            self.errors = {t: (f"{kind}{where}: {msg}", None) for t in self.tests}

    def pytest_collection_modifyitems(self, items):     # only the tests asked for
        items[:] = [item for item in items if item.name in self.tests]
        for t in self.tests - {item.name for item in items}:
            self.errors.setdefault(t, (f"test {t} did not run", None))
        for module in {item.module for item in items}:
            real = module.assert_worst

            def assert_worst(errors, tol, what="relative gradient error", real=real):
                self.measured.setdefault(self.test, []).append((what, dict(errors)))
                return real(errors, tol, what)
            module.assert_worst = assert_worst      # records every check, passed or failed

    def pytest_runtest_makereport(self, item, call):     # after setup, call and teardown
        self.test = item.name
        if call.excinfo is not None and item.name not in self.errors:
            e = call.excinfo.value
            frames = [(os.path.basename(str(f.path)), f.lineno + 1) for f in call.excinfo.traceback]
            first = textwrap.shorten(str(e).strip().split("\n")[0], 120, placeholder=" ...")
            self.errors[item.name] = (f"{type(e).__name__}{_where(frames)}: {first}", e)


def _where(frames):
    """' at file:line' of the innermost frame in the project's files, or ''."""
    inside = [f" at {f}:{n}" for f, n in frames if f in MODULES + ["test_recall.py"]]
    return inside[-1] if inside else ""


def measured(n, seen):
    """The worst relative error per case (m=...) and parameter, as text ('' if none)."""
    tests = EXERCISES[n][1]
    worst = {}
    for t in tests:
        case = ""
        if len(tests) > 1:
            case = "m=" + re.findall(r"(\w+)[)]?]$", t)[0] + ": "
        for what, errors in seen.measured.get(t, []):
            w = worst.setdefault(case, {"what": what, "errors": {}})["errors"]
            for k, e in errors.items():
                k = k.split(" (")[0]                         # WKQ (query_norm given)
                w[k] = max(float(e), w.get(k, -1.0), key=lambda x: (math.isnan(x), x))  # nan wins
    parts = []
    for case, w in worst.items():
        each = ", ".join(f"{k} {e:.1e}" for k, e in w["errors"].items())
        parts.append(f"{case}{w['what']} {each}")
    return "; ".join(parts)


def verdict(n, seen):
    """passed or failed (the worst error per case and parameter, or why), or not attempted."""
    tests = EXERCISES[n][1]
    numbers = measured(n, seen)
    errors = [seen.errors[t] for t in tests if t in seen.errors]
    asked = []                          # the exercises whose `raise` the tests met
    for _, e in errors:
        found = re.match(r"exercise (\d+):", str(e))
        if isinstance(e, NotImplementedError) and found:
            asked.append(int(found[1]))
    if not errors:
        return f"passed ({numbers})" if numbers else "passed"
    if n in asked:
        return "not attempted"
    if asked:
        return f"failed (uses exercise {asked[0]}, which is not attempted yet)"
    only_errors = all(isinstance(e, AssertionError) and str(e).startswith("worst ")
                      for _, e in errors)
    if numbers and only_errors:
        return f"failed ({numbers})"
    return f"failed ({errors[0][0]})"


def make(out):
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        die(f"{out} exists and is not an empty directory; remove it first (it may hold answers)")
    texts = {}
    for name in COPIED:
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            texts[name] = f.read()
    met = set()
    for name in MODULES:
        texts[name] = student(name, texts[name], met)
    missing = (set(EXERCISES) | set(WITHHELD)) - met
    if missing:
        listed = ", ".join(str(x) for x in missing)
        die(f"not in {', '.join(MODULES)}: {listed} (EXERCISES, WITHHELD)")
    def runs_only(folder, names):         # the figures and their data, not other runs
        top = os.path.basename(folder) == "figures"
        return [n for n in names if n in ("talk", "tiny", "full") or top and n.endswith(".json")]
    shutil.copytree(os.path.join(HERE, "figures"), os.path.join(out, "figures"), ignore=runs_only)
    for name, text in texts.items():
        path = os.path.join(out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote {out}/: {len(EXERCISES)} exercises, see {out}/EXERCISES.md")


def die(message, status=2):
    print(message, file=sys.stderr)
    sys.exit(status)


def main(argv):
    usage = f"usage: python homework.py make [DIR] | check [N]   (N one of 1-{len(EXERCISES)})"
    if argv[:1] == ["make"] and len(argv) <= 2:
        return make(argv[1] if len(argv) == 2 else "homework")
    if argv[:1] != ["check"] or argv[1:] not in [[]] + [[str(n)] for n in EXERCISES]:
        die(usage)
    wanted = [int(argv[1])] if len(argv) == 2 else list(EXERCISES)
    import pytest         # the tests' own need, here: `homework.py make` works without it
    numbers = set(wanted)
    for n in wanted:
        numbers.update(NEEDS.get(n, []))
    seen = _Seen({t for n in numbers for t in EXERCISES[n][1]})    # one quiet pytest session
    pytest.main([os.path.join(HERE, "test_recall.py"), "-pno:terminal", "-pno:cacheprovider",
                 "--rootdir", HERE], plugins=[seen])
    verdicts = {n: verdict(n, seen) for n in sorted(numbers)}
    failed = {n for n, v in verdicts.items() if v.startswith("failed")}
    for n in wanted:
        line = f"exercise {n} {EXERCISES[n][0]}: {verdicts[n]}"
        for k in NEEDS.get(n, []):             # a failing prerequisite may be the cause
            if k in failed and n in failed:
                line += f"; exercise {k} fails too: fix it first"
                break
        print(line)
    return int(bool(failed & set(wanted)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
