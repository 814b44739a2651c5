"""homework.py -- the exercises: a student copy of the code, and a checker.

    python homework.py make [DIR]   write the student copy (default homework/): the modules with
                                    every marked solution replaced by a raise, the tests, a
                                    Makefile and the exercise sheet EXERCISES.md
    python homework.py check [N]    one line per exercise (or for exercise N only): passed,
                                    failed (why), or not attempted; exit status 1 if one failed

A solution is marked by a trailing comment `# exercise N` in recall.py, train.py or theory.py:
on a `def` line it marks the body after the docstring, on a statement it marks that statement
and the rest of its function.  The checker runs the exercise's tests from test_recall.py.
"""
import ast
import contextlib
import io
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ["recall.py", "train.py", "theory.py"]
COPIED = MODULES + ["plots.py", "test_recall.py", "homework.py", "requirements.txt", "LICENSE"]
MARK = re.compile(r"#\s*exercise (\d+)\s*$")
GRAD = "test_gradients_at_random_point_and_after_training"

# N: (function, what to derive, hint, where it comes from, its tests in test_recall.py)
EXERCISES = {
    1: ("cross_entropy", "the mean softmax cross-entropy and its gradient dlogits",
        "shift each row by its max before exp, so that no logit overflows",
        "the training loss of both papers", ["test_cross_entropy_gradient_and_stability"]),
    2: ("linear_memory_backward", "the gradient of logits = E[x] W U^T with respect to W",
        "two products, in reverse order of the forward; dW has the shape of W, (d, d)",
        "paper A, Fig. 1 left: the linear associative memory", [f"{GRAD}[linear_memory]"]),
    3: ("mlp_memory_backward", "the gradients of relu(E[x] W1 + b1) W2 U^T for W1, b1, W2",
        "walk mlp_memory_forward in reverse; relu lets the gradient through only where P > 0",
        "paper A, Fig. 1 right: the MLP associative memory", [f"{GRAD}[mlp_memory]"]),
    4: ("transformer_textbook_backward", "the gradients of the one-layer transformer for all 7 "
        "weights", "walk transformer_textbook_forward line by line in reverse; for a = softmax(s), "
        "ds = a * (da - sum_t a_t da_t); x reaches y twice (residual and MLP)",
        "paper A, Fig. 4: attention from the last position, then an MLP with residual",
        [f"{GRAD}[transformer_textbook]"]),
    5: ("linear_attention_backward", "the gradients of c = sum_t (x_T A x_t) x_t, logits = c WV "
        "for A and WV", "three steps back: logits = c WV, c = sum_t s_t x_t, s_t = (x_T A) . x_t",
        "paper A, Fig. 5: the linear-attention model that learns the relation first",
        [f"{GRAD}[linear_attention]"]),
    6: ("retrieval_backward", "the gradients of the token-retrieval transformer for WKQ and WV",
        "as exercise 4 with one query w = WKQ z_eos for all samples; a plain (N, L, d) gather "
        "E[tokens] is fine, the chunks of retrieval_forward only save memory",
        "paper B: the one-layer transformer, attention only or with a fixed random MLP",
        [f"{GRAD}[retrieval(m=None)]", f"{GRAD}[retrieval(m=7)]"]),
    7: ("three_step", "the three full-batch gradient steps from zero of the docstring",
        "retrieval_grad gives both gradients; WKQ1 is linear in gamma, so query_norm fixes gamma "
        "= q / |grad_WKQ z_eos|",
        "paper B: V1 = -eta grad_V, WKQ1 = -gamma grad_W, V2 = V1 - gamma grad_V",
        ["test_three_step_matches_naive_steps[None]", "test_three_step_matches_naive_steps[3]"]),
    8: ("solve_n_log_n", "the N >= 1 with N ln N = y, by Newton's method",
        "f(N) = N ln N - y has f'(N) = ln N + 1; start near y / ln y and keep N >= 1",
        "paper A, Fig. 1 left: the capacity law d^2 = c N ln N solved for N (linear_capacity_N)",
        ["test_theory_memory_formulas_hand_computed"]),
    9: ("attention_meanfield", "the mean-field attention p on the informative position and the "
        "distractor mass nu2", "beta = q cos sqrt(z2), tau^2 = q^2 / d; clip nu2 with np.clip",
        "paper B: the attention after the query step, in this project's mean-field form",
        ["test_attention_and_query_by_hand"]),
}


# Functions that hold an exercise's answer in another form: withheld from the student copy.
WITHHELD = {"transformer_backward": "3 and 4", "three_step_limit": "6 and 7"}


