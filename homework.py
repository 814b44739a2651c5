"""homework.py -- the exercises of EXERCISES.md: a student copy of the code, and a checker.

    python homework.py make [DIR]   write the student copy (default homework/)
    python homework.py check [N]    check every exercise (or N only); exit status 1 if one failed
"""
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
# Functions that hold the answer to exercises in another form, withheld from the student copy.
# There a fast X_backward (and its X_forward, for the cache) calls the textbook form the student
# writes, and three_step_limit calls the student's three_step at eta = 1e-6 (the same argmax).
WITHHELD = {"transformer_backward": "exercises 3 and 4", "retrieval_backward": "exercises 3 and 6",
            "linear_attention_backward": "exercise 5", "three_step_limit": "exercise 7"}
CALLS = {"three_step_limit": "three_step(fixed, tokens, pos, labels, 1e-6, query_norm=query_norm)"}
NEEDS = {7: [1, 6]}     # an exercise whose tests run these exercises' code


def sheet_entry(sheet, n):
    """(task, nudge) of exercise n, from its section of EXERCISES.md."""
    part = re.search(rf"(?ms)^## Exercise {n}: `(\w+)`.*?(?=^## |\Z)", sheet)
    item = dict(re.findall(r"(?ms)^- \*\*(\w+):\*\* (.*?)(?=\n-|\n\n|\Z)", part[0] if part else ""))
    if not part or part[1] != EXERCISES[n][0] or not {"Task", "Nudge"} <= set(item):
        die(f"EXERCISES.md: no '## Exercise {n}: `{EXERCISES[n][0]}`' with a Task and a Nudge")
    return item["Task"], item["Nudge"]


def comment(pad, text):
    return textwrap.fill(" ".join(text.replace("`", "").split()), 99, initial_indent=pad + "# ",
                         subsequent_indent=pad + "#   ") + "\n"


