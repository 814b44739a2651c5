"""run.py -- the runner: `python run.py EXPERIMENT [--scale S] [--set KEY=VALUE] ...`.

It knows no experiment: paper_a.py and paper_b.py list theirs (EXPERIMENTS).  It makes the
configs, runs those without a record (--jobs in parallel), saves each record as it finishes
(RESULTS/<name>/<key>.json) and prints the summary; Ctrl-C loses only the runs in flight."""
import os

# One BLAS thread per process, set before NumPy loads; parallelism is --jobs (RESULTS.md).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse                  # noqa: E402
import ctypes                    # noqa: E402
import glob                      # noqa: E402
import hashlib                   # noqa: E402
import json                      # noqa: E402
import multiprocessing as mp     # noqa: E402
import signal                    # noqa: E402
import sys                       # noqa: E402
import time                      # noqa: E402

import paper_a                   # noqa: E402
import paper_b                   # noqa: E402

RESULTS = "results"              # the default folder of the records
SCALES = ("tiny", "small", "full")
CHOICES = {"dtype": ("float32", "float64"), "learners": tuple(paper_b.LEARNERS)}  # text fields


def experiments():
    """Every experiment: {name: {"help", "grid" (per scale), "configs", "one", "summary"}}."""
    return {**paper_a.EXPERIMENTS, **paper_b.EXPERIMENTS}


def keep_freed_memory():
    """Ask glibc to keep large freed arrays, not page-fault them in again at every step (a
    third of a transformer step's time); nothing to do without glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)      # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)     # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


# ------------------------------------------------------------------ records

def config_key(config):
    """The record's file name: a hash of the config."""
    blob = json.dumps(config, sort_keys=True, default=float)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def unique(configs):
    """The configs in order, each once: identical configs are one run."""
    return list({config_key(c): c for c in configs}.values())


