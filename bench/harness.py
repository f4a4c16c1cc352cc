"""Benchmark harness behind `bench/run` (see bench/README.md).

The parent process generates (once, cached) a simulated landing folder, then starts one fresh
child process per measured run so that every run has a cold DuckDB, its own peak RSS and no
state carried over. Children print one JSON line; the parent takes medians and spreads, prints
one table and writes bench/results/<git sha>-<scale>.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import mmap
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
# BENCH_ROOT: measure another checkout (a copy of an older tree) with this harness and cache
ROOT = Path(os.environ.get("BENCH_ROOT") or HERE.parent).resolve()
CHILD_ENV = {**os.environ, "PYTHONPATH": str(ROOT)} if os.environ.get("BENCH_ROOT") else None
CACHE = HERE / ".cache"
RESULTS = HERE / "results"
START_DAY = date(2026, 6, 1)

# Children compile imported modules once into bench/.cache/pycache (PYTHONPYCACHEPREFIX) like any
# installed environment; this machine sets PYTHONDONTWRITEBYTECODE=1 and the venv holds no
# __pycache__, so without it every process recompiles pandas/GX from source (--cold-imports).
PYCACHE = CACHE / "pycache"


def child_env(cold: bool = False) -> dict:
    env = dict(CHILD_ENV or os.environ)
    if not cold:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


# ----------------------------------------------------------------------------- small helpers

def hwm_kib() -> int:
    """Peak resident set of this process since the last reset_hwm() (KiB)."""
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


PEAK_KIB = [0]  # the process peak across resets (each reset first folds the current peak in)


def reset_hwm() -> None:
    PEAK_KIB[0] = max(PEAK_KIB[0], hwm_kib())
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else (None, None)


def git_sha() -> tuple[str, bool]:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, text=True,
                             capture_output=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                    cwd=ROOT, text=True, capture_output=True, check=False).stdout.strip())
        return sha, dirty
    except (OSError, subprocess.CalledProcessError):
        return "nogit", False


def machine_note() -> dict:
    note = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "loadavg": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            note["cpu"] = m.group(1).strip() if m else None
        with open("/proc/meminfo") as f:
            m = re.search(r"MemTotal:\s+(\d+)", f.read())
            note["mem_gib"] = round(int(m.group(1)) / 2**20, 1)
    except OSError:
        pass
    try:
        import duckdb
        note["duckdb"] = duckdb.__version__
    except ImportError:
        pass
    note["recon_threads"] = os.environ.get("RECON_THREADS")
    return note


def scale_key(a) -> str:
    return f"n{a.nodes}-s{a.scale:g}-e{a.endpoints}-d{a.days}-seed{a.seed}"


def sim_version() -> str:
    """Hash of the simulator's sources: a changed simulator writes other files, so new cache."""
    import hashlib
    h = hashlib.sha256()
    for p in sorted((ROOT / "recon" / "simulate").glob("*.py")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:8]


def dir_stats(folder: Path) -> dict:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def warm_page_cache(folder: Path) -> None:
    for p in folder.rglob("*"):
        if p.is_file():
            with open(p, "rb") as f:
                while f.read(1 << 24):
                    pass


# ----------------------------------------------------------------------------- data (cached)

def ensure_sim(a) -> Path:
    """Simulate once per parameter set; a `.complete` marker makes the cache crash-safe."""
    out = CACHE / f"{scale_key(a)}-sim{sim_version()}"
    done = out / ".complete"
    if done.exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"simulating {scale_key(a)} into {out} (once; cached) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    code = ("import sys; from datetime import date; from recon.simulate import simulate; "
            f"simulate({str(out / 'input')!r}, seed={a.seed}, days={a.days}, nodes={a.nodes}, "
            f"endpoints={a.endpoints}, scale={a.scale}, start_day=date.fromisoformat({START_DAY.isoformat()!r}))")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env=child_env())
    secs = time.perf_counter() - t0
    # the ground truth is not an input: keep it out of the landing folder
    gt = out / "input" / "expected"
    if gt.exists():
        shutil.move(str(gt), str(out / "expected"))
    done.write_text(json.dumps({"simulate_seconds": secs, **dir_stats(out / "input")}))
    print(f"  simulated in {secs:.1f} s", file=sys.stderr, flush=True)
    return out


