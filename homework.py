"""homework.py -- the exercises of EXERCISES.md: a student copy of the code, and a checker.

    python homework.py make [DIR]   write the student copy (default homework/)
    python homework.py check [N]    check every exercise (or N only); exit status 1 if one failed"""
import ast
import os
import re
import shutil
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ["recall.py", "train.py", "theory.py"]
COPIED = MODULES + ("experiments.py plots.py bench.py test_recall.py homework.py Makefile "
                    "requirements.txt LICENSE .gitignore README.md MODEL.md RESULTS.md "
                    "EXERCISES.md").split()
# A trailing `# exercise N` marks a solution: on a def line its body, else the rest of the function.
MARK = re.compile(r"#\s*exercise (\d+)\s*$")
GRAD = "test_gradients_at_random_point_and_after_training"
EXERCISES = {  # N: (the function to write, its tests in test_recall.py)
    1: ("cross_entropy", ["test_cross_entropy_gradient_and_stability"]),
    2: ("linear_memory_backward", [f"{GRAD}[linear_memory]"]),
    3: ("mlp_memory_backward", [f"{GRAD}[mlp_memory]"]),
    4: ("transformer_textbook_backward", [f"{GRAD}[transformer_textbook]"]),
    5: ("linear_attention_textbook_backward", [f"{GRAD}[linear_attention_textbook]"]),
    6: ("retrieval_textbook_backward", [f"{GRAD}[retrieval_textbook(m={m})]" for m in (None, 7)]),
    7: ("three_step", [f"test_three_step_matches_naive_steps[{m}]" for m in (None, 3)]),
    8: ("solve_n_log_n", ["test_theory_memory_formulas_hand_computed"]),
    9: ("arccos_kernel", ["test_arccos_kernel_by_hand_and_monte_carlo"]),
}
# Withheld from the student copy, as they hold answers in another form: there a fast X_backward (and
# its X_forward) calls the textbook form, three_step_limit three_step at eta = 1e-6 (same argmax).
WITHHELD = {"transformer_backward": "exercises 3 and 4", "retrieval_backward": "exercises 3 and 6",
            "linear_attention_backward": "exercise 5", "three_step_limit": "exercise 7"}
CALLS = {"three_step_limit": "three_step(fixed, tokens, pos, labels, 1e-6, query_norm=query_norm)"}
NEEDS = {7: [1, 6]}     # an exercise whose tests run these exercises' code


def comment(pad, text):
    return textwrap.fill(" ".join(text.replace("`", "").split()), 99, initial_indent=pad + "# ",
                         subsequent_indent=pad + "#   ") + "\n"


def student(name, src, found):
    """The module as the student copy has it; the exercises and WITHHELD names met go to found."""
    lines = src.splitlines(keepends=True)
    funcs = [f for f in ast.parse(src).body if isinstance(f, ast.FunctionDef)]
    marked = [(i, int(m[1])) for i, m in enumerate(map(MARK.search, lines), 1) if m]
    for f in reversed(funcs):    # bottom up: the line numbers of the functions above still hold
        body = f.body[1:] if ast.get_docstring(f) is not None else f.body
        start, end, fast = body[0].lineno, f.end_lineno, re.sub("_forward$", "_backward", f.name)
        pad = re.match(r"\s*", lines[start - 1]).group()
        marks = [(i, n) for i, n in marked if f.lineno <= i <= end]
        if marks:                 # the solution: from the mark (or the body) to the end
            i, n = marks[0]
            if len(marks) > 1 or EXERCISES.get(n, [""])[0] != f.name:
                die(f"{name}:{i}: '# exercise {n}' is in {f.name}, not where EXERCISES says")
            new = [comment(pad, f"exercise {n}: see EXERCISES.md for the task and two hints"),
                   f'{pad}raise NotImplementedError("exercise {n}: {f.name} is not written")\n']
            start = max(start, i)
        elif fast in WITHHELD:    # the copy calls what the student writes instead
            n, twin = f.name, re.sub("_(forward|backward)$", r"_textbook_\1", f.name)
            call = CALLS.get(n, f"{twin}({', '.join(a.arg for a in f.args.args)})")
            new = [comment(pad, f"{n} is withheld from the student copy (it holds the answer to "
                                f"{WITHHELD[fast]}); this copy calls {call.split('(')[0]}"),
                   f"{pad}return {call}\n"]
        else:
            continue
        lines[start - 1:end] = new
        found.add(n)
    return "".join(lines)