def save_json(path, obj, indent=1):
    """Write then rename, so no reader sees half a file; NumPy values become lists."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=indent, default=lambda o: o.tolist())
    os.replace(tmp, path)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def load_records(out, experiment, scale=None):
    """The records of the newest sweep of `experiment` at `scale` (None: any) in `out` and
    its listing _set-<scale>.json (scale, overrides, keys); ([], None) if none."""
    folder = os.path.join(out, experiment)
    pattern = os.path.join(folder, f"_set-{scale or '*'}.json")
    sets = sorted(glob.glob(pattern), key=os.path.getmtime)
    if not sets:
        return [], None
    listed = read_json(sets[-1])
    paths = [os.path.join(folder, key + ".json") for key in listed["keys"]]
    return [read_json(p) for p in paths if os.path.exists(p)], listed


def _run_record(job):
    path, experiment, run_one, config = job
    t0 = time.time()
    result = run_one(config)
    return path, {"experiment": experiment, "config": config, "result": result,
                  "seconds": round(time.time() - t0, 3)}


def sweep(experiment, configs, run_one, out=RESULTS, jobs=1, scale="custom",
          overrides=None, only=None):
    """run_one(config) for each config (or config `only`) without a record, saved as it ends
    in OUT/<experiment>/<key>.json; the records (configs hold their seeds: any jobs, order)."""
    configs = unique(configs)
    keys = [config_key(c) for c in configs]
    folder = os.path.join(out, experiment)
    listing_path = os.path.join(folder, f"_set-{scale}.json")   # the set a figure draws
    listing = {"experiment": experiment, "scale": scale, "set": overrides or {}, "keys": keys}
    if only is not None:
        if not 0 <= only < len(configs):
            raise ValueError(f"only must be in [0, {len(configs)}), got {only}")
        configs, keys = [configs[only]], [keys[only]]
    paths = [os.path.join(folder, k + ".json") for k in keys]
    todo = [(p, experiment, run_one, c) for c, p in zip(configs, paths) if not os.path.exists(p)]
    if not todo:
        save_json(listing_path, listing)
        sys.stderr.write(f"{experiment}: nothing to run, every record is in {folder}/\n")
    _run_all(todo, jobs, len(configs), experiment, listing_path, listing)
    return [read_json(p) for p in paths]


def _run_all(todo, jobs, n_configs, experiment, listing_path, listing):
    """Run the jobs, saving each record and then the listing (a run that fails at once
    keeps the last listing); progress on a terminal."""
    pool = None
    if jobs > 1 and len(todo) > 1:          # the workers leave Ctrl-C to the parent
        pool = mp.Pool(min(jobs, len(todo)), signal.signal, (signal.SIGINT, signal.SIG_IGN))
    show, t0, done_before = sys.stderr.isatty() and todo, time.time(), n_configs - len(todo)
    try:
        runs = pool.imap_unordered(_run_record, todo) if pool else map(_run_record, todo)
        for n, (path, record) in enumerate(runs, 1):
            save_json(path, record)
            save_json(listing_path, listing)
            if show:
                elapsed = time.time() - t0
                left = elapsed / n * (len(todo) - n)
                sys.stderr.write(f"\r{experiment}: {done_before + n}/{n_configs} done, "
                                 f"{elapsed:.0f} s, ~{left:.0f} s left   ")
    finally:
        if pool:
            pool.terminate()         # every run is in, or Ctrl-C: drop those in flight
        if show:
            sys.stderr.write("\n")


# ------------------------------------------------------------------ the command line

def parse_value(key, text, current, choices=None):
    """A --set value: JSON (a plain word is text, `none` is null) of the type grid field `key`
    has now (an int where a float is, a number where None is; a list field: one or a list);
    numbers stay > 0 (>= 0 where one is 0 now), a text in `choices`."""
    try:
        value = json.loads("null" if text.lower() == "none" else text)
    except ValueError:
        value = text
    examples = current if isinstance(current, list) else [current]
    known = [x for x in examples if x is not None]
    kinds = {type(x) for x in examples}                    # NoneType where None is
    if float in kinds or kinds <= {type(None)}:            # an int for a float
        kinds |= {int, float}
    numbers = all(type(x) in (int, float) and x >= 0 for x in known)
    values = value if isinstance(value, list) else [value]
    for v in values:
        bad = type(v) not in kinds or (choices is not None and v not in choices)
        if numbers and type(v) in (int, float) and not choices:
            bad = bad or v < 0 or (v == 0 and 0 not in known)
        if bad:
            raise ValueError(f"--set {key}={text}: expected "
                             f"{_wanted(current, known, numbers, choices, value is text)}")
    if known and all(type(x) is float for x in known):   # 1000 and 1000.0: one config
        values = [v if v is None else float(v) for v in values]
    return values if isinstance(current, list) else values[0]


def _wanted(current, known, numbers, choices, was_text):
    """What a --set value should be, in words."""
    if choices:
        return f"one of {', '.join(choices)}"
    if not known:
        return "a positive number or none"
    sign = ""
    if numbers:
        sign = " non-negative" if 0 in known else " positive"
    text = f"a{sign} {type(known[0]).__name__} like {json.dumps(known[0])}"
    if isinstance(current, list):
        text += " or a list of them"
    if was_text:
        text += " (as JSON, in single quotes)"
    return text


class _Parser(argparse.ArgumentParser):
    def error(self, message):            # a usage error: one line, exit status 2
        hint = ""
        if "unrecognized" in message and "--set" in sys.argv:   # a value the shell split
            hint = " (put a --set value in single quotes: --set 'KEY=VALUE')"
        self.exit(2, f"{self.prog}: error: {message}{hint} (see --help)\n")


def build_parser(known):
    parser = _Parser(prog="run.py", description="Run one experiment: OUT/<experiment>/*.json.")
    sub = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name, e in known.items():
        fields = ", ".join(sorted(e["grid"]["small"]))
        p = sub.add_parser(name, help=e["help"], description=e["help"])
        p.add_argument("--scale", choices=SCALES, default="small")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help=f"set a field of the grid to single-quoted JSON: {fields}")
        p.add_argument("--jobs", type=int, default=1, help="configurations run in parallel")
        p.add_argument("--seed", type=int, default=0, help="base random seed (default 0)")
        p.add_argument("--out", default=RESULTS, help="results folder (default: results)")
        p.add_argument("--list", action="store_true", help="print the configurations, exit")
        p.add_argument("--only", type=int, metavar="I", help="run only configuration I")
    return parser


def read_sets(args, e):
    """The --set values by field, checked against the grid at args.scale."""
    grid = e["grid"].get(args.scale, e["grid"]["small"])   # full: small unless it has one
    texts = {}
    for item in args.set:
        key, _, text = item.partition("=")
        key = key.strip()                                   # "d = 8" works too
        if key not in grid:
            raise ValueError(f"--set {key}: not a field of {args.experiment}'s grid; its "
                             f"fields are {', '.join(sorted(grid))}")
        if key in texts:
            raise ValueError(f"--set names a field twice ({' '.join(args.set)}): give each once")
        texts[key] = text.strip()
    sets = {}
    for key, text in texts.items():
        sets[key] = parse_value(key, text, grid[key], CHOICES.get(key))
    return sets


def make_configs(args, e, sets):
    """The configurations as sweep runs them, with --seed, --jobs and --only checked."""
    if args.seed < 0 or args.jobs < 1:
        raise ValueError(f"--seed {args.seed} --jobs {args.jobs}: need a seed >= 0, jobs >= 1")
    grid = dict(e["grid"].get(args.scale, e["grid"]["small"]), **sets)
    configs = unique(e["configs"](grid, args.seed))
    if not configs:
        rules = f"{e['configs'].__name__} in {e['configs'].__module__}.py"
        raise ValueError(f"no configuration of {args.experiment} is left with these "
                         f"settings (the rules that drop some: {rules})")
    if args.only is not None and not 0 <= args.only < len(configs):
        raise ValueError(f"--only must be in [0, {len(configs)}), got {args.only}")
    return configs


def list_configs(args, configs):
    for i, c in enumerate(configs):
        if args.only is None or args.only == i:
            path = os.path.join(args.out, args.experiment, config_key(c) + ".json")
            state = "done" if os.path.exists(path) else "todo"
            print(f"{i}\t{state}\t{json.dumps(c, sort_keys=True)}")


def main(argv=None):
    if hasattr(signal, "SIGPIPE"):      # `--list | head` ends quietly, as a Unix tool does
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    keep_freed_memory()
    known = experiments()
    parser = build_parser(known)
    args = parser.parse_args(argv)
    name = args.experiment
    e = known[name]
    t0 = time.time()
    try:
        sets = read_sets(args, e)
        configs = make_configs(args, e, sets)
        if args.list:
            list_configs(args, configs)
            return
        records = sweep(name, configs, e["one"], args.out, args.jobs, args.scale, sets, args.only)
    except ValueError as err:                    # a bad combination of option values
        parser.error(str(err))
    except OSError as err:                       # e.g. --out names a file
        parser.error(f"cannot write the results: {err}")
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{name}: interrupted; finished runs are saved in "
                         f"{args.out}/{name}/, rerun to continue\n")
        sys.exit(130)
    if args.only is None:
        print(e["summary"](records))
    else:
        print(f"{name}: configuration {args.only} done; a run without --only runs the "
              "others and prints the summary")
    draw = f"python plots.py {name} --scale {args.scale}"
    if args.out != RESULTS:
        draw += f" --results {args.out}"
    print(f"{name}: {len(records)} record{'s' if len(records) > 1 else ''} in "
          f"{args.out}/{name}/ ({time.time() - t0:.1f}s); draw them: {draw}")


if __name__ == "__main__":
    main()