def split_files(src: Path, dst: Path, parts: int) -> Path:
    """`dst`: a copy of the landing folder `src` in which every JSON Lines file is cut into
    `parts` files of whole lines and about equal bytes (`<stem>-pNN.jsonl`; fewer when it has
    fewer lines), the other files linked as they are. The collector writes one file per
    resource and UTC hour, the simulator a few big ones: this is the day as many files (per-file
    costs that the simulator's layout hides show only then). Cached (`.complete`)."""
    done = dst / ".complete"
    if done.exists():
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    print(f"cutting {src} into {parts} files per JSON Lines file: {dst} (once; cached) ...",
          file=sys.stderr, flush=True)
    for p in sorted(src.rglob("*")):
        if not p.is_file():
            continue
        out = dst / "input" / p.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix != ".jsonl":
            try:
                os.link(p, out)
            except OSError:  # another file system
                shutil.copy2(p, out)
            continue
        size = p.stat().st_size
        if size == 0:
            out.with_name(f"{out.stem}-p00.jsonl").touch()
            continue
        with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            cuts = [0]  # after the newline at or past each k/parts of the file
            for k in range(1, parts):
                j = m.find(b"\n", max(k * size // parts, cuts[-1]))
                if j < 0 or j + 1 >= size:
                    break
                cuts.append(j + 1)
            cuts.append(size)
            for n, (a, b) in enumerate(itertools.pairwise(cuts)):
                with open(out.with_name(f"{out.stem}-p{n:02d}.jsonl"), "wb") as w:
                    w.write(m[a:b])
    done.write_text(json.dumps(dir_stats(dst / "input")))
    return dst


# ----------------------------------------------------------------------------- child: one run

def child_run(spec: dict) -> dict:
    """One daily run in this (fresh) process; returns per-stage seconds and peak RSS."""
    out: dict = {"stages": {}, "rss_mib": {}, "models": {}}
    t0 = time.perf_counter()
    reset_hwm()
    from recon import db as warehouse
    from recon import pipeline
    out["stages"]["import"] = time.perf_counter() - t0
    out["recon_path"] = pipeline.__file__

    day_from = date.fromisoformat(spec["day_from"]) if spec.get("day_from") else None
    day_to = date.fromisoformat(spec["day_to"]) if spec.get("day_to") else None
    orig_load, orig_build = pipeline.load_folder, pipeline.build

    def load_folder(con, folder, progress=None, **kw):
        reset_hwm()
        r = orig_load(con, folder, progress=progress, **kw)
        out["rss_mib"]["landing"] = hwm_kib() / 1024
        return r

    def build(con, timings=None, **kw):
        reset_hwm()
        models: dict = {}
        orig_build(con, timings, models, **kw)
        out["models"].update(models)
        out["rss_mib"]["build"] = hwm_kib() / 1024

    pipeline.load_folder, pipeline.build = load_folder, build
    orig_connect = pipeline.connect
    if spec.get("memory_limit"):  # what a DuckDB memory_limit would do (the product sets none)
        def connect(*args, **kw):
            con = orig_connect(*args, **kw)
            con.execute(f"set memory_limit = '{spec['memory_limit']}'")
            return con
        pipeline.connect = warehouse.connect = connect
    t1 = time.perf_counter()
    try:
        # as the daily flow's build does when its gate follows: GX starts importing during the
        # commit (an older tree measured with BENCH_ROOT has no such option)
        import inspect

        kw = ({"prefetch_gate": True} if spec.get("validation", True)
              and "prefetch_gate" in inspect.signature(pipeline.run).parameters else {})
        res = pipeline.run(spec["input"], spec["db"], None, day_from, day_to, **kw)
    finally:  # never leave the wrappers behind (tests call this in-process)
        pipeline.load_folder, pipeline.build = orig_load, orig_build
        pipeline.connect = warehouse.connect = orig_connect
    t_run = time.perf_counter() - t1
    tm = res.timings
    st = out["stages"]
    st["landing"] = tm.get("load")
    st["staging"] = tm.get("staging")
    st["scope"] = tm.get("scope")  # windowed runs only (sql/scope/)
    st["intermediate"] = tm.get("intermediate")
    st["marts"] = tm.get("marts")
    st["findings"] = out["models"].get("marts.findings")
    st["checks"] = tm.get("checks")
    # the commit and the checkpoint after it both write the file (DuckDB checkpoints at the
    # commit itself when the WAL is large): one stage
    st["commit"] = (tm.get("commit") or 0) + (tm.get("checkpoint") or 0)
    st["run_other"] = t_run - sum(v for k, v in tm.items()
                                  if k in ("load", "staging", "scope", "intermediate", "marts",
                                           "checks", "commit", "checkpoint"))
    st["pipeline_run"] = t_run
    out["records"] = {"in": res.records_in, "loaded": res.loaded, "quarantined": res.quarantined,
                      "skipped": res.skipped, "staging_quarantined": res.staging_quarantined,
                      "files": len(res.files),
                      "files_unchanged": sum(1 for f in res.files if f.unchanged)}

    con = warehouse.connect(spec["db"])
    if spec.get("memory_limit"):
        con.execute(f"set memory_limit = '{spec['memory_limit']}'")
    try:
        out["raw_rows"] = dict(con.execute(
            "select 'k8s_objects', count(*) from raw.k8s_objects union all "
            "select 'runpod_billing', count(*) from raw.runpod_billing union all "
            "select 'runpod_inventory', count(*) from raw.runpod_inventory union all "
            "select 'serverless_jobs', count(*) from raw.serverless_jobs").fetchall())
        out["staging_rows"] = con.execute(
            "select sum(estimated_size) from duckdb_tables() where schema_name = 'staging'"
        ).fetchone()[0]
        out["marts_rows"] = dict(con.execute(
            "select table_name, estimated_size from duckdb_tables() where schema_name = 'marts'"
        ).fetchall())
        # validation: the flow's data-quality gate (Great Expectations' import timed apart)
        if spec.get("validation", True):
            reset_hwm()
            t = time.perf_counter()
            import great_expectations  # noqa: F401  (what is left of it, if prefetched)
            st["gx_import"] = time.perf_counter() - t
            from recon.gate.run import validate
            from recon.gate.scope import Scope

            t = time.perf_counter()
            # as the daily flow does: the run's days, the files no validation passed yet
            scope = Scope.for_run(con, day_from, day_to)
            out["validation_result"] = validate(con, "bench", scope=scope).summary()
            st["validation"] = time.perf_counter() - t
            out["rss_mib"]["validation"] = hwm_kib() / 1024
        # exports: the day's costs/findings CSVs
        if spec.get("exports", True):
            from recon.outputs.exports import export_day

            reset_hwm()
            t = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
                export_day(con, spec["export_day"], tmp)
            st["exports"] = time.perf_counter() - t
            out["rss_mib"]["exports"] = hwm_kib() / 1024
    finally:
        con.close()
    st["daily_total"] = sum(st.get(k) or 0 for k in ("import", "pipeline_run", "validation",
                                                    "gx_import", "exports"))
    reset_hwm()
    out["ru_maxrss_mib"] = PEAK_KIB[0] / 1024  # VmHWM folded over the per-stage resets
    out["db_bytes"] = os.path.getsize(spec["db"]) if os.path.exists(spec["db"]) else None
    return out


# the pod fields the floor extracts: the issue's "handful of fields" (its yardstick, below, takes
# these four; floor_extract adds the main container's finishedAt)
POD_FIELDS = ['$.object.metadata.uid', '$.object.metadata.resourceVersion',
              '$.object.metadata.creationTimestamp', '$.object.spec.nodeName']
POD_FINISHED = '$.object.status.containerStatuses[0].state.terminated.finishedAt'


def child_floor(spec: dict) -> dict:
    """The floor: a bare DuckDB scan of the same input, and a handful of fields extracted."""
    import duckdb

    folder = Path(spec["input"])
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")
    if os.environ.get("RECON_THREADS"):
        con.execute(f"set threads = {int(os.environ['RECON_THREADS'])}")
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in (".json", ".jsonl")]
    jsonl = [str(p) for p in files if p.suffix == ".jsonl"]
    docs = [str(p) for p in files if p.suffix == ".json"]
    pods = [f for f in jsonl if "watch-pods" in f]
    jobs = [f for f in jsonl if "serverless-jobs" in f]
    other_jsonl = [f for f in jsonl if f not in pods and f not in jobs]
    out: dict = {}

    def q(sql, args):
        return con.execute(sql, [args]).fetchall()

    reset_hwm()
    t = time.perf_counter()
    n = 0
    if jsonl:
        n += q("select count(*), sum(length(json)) from read_ndjson_objects(?)", jsonl)[0][0]
    big = max([os.path.getsize(f) for f in docs] or [0]) + 1024
    rjo = f"read_json_objects(?, format='auto', maximum_object_size={big})"
    if docs:
        n += q(f"select count(*), sum(length(json)) from {rjo}", docs)[0][0]
    out["scan"] = time.perf_counter() - t
    if pods:  # the issue's own yardstick, pods alone: count the lines of pod watch JSONL, then
        # extract a handful of fields from all of them (no aggregate beyond counting them)
        t = time.perf_counter()
        q("select count(*) from read_ndjson_objects(?)", pods)
        out["ref_count"] = time.perf_counter() - t
        t = time.perf_counter()
        q(f"""select count(v[1]), count(v[2]), count(v[3]), count(v[4])
              from (select json_extract_string(json, {POD_FIELDS!r}) as v
                    from read_ndjson_objects(?))""", pods)
        out["ref_extract"] = time.perf_counter() - t
        out["ref_gb"] = sum(os.path.getsize(f) for f in pods) / 1e9
    t = time.perf_counter()
    # Each document is parsed once: a list of paths is one parse (json_extract_string with a
    # list), where `->>` per field parses it once per field: 1.5-1.9x slower than this (5.5 s
    # against 3.1 s on the target day), a floor that would flatter the ratios to it.
    if pods:
        q(f"""select count(*), count(distinct v[1]), max(v[2]::bigint), min(v[3]::timestamptz),
                    max(v[5])
             from (select json_extract_string(json, {[*POD_FIELDS, POD_FINISHED]!r}) as v
                   from read_ndjson_objects(?))""", pods)
    if jobs:
        q("""select count(*), count(distinct v[1]), sum(v[3]::bigint), max(v[4]::timestamptz)
             from (select json_extract_string(json, ['$.id', '$.endpointId', '$.executionTime',
                          '$.completedAt']) as v
                   from read_ndjson_objects(?))""", jobs)
    if other_jsonl:
        q("select count(*), max(json ->> '$.x_recon.pulledAt') from read_ndjson_objects(?)",
          other_jsonl)
    if docs:
        q(f"""select count(*), sum(coalesce(n[1], n[2]))
             from (select json_array_length(json, ['$.items', '$.records']) as n from {rjo})""",
          docs)
    out["extract"] = time.perf_counter() - t
    out["records"] = n
    out["rss_mib"] = hwm_kib() / 1024
    return out


def child_main(argv) -> None:
    spec = json.loads(argv[0])
    fn = child_floor if spec["mode"] == "floor" else child_run
    print("BENCH-RESULT " + json.dumps(fn(spec)), flush=True)


def warm(folder: Path, only: list[str] | None = None) -> None:
    """Read every file of `folder` once (into the page cache), or only the files `only`: a run
    with history follows the copy of a multi-GB warehouse, which evicted its input, while the
    runs without history read input cached by the run before: day 4 on 30 days lands 1.7 s
    slower than alone without reading any history. A daily run's files are usually
    just written, so cached. A run with history is given its day's new files as `only`: the
    earlier days' files in its folder are landed already (it looks at their size and mtime,
    never their bytes), and reading them too puts ~5 GB more in the page cache beside the
    warehouse copy."""
    files = ([Path(p) for p in only] if only is not None
             else [p for p in sorted(folder.rglob("*")) if p.is_file()])
    for p in files:
        with open(p, "rb") as f:
            while f.read(8 << 20):
                pass


def settle() -> None:
    """Write back what the kernel still holds dirty (`sync`) before a timed run. A run with
    history follows the copy of a multi-GB warehouse whose pages were still being written back
    while the run wrote its own: a merge that appends into the persisted tables queued behind
    them. On the 30-day state, 3 interleaved pairs each, `stg_runpod__jobs` took 3.50-4.11 s
    against 2.76-3.03 s for the merge that staged its rows in memory first; with a sync after
    the copy, 2.61-3.36 s against 2.88-3.45 s."""
    os.sync()


def copy_state(src: Path, dst: Path) -> None:
    """Copy the history warehouse `src` to `dst` for one run, and write the copy back.

    It does not drop `src`'s pages from the page cache (`posix_fadvise DONTNEED`) to spare the
    run sharing it with two 8.6 GB copies: on this VM that makes the runs with history slower,
    not fairer: memory set free is slower to take again than page cache to reclaim (a DAMON
    `pageout` scheme and free page reporting run here). Day 4 on 30 days, the same state, 2
    interleaved pairs: landing 15.3-18.3 s with the drop against 13.7-13.8 s without."""
    shutil.copy(src, dst)
    os.sync()


def spawn(spec: dict) -> dict:
    if spec.get("mode") == "run":
        settle()
        warm(Path(spec["input"]), spec.get("warm"))
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, str(Path(__file__)), "--child", json.dumps(spec)],
                       cwd=ROOT, text=True, capture_output=True, check=False,
                       env=child_env(spec.get("cold_imports", False)))
    wall = time.perf_counter() - t0
    r = child_result(p, "benchmark child")
    r["process_wall"] = wall
    return r