def student(name, src, found, hints):
    """The module as the student copy has it; the exercises and WITHHELD names met go to found."""
    lines = src.splitlines(keepends=True)
    funcs = [f for f in ast.parse(src).body if isinstance(f, ast.FunctionDef)]
    marked = [(i, int(m[1])) for i, m in enumerate(map(MARK.search, lines), 1) if m]
    for f in sorted(funcs, key=lambda f: -f.lineno):    # bottom up: earlier line numbers hold
        body = f.body[1:] if ast.get_docstring(f) is not None else f.body
        start, end, fast = body[0].lineno, f.end_lineno, re.sub("_forward$", "_backward", f.name)
        pad = re.match(r"\s*", lines[start - 1]).group()
        marks = [(i, n) for i, n in marked if f.lineno <= i <= end]
        if marks:                 # the solution: from the mark (or the body) to the end
            (i, n), (task, nudge) = marks[0], hints.get(marks[0][1], ("", ""))
            if len(marks) > 1 or EXERCISES.get(n, [""])[0] != f.name:
                die(f"{name}:{i}: '# exercise {n}' is in {f.name}, not where EXERCISES says")
            new = [comment(pad, f"exercise {n}: {task}"), comment(pad, f"nudge: {nudge}"),
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
    """pytest plugin: per test its first exception, whether it ran, what it gave assert_worst."""
    def __init__(self, tests):
        self.errors, self.ran, self.measured, self.broken, self.test = {}, set(), {}, None, None
        self.tests = tests

    def pytest_collection_modifyitems(self, items):     # only the tests asked for
        items[:] = [item for item in items if item.name in self.tests]
        for module in {i.module for i in items if hasattr(getattr(i, "module", 0), "assert_worst")}:
            def assert_worst(errors, tol, what="relative gradient error", real=module.assert_worst):
                self.measured.setdefault(self.test, []).append((what, dict(errors)))
                return real(errors, tol, what)
            module.assert_worst = assert_worst      # records every check, passed or failed

    def pytest_runtest_makereport(self, item, call):     # after setup, call and teardown
        self.test = item.name
        if call.excinfo is not None and item.name not in self.errors:
            frames = [(os.path.basename(str(e.path)), e.lineno + 1) for e in call.excinfo.traceback]
            self.errors[item.name] = (call.excinfo.value, _where(frames))
        if call.when == "call":
            self.ran.add(item.name)

    def pytest_collectreport(self, report):        # e.g. a SyntaxError in recall.py
        text = report.longreprtext.strip() if report.failed else ""
        kind, _, msg = re.sub(r"^E\s+", "", text.split("\n")[-1]).partition(": ")
        where = _where(re.findall(r'(\w+\.py)(?:", line |:)(\d+)', text))
        self.broken = self.broken or text and f"{kind}{where}: {msg}"


def _where(frames):       # ' at file:line' of the innermost frame in the project's files, or ''
    return ([f" at {f}:{n}" for f, n in frames if f in MODULES + ["test_recall.py"]] or [""])[-1]


def verdict(n, seen):
    """passed or failed (per parameter the worst error checked, or why), or not attempted."""
    tests, worst = EXERCISES[n][1], {}
    for what, errors in (r for t in tests for r in seen.measured.get(t, [])):
        for k, e in errors.items():
            k = k.split(" (")[0]                     # WKQ (query_norm given) is WKQ
            worst[k] = max(worst.get(k, -1.0), float(e), key=lambda e: 9e99 if e != e else e)
    numbers = f"{what} " + ", ".join(f"{k} {e:.1e}" for k, e in worst.items()) if worst else ""
    errors = [seen.errors[t] for t in tests if t in seen.errors]
    missing = [t for t in tests if t not in seen.ran]
    if seen.broken or missing and not errors:
        return f"failed ({seen.broken or f'test {missing[0]} did not run'})"
    if not errors:
        return f"passed ({numbers})" if numbers else "passed"
    asked = [int(m[1]) for e, _ in errors if isinstance(e, NotImplementedError)
             for m in [re.match(r"exercise (\d+):", str(e))] if m]
    if asked:
        return "not attempted" if n in asked else (
            f"failed (uses exercise {asked[0]}, which is not attempted yet)")
    if numbers and all(isinstance(e, AssertionError) and str(e)[:6] == "worst " for e, _ in errors):
        return f"failed ({numbers})"
    (e, where), first = errors[0], (str(errors[0][0]).strip().splitlines() or [""])[0]
    first = textwrap.shorten(first, 120, placeholder=" ...")
    return f"failed ({type(e).__name__}{where}: {first})"


def results(numbers):
    """[(n, function, verdict)]: runs the exercises' tests in one quiet pytest session."""
    import pytest
    seen = _Seen({t for n in numbers for t in EXERCISES[n][1]})
    pytest.main([os.path.join(HERE, "test_recall.py"), "-pno:terminal", "-pno:cacheprovider",
                 "--rootdir", HERE], plugins=[seen])
    return [(n, EXERCISES[n][0], verdict(n, seen)) for n in numbers]


def make(out):
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        die(f"{out} exists and is not an empty directory; remove it first (it may hold answers)")
    texts = {name: open(os.path.join(HERE, name), encoding="utf-8").read() for name in COPIED}
    hints = {n: sheet_entry(texts["EXERCISES.md"], n) for n in EXERCISES}
    bad = [f"exercise {n} {f}: {v}" for n, f, v in results(list(EXERCISES)) if v[:6] != "passed"]
    if bad:
        die("the reference solutions do not pass: " + "; ".join(bad), status=1)
    met = set()
    files = dict(texts, **{n: student(n, texts[n], met, hints) for n in MODULES})
    missing = (set(EXERCISES) | set(WITHHELD)) - met
    if missing:
        die(f"not in {', '.join(MODULES)}: {', '.join(map(str, missing))} (EXERCISES, WITHHELD)")
    os.makedirs(os.path.join(out, "figures"), exist_ok=True)
    for name in os.listdir(os.path.join(HERE, "figures")):          # the docs show them
        if name.endswith(".png"):
            shutil.copy(os.path.join(HERE, "figures", name), os.path.join(out, "figures"))
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
    needed = sorted(set(wanted).union(*(NEEDS.get(n, []) for n in wanted)))
    lines = results(needed)
    failed = {n for n, _, v in lines if v.startswith("failed")}
    lines = [(n, f, v) for n, f, v in lines if n in wanted]
    for n, f, v in lines:            # a failing prerequisite is named: it may be the cause
        first = [k for k in NEEDS.get(n, []) if k in failed]
        print(f"exercise {n} {f}: {v}" + (f"; exercise {first[0]} fails too: fix it first"
                                           if first and n in failed else ""))
    return int(any(v.startswith("failed") for _, _, v in lines))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