def withhold(src):
    """The module source with the bodies of WITHHELD functions replaced by a raise."""
    lines = src.splitlines(keepends=True)
    funcs = [f for f in ast.walk(ast.parse(src)) if isinstance(f, ast.FunctionDef) and f.name in WITHHELD]
    for f in sorted(funcs, key=lambda f: -f.lineno):
        body = f.body[1:] if ast.get_docstring(f) is not None else f.body
        pad = re.match(r"\s*", lines[body[0].lineno - 1]).group()
        lines[body[0].lineno - 1:f.end_lineno] = [
            f'{pad}raise NotImplementedError("withheld from the student copy: it holds the answer '
            f'to exercises {WITHHELD[f.name]}")\n']
    return "".join(lines)


def stub(src, found):
    """The module source with every marked solution replaced by a hint and a raise; the
    exercise numbers met are added to the set `found`."""
    lines = src.splitlines(keepends=True)
    funcs = [f for f in ast.walk(ast.parse(src)) if isinstance(f, ast.FunctionDef)]
    for i in reversed(range(1, len(lines) + 1)):       # bottom up: earlier line numbers hold
        m = MARK.search(lines[i - 1])
        if not m:
            continue
        n = int(m.group(1))
        f = min((f for f in funcs if f.lineno <= i <= f.end_lineno), key=lambda f: f.end_lineno)
        if n not in EXERCISES or EXERCISES[n][0] != f.name:
            die(f"line {i}: exercise {n} is not {f.name} in homework.EXERCISES")
        body = f.body[1:] if ast.get_docstring(f) is not None else f.body
        start = body[0].lineno if i == f.lineno else i
        pad = re.match(r"\s*", lines[start - 1]).group()
        _, task, hint, _, _ = EXERCISES[n]
        new = [f"{pad}# {'      ' if k else 'hint: '}{s}\n" for k, s in enumerate(hint.split("; "))]
        new.append(f'{pad}raise NotImplementedError("exercise {n}: {task}")\n')
        lines[start - 1:f.end_lineno] = new
        found.add(n)
    return "".join(lines)


class _Seen:
    """pytest plugin: the first exception of every test, where it was raised, and which ran."""
    def __init__(self):
        self.errors, self.ran, self.broken = {}, set(), None

    def pytest_runtest_makereport(self, item, call):
        if call.excinfo is not None and item.name not in self.errors:
            frames = [(os.path.basename(str(e.path)), e.lineno + 1) for e in call.excinfo.traceback]
            self.errors[item.name] = (call.excinfo.value, _where(frames))
        if call.when == "call":
            self.ran.add(item.name)

    def pytest_collectreport(self, report):        # e.g. a SyntaxError in recall.py
        if report.failed:
            text = report.longreprtext
            kind, _, msg = re.sub(r"^E\s+", "", text.strip().splitlines()[-1]).partition(": ")
            where = _where(re.findall(r'(\w+\.py)(?:", line |:)(\d+)', text))
            self.broken = f"{kind}{' at ' + where if where else ''}: {msg}"


def _where(frames):
    """file:line of the innermost frame in the project's files, or ''."""
    ours = [f"{f}:{n}" for f, n in frames if f in MODULES + ["test_recall.py"]]
    return ours[-1] if ours else ""


def verdict(n, seen):
    """passed, failed (one-line reason) or not attempted, for exercise n."""
    tests = EXERCISES[n][4]
    if seen.broken:
        return f"failed ({seen.broken})"
    errors = [seen.errors[t] for t in tests if t in seen.errors]
    if not errors:
        missing = [t for t in tests if t not in seen.ran]
        return f"failed (test {missing[0]} did not run)" if missing else "passed"
    for e, _ in errors:
        m = re.match(r"exercise (\d+):", str(e)) if isinstance(e, NotImplementedError) else None
        if m and int(m.group(1)) == n:
            return "not attempted"
        if m:
            return f"failed (uses exercise {m.group(1)}, which is not attempted yet)"
    worst = [(float(m.group(2)), m.group(0)) for e, _ in errors if isinstance(e, AssertionError)
             for m in [re.match(r"worst (.*?) ([-+.e0-9]+|nan|inf) in .*", str(e))] if m]
    if worst and len(worst) == len(errors):
        return f"failed ({max(worst)[1]})"
    e, where = errors[0]
    first = (str(e).strip().splitlines() or [""])[0][:120]
    return f"failed ({type(e).__name__}{' at ' + where if where else ''}: {first})"


def results(numbers):
    """[(n, function, verdict)]: runs the exercises' tests in one pytest session, quietly."""
    import pytest
    seen = _Seen()
    ids = [f"{os.path.join(HERE, 'test_recall.py')}::{t}" for n in numbers for t in EXERCISES[n][4]]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main(ids + ["-q", "-p", "no:cacheprovider", "--rootdir", HERE], plugins=[seen])
    return [(n, EXERCISES[n][0], verdict(n, seen)) for n in numbers]