class _Seen:
    """pytest plugin: per test what it gave assert_worst and its first error, as ('Type at
    file:line: message', the exception or None if the test did not run)."""
    def __init__(self, tests):
        self.tests, self.measured, self.errors, self.test = tests, {}, {}, None

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
            def assert_worst(errors, tol, what="relative gradient error", real=module.assert_worst):
                self.measured.setdefault(self.test, []).append((what, dict(errors)))
                return real(errors, tol, what)
            module.assert_worst = assert_worst      # records every check, passed or failed

    def pytest_runtest_makereport(self, item, call):     # after setup, call and teardown
        self.test = item.name
        if call.excinfo is not None and item.name not in self.errors:
            e, frames = call.excinfo.value, call.excinfo.traceback
            where = _where([(os.path.basename(str(f.path)), f.lineno + 1) for f in frames])
            first = textwrap.shorten(str(e).strip().split("\n")[0], 120, placeholder=" ...")
            self.errors[item.name] = (f"{type(e).__name__}{where}: {first}", e)


def _where(frames):       # ' at file:line' of the innermost frame in the project's files, or ''
    return ([f" at {f}:{n}" for f, n in frames if f in MODULES + ["test_recall.py"]] or [""])[-1]


def verdict(n, seen):
    """passed or failed (the worst error per case, m, and parameter, or why), or not attempted."""
    tests, worst = EXERCISES[n][1], {}
    for t in tests:
        case = "m=" + re.findall(r"(\w+)[)]?]$", t)[0] + ": " if len(tests) > 1 else ""
        for what, errors in seen.measured.get(t, []):
            for k, e in errors.items():
                k, w = k.split(" (")[0], worst.setdefault(case, {})   # WKQ (query_norm given)
                w[k] = max(w.get(k, -1.0), float(e), key=lambda e: 9e99 if e != e else e)
    numbers = "; ".join(f"{case}{what} " + ", ".join(f"{k} {e:.1e}" for k, e in w.items())
                        for case, w in worst.items())
    errors = [seen.errors[t] for t in tests if t in seen.errors]
    asked = [int(m[1]) for _, e in errors if isinstance(e, NotImplementedError)
             for m in [re.match(r"exercise (\d+):", str(e))] if m]
    if not errors:
        return f"passed ({numbers})" if numbers else "passed"
    if asked:
        return "not attempted" if n in asked else (
            f"failed (uses exercise {asked[0]}, which is not attempted yet)")
    if numbers and all(str(e)[:6] == "worst " and isinstance(e, AssertionError) for _, e in errors):
        return f"failed ({numbers})"
    return f"failed ({errors[0][0]})"


def make(out):
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        die(f"{out} exists and is not an empty directory; remove it first (it may hold answers)")
    texts = {name: open(os.path.join(HERE, name), encoding="utf-8").read() for name in COPIED}
    met = set()
    files = dict(texts, **{n: student(n, texts[n], met) for n in MODULES})
    missing = (set(EXERCISES) | set(WITHHELD)) - met
    if missing:
        die(f"not in {', '.join(MODULES)}: {', '.join(map(str, missing))} (EXERCISES, WITHHELD)")
    shutil.copytree(os.path.join(HERE, "figures"), os.path.join(out, "figures"),   # the docs show
                    ignore=lambda _, names: [n for n in names if not n.endswith(".png")])
    for name, text in files.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote {out}/: {len(EXERCISES)} exercises, see {out}/EXERCISES.md")


def die(message, status=2):
    print(message, file=sys.stderr)
    sys.exit(status)


def main(argv):
    if argv[:1] == ["make"] and len(argv) <= 2:
        return make(argv[1] if len(argv) == 2 else "homework")
    if argv[:1] != ["check"] or len(argv) > 2 or argv[1:] and argv[1] not in map(str, EXERCISES):
        die(f"usage: python homework.py make [DIR] | check [N]   (N one of 1-{len(EXERCISES)})")
    wanted = [int(argv[1])] if len(argv) == 2 else list(EXERCISES)
    import matplotlib, pytest      # noqa: F401  the tests' own needs, here: `make` works without
    numbers = sorted(set(wanted).union(*(NEEDS.get(n, []) for n in wanted)))
    seen = _Seen({t for n in numbers for t in EXERCISES[n][1]})      # one quiet pytest session
    pytest.main([os.path.join(HERE, "test_recall.py"), "-pno:terminal", "-pno:cacheprovider",
                 "--rootdir", HERE], plugins=[seen])
    verdicts = {n: verdict(n, seen) for n in numbers}
    failed = {n for n, v in verdicts.items() if v.startswith("failed")}
    for n in wanted:            # a failing prerequisite is named: it may be the cause
        first = [k for k in NEEDS.get(n, []) if k in failed and n in failed]
        print(f"exercise {n} {EXERCISES[n][0]}: {verdicts[n]}"
              + (f"; exercise {first[0]} fails too: fix it first" if first else ""))
    return int(bool(failed & set(wanted)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