def child_result(p: subprocess.CompletedProcess, what: str) -> dict:
    """The JSON a child printed after `BENCH-RESULT `; its output and an exit if it failed."""
    line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("BENCH-RESULT ")),
                None)
    if p.returncode or line is None:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit(f"{what} failed (exit {p.returncode})")
    return json.loads(line[len("BENCH-RESULT "):])


# ----------------------------------------------------------------------------- fixed costs

def fixed_costs(runs: int, prefect: bool) -> dict:
    """Interpreter start and imports, each in a fresh process: with compiled bytecode cached
    (as an installed environment has it) and cold (this machine: nothing compiled, no writes)."""
    def timed(code: str, env) -> float | None:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, env=env,
                           check=False)
        return time.perf_counter() - t if p.returncode == 0 else None

    out = {}
    checks = {"python_start": "pass", "import_recon_pipeline": "import recon.pipeline",
              "import_duckdb": "import duckdb"}
    import importlib.util
    if importlib.util.find_spec("great_expectations"):
        checks["import_great_expectations"] = "import great_expectations"
    if importlib.util.find_spec("prefect"):
        checks["import_prefect"] = "import prefect"
        checks["import_daily_flow"] = "import flows.daily_reconciliation"
    with tempfile.TemporaryDirectory(prefix="bench-prefect-") as home:
        extra = {"PREFECT_HOME": home, "DO_NOT_TRACK": "1",
                 "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        for cold in (False, True):
            env = {**child_env(cold), **extra}
            for name, code in checks.items():
                timed(code, env)  # compiles into the cache (warm) / warms the page cache
                xs = [timed(code, env) for _ in range(runs)]
                key = name + ("_cold" if cold else "")
                out[key] = {"median": med(xs), "min": spread(xs)[0], "max": spread(xs)[1]}
        if prefect and "import_prefect" in checks:
            # a trivial flow: the temporary local API server, its SQLite migrations, one run
            code = ("from prefect import flow\n@flow\ndef noop():\n    return 1\nnoop()\n")
            xs = [timed(code, {**child_env(), **extra})]
            out["prefect_trivial_flow_first"] = {"median": xs[0], "min": xs[0], "max": xs[0]}
    uv = shutil.which("uv")
    if uv:  # what `uv run` adds to every command (its sync check; recon.bytecode keeps it small)
        env = child_env()
        xs = []
        for _ in range(runs + 1):
            t = time.perf_counter()
            p = subprocess.run([uv, "run", "--project", str(ROOT), "python", "-c", "pass"],
                               cwd=ROOT, capture_output=True, env=env, check=False)
            xs.append(time.perf_counter() - t if p.returncode == 0 else None)
        xs = xs[1:]
        out["uv_run_python_start"] = {"median": med(xs), "min": spread(xs)[0],
                                      "max": spread(xs)[1]}
    return out


# ----------------------------------------------------------------------------- history (day 30)

def _day_of(ts: str | None) -> date | None:
    return date.fromisoformat(ts[:10]) if ts else None


def split_days(src: Path, dst: Path) -> list[date]:
    """Rewrite a multi-day simulation as a daily landing area: dst/day-YYYY-MM-DD/<same layout>.

    Window files are cut by the time each record belongs to (pod watch files are already one
    per creation day; events by creationTimestamp; nodes by registration; inventory/workers by
    pulledAt; jobs by completedAt; account billing by bucket start); static snapshots go to the
    first day. What a daily collector would have landed, so day k's run sees days 1..k.
    """
    import orjson

    days: set[date] = set()

    def put(rel: Path, d: date, data: bytes, mode="wb"):
        days.add(d)
        p = dst / f"day-{d.isoformat()}" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, mode) as f:
            f.write(data)

    for p in sorted(src.rglob("*")):
        if not p.is_file() or p.name == "recon.toml":
            continue
        rel = p.relative_to(src)
        name = p.name
        m = re.search(r"-(\d\d)\.json", name)
        if m:  # already one file per day index
            d = START_DAY + timedelta(days=int(m.group(1)))
            put(rel.with_name(re.sub(r"-\d\d\.json", ".json", name)), d, p.read_bytes())
        elif name == "events.json":
            doc = orjson.loads(p.read_bytes())
            by: dict = {}
            for it in doc["items"]:
                by.setdefault(_day_of(it["metadata"]["creationTimestamp"]), []).append(it)
            for d, items in by.items():
                put(rel, d, orjson.dumps({**doc, "items": items}, option=orjson.OPT_INDENT_2))
        elif name == "nodes-watch.json":
            dec = json.JSONDecoder()
            text = p.read_text()
            i, by = 0, {}
            while i < len(text):
                while i < len(text) and text[i].isspace():
                    i += 1
                if i >= len(text):
                    break
                ev, i = dec.raw_decode(text, i)
                d = _day_of(ev["object"]["metadata"]["creationTimestamp"])
                by.setdefault(d, []).append(orjson.dumps(ev, option=orjson.OPT_INDENT_2))
            for d, evs in by.items():
                put(rel, d, b"\n".join(evs) + b"\n")
        elif name.endswith(".jsonl"):
            by = {}
            for line in p.read_bytes().splitlines(keepends=True):
                doc = orjson.loads(line)
                ts = doc.get("completedAt") or (doc.get("x_recon") or {}).get("pulledAt") or max(
                    # a workers response saved as the API returns it: when its newest worker started
                    (w.get("startedAt") or "" for w in doc.get("workers") or []), default=None)
                by.setdefault(_day_of(ts) or START_DAY, []).append(line)
            for d, lines in by.items():
                put(rel, d, b"".join(lines))
        elif name == "billing-account.json":
            doc = orjson.loads(p.read_bytes())
            by = {}
            for r in doc["records"]:
                by.setdefault(_day_of(r["startTime"]), []).append(r)
            for d, recs in by.items():
                put(rel, d, orjson.dumps({**doc, "records": recs}, option=orjson.OPT_INDENT_2))
        else:  # keda, endpoint/volume inventories: static snapshots, first day
            put(rel, START_DAY, p.read_bytes())
    shutil.copy(src / "recon.toml", dst / "recon.toml")
    return sorted(days)