MAKEFILE = """\
# `make check` checks every exercise, `make check EX=N` exercise N only.  PY is the Python that
# runs it (numpy, matplotlib, pytest); by default a .venv made here from requirements.txt.
PYTHON ?= python3
PY ?= .venv/bin/python
.PHONY: check test
check:
\t@command -v $(PY) >/dev/null || { echo "creating .venv (numpy, matplotlib, pytest)..." && \\
\t  $(PYTHON) -m venv .venv && \\
\t  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt; }
\t$(PY) homework.py check $(EX)
test:
\t$(PY) -m pytest -q test_recall.py
"""


def sheet(lines):
    """EXERCISES.md: the exercise sheet, with the lines the checker printed for the reference."""
    grads = [str(n) for n, e in EXERCISES.items() if e[4][0].startswith(GRAD)]
    out = ["# Exercises", "",
           "The code implements two papers: (A) E. Nichani, J. D. Lee, A. Bietti, *Understanding "
           "Factual Recall in Transformers via Associative Memories*, ICLR 2025, arXiv:2412.06538; "
           "(B) N. M. Vural, A. Bietti, M. Soltanolkotabi, D. Wu, *Learning to Recall with "
           "Transformers Beyond Orthogonal Embeddings*, ICLR 2026, arXiv:2603.15923.  A backward "
           "pass returns a dict with exactly the keys of params, each gradient of its parameter's "
           "shape (e.g. {\"W\": dW}).  The first `make check` creates .venv here and installs "
           "requirements.txt (about half a minute); `make check PY=python3` uses a Python that "
           "already has numpy, matplotlib and pytest.", "",
           "Each exercise is the code of one function in recall.py, train.py or theory.py, from "
           "the line marked `# exercise N` to the end of the function (the mark on the `def` line: "
           "the whole body after the docstring).  In this copy it raises NotImplementedError; "
           "the docstrings, the forward passes and everything else are the reference code.  "
           "`make check` prints one line per exercise (`make check EX=N`: exercise N only): "
           "passed, failed (with the worst relative error, or the reason), or not attempted.  "
           f"A backward pass (exercises {', '.join(grads)}) passes when the relative error "
           "|g - g_num| / (|g| + |g_num|) against centred finite differences in float64 is below "
           "1e-6 for every parameter, at a random point and again after three Adam steps.", "",
           "| N | function | derive | from |", "| --- | --- | --- | --- |"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in (n, f"`{f}`", task, src)) + " |"
            for n, (f, task, _, src, _) in EXERCISES.items()]
    for (n, f, v), (_, task, hint, src, tests) in zip(lines, EXERCISES.values()):
        where = next(m for m in MODULES if f"def {f}(" in open(os.path.join(HERE, m)).read())
        out += ["", f"## Exercise {n}: `{f}` ({where})", "", f"Derive {task}.", "",
                f"Source: {src}.", "",
                f"Hint: {hint}.", "", f"Check: `make check EX={n}` (runs {', '.join(tests)}).  "
                "A correct solution prints", "", f"    exercise {n} {f}: {v}"]
    return "\n".join(out) + "\n"


def make(out):
    if os.path.exists(out) and os.listdir(out):
        die(f"{out} exists and is not empty; remove it first (it may hold answers)")
    lines = results(list(EXERCISES))
    bad = [f"exercise {n} {f}: {v}" for n, f, v in lines if v != "passed"]
    if bad:
        print("the reference solutions do not pass: " + "; ".join(bad), file=sys.stderr)
        sys.exit(1)
    found, files = set(), {"Makefile": MAKEFILE, "EXERCISES.md": sheet(lines)}
    for name in COPIED:
        with open(os.path.join(HERE, name)) as f:
            files[name] = withhold(stub(f.read(), found)) if name in MODULES else f.read()
    if found != set(EXERCISES):
        die(f"no '# exercise N' mark for exercise(s) {sorted(set(EXERCISES) - found)}")
    os.makedirs(out, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    print(f"wrote {out}/: {len(EXERCISES)} exercises, see {out}/EXERCISES.md")


def die(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def main(argv):
    usage = "usage: python homework.py make [DIR] | check [N]"
    if argv[:1] == ["make"] and len(argv) <= 2:
        return make(argv[1] if len(argv) == 2 else "homework") or 0
    if argv[:1] == ["check"] and len(argv) <= 2:
        if len(argv) == 2 and (not argv[1].isdigit() or int(argv[1]) not in EXERCISES):
            die(f"{usage}  (N is one of {', '.join(map(str, EXERCISES))})")
        lines = results([int(argv[1])] if len(argv) == 2 else list(EXERCISES))
        for n, f, v in lines:
            print(f"exercise {n} {f}: {v}")
        return int(any(v.startswith("failed") for _, _, v in lines))
    die(usage)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