def history(a, sim: Path) -> dict:
    """Day 1 vs day N of a daily landing area: same work per day, N-1 days already landed."""
    hist = CACHE / f"{sim.name}-daily"
    if not (hist / ".complete").exists():
        if hist.exists():
            shutil.rmtree(hist)
        print(f"splitting {sim.name} into daily landing folders ...", file=sys.stderr, flush=True)
        days = split_days(sim / "input", hist / "days")
        (hist / ".complete").write_text(json.dumps([d.isoformat() for d in days]))
    days = [date.fromisoformat(d) for d in json.loads((hist / ".complete").read_text())]
    last = days[min(a.days, len(days)) - 1]
    first = days[0]
    work = Path(tempfile.mkdtemp(prefix="hist-", dir=CACHE))
    out: dict = {"days": len(days), "day_n": days.index(last) + 1, "first": first.isoformat(),
                 "last": last.isoformat()}
    try:
        def landing(upto: date, name: str, since: date = date.min) -> Path:
            """A landing folder holding days since..upto of the daily folders (hard links)."""
            land = work / name
            land.mkdir()
            shutil.copy(hist / "days" / "recon.toml", land / "recon.toml")
            for d in days:
                if since <= d <= upto:
                    src = hist / "days" / f"day-{d.isoformat()}"
                    for p in src.rglob("*"):
                        if p.is_file():
                            q = land / p.relative_to(hist / "days")
                            q.parent.mkdir(parents=True, exist_ok=True)
                            os.link(p, q)
            return land

        # day 1: empty warehouse, one day landed
        land1 = landing(first, "land1")
        r1 = []
        for i in range(a.runs):
            db = work / f"d1-{i}.duckdb"
            r1.append(spawn({"mode": "run", "input": str(land1), "db": str(db),
                             "day_from": first.isoformat(), "day_to": first.isoformat(),
                             "export_day": first.isoformat(), "validation": a.validation,
                             "cold_imports": a.cold_imports,
                             "exports": a.exports}))
            db.unlink(missing_ok=True)
        # day N: the warehouse already holds days 1..N-1 (landed and built by one earlier run)
        landn = landing(last - timedelta(days=1), "landn")
        state = work / "state.duckdb"
        print(f"  building the day-{days.index(last) + 1} starting state ...", file=sys.stderr, flush=True)
        # validated as the daily flow would have (when validation is measured): its files are
        # then known to have passed, and day N's gate checks day N's (recon.gate.scope.Scope)
        spawn({"mode": "run", "input": str(landn), "db": str(state), "validation": a.validation,
               "exports": False, "day_from": (last - timedelta(days=1)).isoformat(),
               "day_to": (last - timedelta(days=1)).isoformat(), "export_day": first.isoformat()})
        if a.synthetic_history:
            # copies of days 1..N-1, earlier (bench/synth_history.py): the history of a month
            # without landing a month
            held = days.index(last)
            print(f"  adding {a.synthetic_history} synthetic copies of those {held} days ...",
                  file=sys.stderr, flush=True)
            subprocess.run([sys.executable, str(HERE / "synth_history.py"), str(state),
                            "--copies", str(a.synthetic_history), "--shift-days", str(held)],
                           env=child_env(), cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            out["history_days"] = held * (a.synthetic_history + 1)
        new = hist / "days" / f"day-{last.isoformat()}"
        rn = []
        for i in range(a.runs):
            db = work / f"dn-{i}.duckdb"
            copy_state(state, db)
            linked = []
            for p in new.rglob("*"):
                if p.is_file():
                    q = landn / p.relative_to(hist / "days")
                    q.parent.mkdir(parents=True, exist_ok=True)
                    os.link(p, q)
                    linked.append(q)
            rn.append(spawn({"mode": "run", "input": str(landn), "db": str(db),
                             "day_from": last.isoformat(), "day_to": last.isoformat(),
                             "export_day": last.isoformat(), "validation": a.validation,
                             "cold_imports": a.cold_imports,
                             "exports": a.exports, "warm": [str(q) for q in linked]}))
            for q in linked:
                q.unlink()
            db.unlink(missing_ok=True)
        # day N alone: an empty warehouse and day N's files only: the same day's own work
        # without history (context the day needs from earlier days is missing, so this
        # bounds the history's cost from above)
        ra = []
        if a.history_alone:
            land_alone = landing(last, "land-alone", since=last)
            for i in range(a.runs):
                db = work / f"da-{i}.duckdb"
                ra.append(spawn({"mode": "run", "input": str(land_alone), "db": str(db),
                                 "day_from": last.isoformat(), "day_to": last.isoformat(),
                                 "export_day": last.isoformat(), "validation": a.validation,
                                 "cold_imports": a.cold_imports, "exports": a.exports}))
                db.unlink(missing_ok=True)
        out["day1"] = summarise(r1)
        out["dayN"] = summarise(rn)
        if ra:
            out["dayN_alone"] = summarise(ra)
        out["state_db_bytes"] = state.stat().st_size
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------- report

STAGES = ("import", "landing", "staging", "scope", "intermediate", "marts", "findings", "commit",
          "run_other",
          "pipeline_run", "gx_import", "validation", "exports", "daily_total", "process_wall")


def summarise(runs: list[dict]) -> dict:
    s: dict = {"runs": len(runs), "stages": {}}
    for k in STAGES:
        xs = [r["stages"].get(k) if k != "process_wall" else r.get("process_wall") for r in runs]
        if any(x is not None for x in xs):
            lo, hi = spread(xs)
            s["stages"][k] = {"median": med(xs), "min": lo, "max": hi, "all": xs}
    s["peak_rss_mib"] = {k: med([r["rss_mib"].get(k) for r in runs])
                         for k in runs[0]["rss_mib"]}
    s["peak_rss_mib"]["process"] = med([r["ru_maxrss_mib"] for r in runs])
    s["records"] = runs[0]["records"]
    s["raw_rows"] = runs[0].get("raw_rows")
    s["marts_rows"] = runs[0].get("marts_rows")
    s["db_bytes"] = runs[0].get("db_bytes")
    models: dict = {}
    for r in runs:
        for m, v in r["models"].items():
            models.setdefault(m, []).append(v)
    s["models"] = {m: med(v) for m, v in sorted(models.items(), key=lambda kv: -med(kv[1]))}
    if runs[0].get("validation_result"):
        s["validation_result"] = runs[0]["validation_result"]
    return s


def fmt_s(x):
    return "-" if x is None else f"{x:8.3f}"


def print_table(res: dict) -> None:
    s = res["run"]
    recs = s["records"]["in"]
    raw = sum((s.get("raw_rows") or {}).values()) or None
    floor = res.get("floor", {})
    print(f"\n# bench {res['key']}  sha {res['sha']}{'+dirty' if res['dirty'] else ''}  "
          f"runs {s['runs']}  input {res['input']['files']} files "
          f"{res['input']['bytes'] / 2**20:.1f} MiB  records {recs}")
    m = res["machine"]
    print(f"# machine: {m.get('cpu')} x{m.get('cpus')} (affinity {m.get('affinity')}), "
          f"{m.get('mem_gib')} GiB, loadavg {m.get('loadavg_start')} -> {m.get('loadavg')}, "
          f"duckdb {m.get('duckdb')}, python {m.get('python')}")
    print(f"{'stage':<22}{'median s':>9}{'min':>9}{'max':>9}{'rows/s':>12}  peak RSS MiB")
    rss = s["peak_rss_mib"]
    rows_for = {"landing": recs, "staging": raw, "pipeline_run": recs, "daily_total": recs}
    rss_for = {"landing": rss.get("landing"), "staging": rss.get("build"),
               "validation": rss.get("validation"), "exports": rss.get("exports"),
               "daily_total": rss.get("process")}
    for k in STAGES:
        v = s["stages"].get(k)
        if not v:
            continue
        n = rows_for.get(k)
        rate = f"{n / v['median']:12,.0f}" if n and v["median"] else " " * 12
        r = rss_for.get(k)
        print(f"{k:<22}{fmt_s(v['median'])}{fmt_s(v['min'])}{fmt_s(v['max'])}{rate}  "
              f"{'' if r is None else f'{r:,.0f}'}")
    for k in ("scan", "extract"):
        v = floor.get(k)
        if v:
            print(f"{'floor_' + k:<22}{fmt_s(v['median'])}{fmt_s(v['min'])}{fmt_s(v['max'])}"
                  f"{(recs / v['median']):12,.0f}  {floor.get('rss_mib', 0):,.0f}")
    recon = res.get("derived", {})
    for k, v in recon.items():
        print(f"{k:<40}{v if isinstance(v, str) else f'{v:.3f}'}")
    print("top models (median s): " + ", ".join(f"{k} {v:.3f}"
                                                for k, v in list(s["models"].items())[:8]))
    if res.get("fixed"):
        print("fixed costs (median s): " + ", ".join(
            f"{k} {v['median']:.3f}" for k, v in res["fixed"].items() if v["median"] is not None))
    if res.get("history"):
        h = res["history"]
        d1, dn = h["day1"]["stages"], h["dayN"]["stages"]
        n = h.get("day_n", h["days"])  # (a simulation's billing can run on past its last day)
        held = h.get("history_days", n - 1)
        if held != n - 1:
            print(f"history: day {n} runs on {held} days of history ({n - 1} landed, the rest "
                  f"synthetic copies: bench/synth_history.py)")
        print(f"history: {h['days']} days; day 1 vs day {n} (median s):")
        for k in ("landing", "staging", "scope", "intermediate", "marts", "commit", "pipeline_run",
                  "daily_total"):
            if k in d1 and k in dn:
                print(f"  {k:<20}{fmt_s(d1[k]['median'])}{fmt_s(dn[k]['median'])}"
                      f"   x{dn[k]['median'] / d1[k]['median']:.2f}")
        if h.get("dayN_alone"):
            da = h["dayN_alone"]["stages"]
            print(f"day {n} with {held} days of history in the warehouse vs day {n}'s files "
                  f"alone (median s):")
            for k in ("landing", "staging", "scope", "intermediate", "marts", "commit",
                      "pipeline_run", "daily_total"):
                if k in dn:
                    alone = (da.get(k) or {}).get("median") or 0.0
                    ratio = f"   x{dn[k]['median'] / alone:.2f}" if alone else ""
                    print(f"  {k:<20}{fmt_s(alone)}{fmt_s(dn[k]['median'])}{ratio}")


def derived(res: dict) -> dict:
    st = res["run"]["stages"]
    g = lambda k: (st.get(k) or {}).get("median")
    recon_after = sum(g(k) or 0 for k in ("staging", "scope", "intermediate", "marts"))
    out = {"reconciliation_after_landing_s": recon_after}
    fl = (res.get("floor", {}).get("extract") or {}).get("median")
    if fl:
        out["reconciliation / floor_extract"] = recon_after / fl
    scan = (res.get("floor", {}).get("scan") or {}).get("median")
    if scan and g("landing"):
        out["landing / floor_scan"] = g("landing") / scan
    out.update(host_vs_issue(res.get("floor", {})))
    return out


# Issue #8's own figures "for scale": on the machine its targets were set on, DuckDB counts the
# lines of 1 GB of pod watch JSONL in about 1.2 s and extracts a handful of fields from all of
# them in about 0.8 s. The same two measures of this host, on the pods of the input, say how
# it compares with that machine (the hosts here ran the same code 2x apart: bench/README.md).
ISSUE_COUNT_S_PER_GB = 1.2
ISSUE_EXTRACT_S_PER_GB = 0.8


def host_vs_issue(floor: dict) -> dict:
    """This host's pod-JSONL count and extract, s per GB, and each ÷ the issue's machine's
    (above 1: this host is slower at it); {} without the pods' measures."""
    gb = floor.get("ref_gb")
    count = (floor.get("ref_count") or {}).get("median")
    extract = (floor.get("ref_extract") or {}).get("median")
    if not gb or count is None or extract is None:
        return {}
    return {"pods count s/GB (issue: 1.2)": count / gb,
            "pods extract s/GB (issue: 0.8)": extract / gb,
            "host / issue's machine: count": count / gb / ISSUE_COUNT_S_PER_GB,
            "host / issue's machine: extract": extract / gb / ISSUE_EXTRACT_S_PER_GB}


def compare(a: Path, b: Path) -> None:
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    print(f"{'stage':<22}{a.stem[:18]:>20}{b.stem[:18]:>20}{'ratio':>8}")
    for k in STAGES:
        x = (ra["run"]["stages"].get(k) or {}).get("median")
        y = (rb["run"]["stages"].get(k) or {}).get("median")
        if x is None and y is None:
            continue
        ratio = f"{y / x:8.2f}" if x and y else ""
        print(f"{k:<22}{fmt_s(x):>20}{fmt_s(y):>20}{ratio}")
    for k in ("process",):
        x, y = ra["run"]["peak_rss_mib"].get(k), rb["run"]["peak_rss_mib"].get(k)
        print(f"{'peak RSS MiB':<22}{x:>20,.0f}{y:>20,.0f}{y / x:8.2f}")
    out = write_chart([a, b], RESULTS / f"compare-{a.stem}-vs-{b.stem}.svg")
    print(f"\nchart: {out}")


def bench_module(name: str):
    """bench/<name>.py as a module (the bench scripts are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_chart(results: list[Path], out: Path) -> Path:
    """bench/stage_chart.py's picture of the result files `results`, written to `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(bench_module("stage_chart").chart(results))
    return out


# ----------------------------------------------------------------------------- main

def main(argv=None) -> None:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        return child_main(argv[1:])
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--scale", type=float, default=4)
    ap.add_argument("--endpoints", type=int, default=2)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--input", type=Path, help="benchmark this landing folder instead of a "
                    "simulated one (e.g. the same input across two checkouts)")
    ap.add_argument("--runs", type=int, default=3, help="measured runs (fresh process each)")
    ap.add_argument("--day", help="run for this UTC day only (--from/--to); default: the last "
                    "simulated day when --days 1, else the whole window")
    ap.add_argument("--no-validation", dest="validation", action="store_false")
    ap.add_argument("--no-exports", dest="exports", action="store_false")
    ap.add_argument("--no-floor", dest="floor", action="store_false")
    ap.add_argument("--no-fixed", dest="fixed", action="store_false")
    ap.add_argument("--prefect", action="store_true", help="also time a trivial Prefect flow "
                    "(starts a temporary local API server: 5-10 s)")
    ap.add_argument("--history", action="store_true", help="also compare day 1 with day N of a "
                    "daily landing area (N = --days; the warehouse holds days 1..N-1)")
    ap.add_argument("--history-only", action="store_true")
    ap.add_argument("--history-alone", action="store_true", help="with --history: also run day "
                    "N's files alone in an empty warehouse (day N's own work without history)")
    ap.add_argument("--synthetic-history", type=int, default=0, metavar="K", help="with "
                    "--history: give day N's warehouse K copies of days 1..N-1, moved earlier "
                    "(bench/synth_history.py): a month of history without landing a month")
    ap.add_argument("--memory-limit", help="run with DuckDB's memory_limit set (e.g. 1GB) on "
                    "the pipeline's connection: what a cap would cost (the product sets none)")
    ap.add_argument("--cold-imports", action="store_true", help="runs without cached bytecode "
                    "(as this machine's environment is set up: every import compiles)")
    ap.add_argument("--split-files", type=int, default=0, metavar="N", help="cut every JSON "
                    "Lines file into N files first (as a collector's hourly files; cached)")
    ap.add_argument("--label", default="", help="suffix for the results file name")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed "
                    "(bench/targets.py)")
    a = ap.parse_args(argv)
    if a.input and (a.history or a.history_only):
        ap.error("--history simulates its daily landing area: not with --input")
    if a.compare:
        return compare(*a.compare)

    sha, dirty = git_sha()
    machine = machine_note()
    machine["loadavg_start"] = machine.pop("loadavg")
    if a.input:
        sim, inp = a.input.resolve(), a.input.resolve()
        meta = dir_stats(inp)
    else:
        sim = ensure_sim(a)
        inp = sim / "input"
        meta = json.loads((sim / ".complete").read_text())
    last_day = START_DAY + timedelta(days=a.days - 1)
    day = a.day or (last_day.isoformat() if a.days == 1 else None)
    key = f"input-{inp.parent.name if inp.name == 'input' else inp.name}" if a.input else scale_key(a)
    if a.split_files > 1:
        if a.history or a.history_only:
            ap.error("--split-files cuts one landing folder: not with --history")
        split = split_files(inp, CACHE / f"{key}-split{a.split_files}-{sim.name}", a.split_files)
        inp, key = split / "input", f"{key}-split{a.split_files}"
        meta = {**json.loads((split / ".complete").read_text()),
                "simulate_seconds": meta.get("simulate_seconds")}
    res = {"key": key, "sha": sha, "dirty": dirty, "argv": argv, "root": str(ROOT),
           "params": {k: v for k, v in vars(a).items() if k != "compare"},
           "input": {"files": meta["files"], "bytes": meta["bytes"],
                     "simulate_seconds": meta.get("simulate_seconds")},
           "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    warm_page_cache(inp)
    if not a.history_only:
        work = Path(tempfile.mkdtemp(prefix="run-", dir=CACHE))
        try:
            runs, floors = [], []
            for i in range(a.runs):
                db = work / f"r{i}.duckdb"
                runs.append(spawn({"mode": "run", "input": str(inp), "db": str(db),
                                   "day_from": day, "day_to": day,
                                   "export_day": day or last_day.isoformat(),
                                   "validation": a.validation, "exports": a.exports,
                                   "cold_imports": a.cold_imports,
                                   "memory_limit": a.memory_limit}))
                db.unlink(missing_ok=True)
                Path(str(db) + ".wal").unlink(missing_ok=True)
                st = runs[-1]["stages"]
                print(f"  run {i + 1}/{a.runs}: " + ", ".join(
                    f"{k} {v:.2f}" for k, v in st.items() if v is not None), file=sys.stderr,
                    flush=True)
                if a.floor:
                    try:
                        floors.append(spawn({"mode": "floor", "input": str(inp)}))
                    except SystemExit as e:  # the floor is a reference, not the product
                        print(f"  floor failed: {e}", file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        res["run"] = summarise(runs)
        res["runs_raw"] = runs
        if floors:
            res["floor"] = {k: {"median": med([f[k] for f in floors]),
                                "min": spread([f[k] for f in floors])[0],
                                "max": spread([f[k] for f in floors])[1]}
                            for k in ("scan", "extract")}
            for k in ("ref_count", "ref_extract"):  # (absent where the floor had no pods)
                if all(k in f for f in floors):
                    res["floor"][k] = {"median": med([f[k] for f in floors])}
            if all("ref_gb" in f for f in floors):
                res["floor"]["ref_gb"] = floors[0]["ref_gb"]
            res["floor"]["records"] = floors[0]["records"]
            res["floor"]["rss_mib"] = med([f["rss_mib"] for f in floors])
        res["derived"] = derived(res)
    if a.fixed:
        res["fixed"] = fixed_costs(max(3, a.runs), a.prefect)
    if a.history or a.history_only:
        res["history"] = history(a, sim)
    machine["loadavg"] = os.getloadavg()
    res["machine"] = machine
    targets = bench_module("targets")
    res["targets"] = targets.check_run(res)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"{sha}{'-dirty' if dirty else ''}-{key}{'-' + a.label if a.label else ''}.json"
    (RESULTS / name).write_text(json.dumps(res, indent=1, default=str))
    if "run" in res:
        print_table(res)
        head = targets.ratios(res)
        if head:
            print("\nheadline, x floor_extract of this run: " + ", ".join(
                f"{k} {v:.2f}x" for k, v in head.items()))
    elif res.get("history"):
        print_table({**res, "run": res["history"]["dayN"]})
    print("\n" + targets.report(res["targets"]))
    chart = write_chart([RESULTS / name], (RESULTS / name).with_suffix(".svg"))
    print(f"\nwritten: {RESULTS / name}\nchart: {chart}")
    if a.check and not all(t["met"] for t in res["targets"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
