"""Collector benchmark: watch events per second from the loopback API server, and memory over a
simulated week.

    uv run python bench/collector.py --days 7 --pods-per-day 50000    # the target week, 3.5 M
    uv run python bench/collector.py --events 300000                  # a quick run (1 day)

The fake Kubernetes API (tests/fakes/k8s_api.py) runs in a child process pinned to one core and
replays a simulated fleet's pod versions: ``--pods-per-day`` pods a day arrive spread over each
day, each goes through ``VERSIONS_PER_POD`` (10) versions over its life (pending, scheduled,
initialised, container creating, running, ready, terminated, completed conditions, deleting,
deleted), with timestamps inside the simulated week. The collector
(``connectors.kubernetes.runner.run``, what ``collect()`` runs, default ``CollectorOptions``:
fsync on, 65,536-key dedupe LRU, state every 5 s) runs in this process pinned to the other
core and lands them. Its clock is simulated too: ``seenAt`` advances linearly with the rows
written, from ``--start`` to ``--start`` + ``--days``, so the landing files roll over every
simulated hour and the state as they would over a week.

The producer never runs more than half the server's history window ahead of the watch
(``FakeKubeAPI.watch_lag``), so no version is lost to a 410 and what is measured is the
collector's sustained rate. RSS of this process (the collector) is sampled every
``--sample-every`` rows and at every simulated day boundary. Output: a table on stdout and
``bench/results/collector-<sha>[-dirty]-d<days>-p<pods/day>[-label].json`` plus an ``.svg``
chart of RSS and throughput against rows. Landing files older than ``--keep-hours`` simulated
hours are deleted while running (disk: ~2.4 KB a row) unless ``--keep-landing``.
``--tracemalloc`` compares the collector's allocations at the end of day 1 with the end (slow).
Loopback only.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import heapq
import itertools
import json
import math
import multiprocessing as mp
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VERSIONS_PER_POD = 10
DAY = 86_400.0


# --------------------------------------------------------------------------- measurements
def rss_mib(pid: int | str = "self") -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def machine_note() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }


def git_key() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--",
                "bench/collector.py",
                "tests/fakes",
                "connectors/kubernetes",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return (sha or "nogit") + ("-dirty" if dirty else "")
    except OSError:
        return "nogit"


def slope_mb_per_m(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of RSS (MiB) against rows, per million rows."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if not sxx:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in points) / sxx * 1e6


# --------------------------------------------------------------------------- the simulated fleet
def _ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(ctype: str, status: str, t: float, reason: str | None = None) -> dict:
    c = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": _ts(t)}
    if reason:
        c["reason"] = reason
    return c


def pod_lifecycle(i: int, created: float, rng: random.Random, nodes: int):
    """The pod's versions as (time, type, object); each object is new (only ``spec`` is
    shared between versions; the server never changes stored objects in place)."""
    uid = (
        f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
        f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"
    )
    name = f"infer-{i:08d}-{uid[:5]}"
    gpus = rng.choice((1, 1, 1, 2, 4, 8))
    node = f"gpu-node-{rng.randrange(nodes):04d}"
    image = "ghcr.io/example/batch-infer:1.4.2"
    meta = {
        "name": name,
        "namespace": f"team-{i % 12}",
        "uid": uid,
        "creationTimestamp": _ts(created),
        "generateName": name[:-5],
        "labels": {
            "app": "batch-infer",
            "team": f"team-{i % 12}",
            "scaledjob.keda.sh/name": "batch-infer",
        },
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": name[:-6],
                "uid": uid[::-1],
                "controller": True,
            }
        ],
    }
    spec = {
        "containers": [
            {
                "name": "worker",
                "image": image,
                "resources": {
                    "limits": {"nvidia.com/gpu": str(gpus), "memory": "32Gi"},
                    "requests": {"nvidia.com/gpu": str(gpus), "cpu": "4", "memory": "32Gi"},
                },
                "startupProbe": {
                    "httpGet": {"path": "/health", "port": 8080},
                    "periodSeconds": 10,
                    "failureThreshold": 30,
                },
            }
        ],
        "restartPolicy": "OnFailure",
        "schedulerName": "default-scheduler",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    t = created
    yield (
        t,
        "ADDED",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": dict(meta),
            "spec": spec,
            "status": {"phase": "Pending", "qosClass": "Burstable"},
        },
    )
    t_sched = t = t + rng.uniform(1, 30)
    spec = {**spec, "nodeName": node}
    conds = [_cond("PodScheduled", "True", t_sched)]

    def version(etype: str, status: dict, **meta_extra):
        return etype, {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {**meta, **meta_extra},
            "spec": spec,
            "status": {"qosClass": "Burstable", **status},
        }

    yield (t, *version("MODIFIED", {"phase": "Pending", "conditions": conds}))
    t = t + rng.uniform(0.5, 3)
    conds = [
        _cond("Initialized", "True", t),
        _cond("Ready", "False", t, "ContainersNotReady"),
        _cond("ContainersReady", "False", t, "ContainersNotReady"),
        conds[0],
    ]
    st = {"phase": "Pending", "startTime": _ts(t), "hostIP": "10.0.0.10", "conditions": conds}
    yield (t, *version("MODIFIED", st))
    t = t + rng.uniform(0.5, 3)
    cs = {
        "name": "worker",
        "image": image,
        "imageID": "",
        "containerID": "",
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": "ContainerCreating"}},
        "lastState": {},
    }
    conds = [_cond("PodReadyToStartContainers", "True", t), *conds]
    yield (t, *version("MODIFIED", {**st, "conditions": conds, "containerStatuses": [cs]}))
    t_run = t = t + rng.uniform(10, 180)  # image pull
    cs = {
        **cs,
        "containerID": f"containerd://{uid.replace('-', '')}",
        "imageID": image + "@sha256:" + "ab" * 32,
        "state": {"running": {"startedAt": _ts(t)}},
    }
    st = {**st, "phase": "Running", "podIP": f"10.1.{i % 250}.{i % 200 + 2}", "conditions": conds}
    yield (t, *version("MODIFIED", {**st, "containerStatuses": [cs]}))
    t = t + rng.uniform(20, 300)  # startup probe
    cs = {**cs, "ready": True, "started": True}
    conds = [
        conds[0],
        conds[1],
        _cond("Ready", "True", t),
        _cond("ContainersReady", "True", t),
        conds[4],
    ]
    yield (t, *version("MODIFIED", {**st, "conditions": conds, "containerStatuses": [cs]}))
    t = t + rng.expovariate(1 / 1800)  # ~30 min of work
    cs = {
        **cs,
        "ready": False,
        "started": False,
        "state": {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": _ts(t_run),
                "finishedAt": _ts(t),
                "containerID": cs["containerID"],
            }
        },
    }
    st = {**st, "phase": "Succeeded"}
    yield (t, *version("MODIFIED", {**st, "conditions": conds, "containerStatuses": [cs]}))
    t = t + rng.uniform(0.5, 2)
    conds = [
        conds[0],
        conds[1],
        _cond("Ready", "False", t, "PodCompleted"),
        _cond("ContainersReady", "False", t, "PodCompleted"),
        conds[4],
    ]
    st = {**st, "conditions": conds, "containerStatuses": [cs]}
    yield (t, *version("MODIFIED", st))
    t = t + rng.uniform(5, 120)  # the Job controller / KEDA cleans up
    yield (
        t,
        *version("MODIFIED", st, deletionTimestamp=_ts(t + 30), deletionGracePeriodSeconds=30),
    )
    t = t + rng.uniform(0.2, 2)
    yield (t, *version("DELETED", st, deletionTimestamp=_ts(t), deletionGracePeriodSeconds=0))


def fleet_versions(start: float, days: int, pods_per_day: int, seed: int = 7, nodes: int = 500):
    """Every pod version of the simulated period in time order, made lazily: a heap holds only
    the pods alive at the moment (~pods a day x mean life / a day, about a thousand)."""
    rng = random.Random(seed)
    gap = DAY / pods_per_day
    total_pods = days * pods_per_day
    heap: list = []
    seq = itertools.count()
    next_pod = 0
    next_arrival = start + gap * rng.random()
    while heap or next_pod < total_pods:
        if next_pod < total_pods and (not heap or next_arrival <= heap[0][0]):
            life = pod_lifecycle(next_pod, next_arrival, rng, nodes)
            _, etype, obj = next(life)
            next_pod += 1
            next_arrival = start + gap * (next_pod + rng.random())
        else:
            _, _, etype, obj, life = heapq.heappop(heap)
        yield etype, obj
        nxt = next(life, None)
        if nxt is not None:
            heapq.heappush(heap, (nxt[0], next(seq), nxt[1], nxt[2], life))


# --------------------------------------------------------------------------- the server process
def serve(conn, produced, waited, cpu: int | None, args) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    from tests.fakes.k8s_api import FakeKubeAPI

    api = FakeKubeAPI(
        history_limit=args.history_limit, bookmark_interval=1.0, record_produced=False
    )
    api.start()
    conn.send(api.url)
    conn.recv()  # go
    start = datetime.fromisoformat(args.start).replace(tzinfo=UTC).timestamp()
    max_lag = args.history_limit // 2
    n = 0
    idle = 0.0
    for n, (etype, obj) in enumerate(
        fleet_versions(start, args.days, args.pods_per_day, args.seed), 1
    ):
        if n % 256 == 1:  # before the first version too: nothing is made before the watch
            produced.value = n - 1
            lag = api.watch_lag("pods")
            if lag is None or lag > max_lag:  # no watch open (reconnecting) or it is behind
                t = time.perf_counter()
                while lag is None or lag > max_lag // 2:
                    time.sleep(0.0005)
                    lag = api.watch_lag("pods")
                idle += time.perf_counter() - t
                waited.value = idle
        api.replay("pods", etype, obj, owned=True)
        if n >= args.total:
            break
    produced.value = n
    waited.value = idle
    conn.send(n)
    conn.recv()  # done
    api.stop()


# --------------------------------------------------------------------------- chart
def write_svg(path: Path, samples: list[dict], day_marks: list[int], title: str) -> None:
    w, h, ml, mr, mt, mb, gap = 760, 460, 64, 64, 34, 40, 30
    ph = (h - mt - mb - gap) / 2
    xmax = max(s["events"] for s in samples) or 1

    def x(v: float) -> float:
        return ml + (w - ml - mr) * v / xmax

    def panel(top: float, key: str, label: str, color: str) -> list[str]:
        vals = [s[key] for s in samples if s.get(key) is not None]
        if not vals:
            return []
        lo, hi = 0.0, max(vals) * 1.15 or 1
        out = [
            (
                f'<rect x="{ml}" y="{top}" width="{w - ml - mr}" height="{ph}" fill="none" '
                f'stroke="#999"/>'
            ),
            (
                f'<text x="{ml - 6}" y="{top + 12}" text-anchor="end" font-size="11">'
                f"{hi:,.0f}</text>"
            ),
            f'<text x="{ml - 6}" y="{top + ph}" text-anchor="end" font-size="11">0</text>',
            f'<text x="{ml + 6}" y="{top + 14}" font-size="12" fill="{color}">{label}</text>',
        ]
        pts = " ".join(
            f"{x(s['events']):.1f},{top + ph - ph * (s[key] - lo) / (hi - lo):.1f}"
            for s in samples
            if s.get(key) is not None
        )
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.6"/>')
        for d, ev in enumerate(day_marks, 1):
            out.append(
                f'<line x1="{x(ev):.1f}" x2="{x(ev):.1f}" y1="{top}" y2="{top + ph}" '
                f'stroke="#ccc" stroke-dasharray="3,3"/>'
            )
            if top == mt:
                out.append(
                    f'<text x="{x(ev):.1f}" y="{top - 4}" font-size="10" '
                    f'text-anchor="middle" fill="#888">day {d}</text>'
                )
        return out

    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>'
        ),
        f'<text x="{ml}" y="16" font-size="13">{title}</text>',
    ]
    parts += panel(mt, "rss_mib", "collector RSS (MiB)", "#c0392b")
    parts += panel(
        mt + ph + gap, "events_per_s", "events/s (window since previous sample)", "#2471a3"
    )
    parts.append(
        f'<text x="{(w) / 2}" y="{h - 8}" text-anchor="middle" font-size="12">'
        f"events landed (max {xmax:,})</text>"
    )
    parts.append("</svg>")
    path.write_text("\n".join(parts))


# --------------------------------------------------------------------------- main
def _targets():
    """bench/targets.py (issue #8's targets), loaded by path: bench/ is not a package."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_targets", Path(__file__).with_name(
        "targets.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=1)
    ap.add_argument(
        "--pods-per-day",
        type=int,
        default=None,
        help="pods created a day (default 50,000: the target fleet)",
    )
    ap.add_argument(
        "--events",
        type=int,
        default=None,
        help="total rows instead of --pods-per-day (pods/day = events/10/days)",
    )
    ap.add_argument(
        "--sample-every",
        type=int,
        default=None,
        help="rows between RSS samples (default: total/50, at least 10,000)",
    )
    ap.add_argument(
        "--history-limit",
        type=int,
        default=20_000,
        help="the fake server's watch window (versions)",
    )
    ap.add_argument("--start", default="2026-06-01T00:00:00")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--keep-hours",
        type=int,
        default=6,
        help="delete landing hour folders older than this many simulated hours",
    )
    ap.add_argument("--keep-landing", action="store_true")
    ap.add_argument("--no-pin", action="store_true", help="do not pin collector/server to cores")
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed "
                    "(bench/targets.py)")
    ap.add_argument("--max-seconds", type=float, default=7200)
    args = ap.parse_args()
    if args.pods_per_day is None:
        args.pods_per_day = (
            math.ceil(args.events / VERSIONS_PER_POD / args.days) if args.events else 50_000
        )
    args.total = args.events or args.days * args.pods_per_day * VERSIONS_PER_POD
    every = args.sample_every or max(10_000, args.total // 50)

    cpus = sorted(os.sched_getaffinity(0))
    collector_cpu = server_cpu = None
    if not args.no_pin and len(cpus) >= 2:
        collector_cpu, server_cpu = cpus[0], cpus[1]
        os.sched_setaffinity(0, {collector_cpu})  # before any thread: they all inherit it
    load_start = os.getloadavg()

    from connectors.kubernetes import ClusterConfig, CollectorOptions, Counters
    from connectors.kubernetes.runner import run as run_collector

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    produced, waited = ctx.Value("q", 0, lock=False), ctx.Value("d", 0.0, lock=False)
    server = ctx.Process(
        target=serve, args=(child, produced, waited, server_cpu, args), daemon=True
    )
    server.start()
    url = parent.recv()
    tmp = Path(tempfile.mkdtemp(prefix="collector-bench-"))
    landing = tmp / "landing"
    kc = tmp / "kubeconfig"
    kc.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "b",
                "clusters": [{"name": "b", "cluster": {"server": url}}],
                "contexts": [{"name": "b", "context": {"cluster": "b", "user": "b"}}],
                "users": [{"name": "b", "user": {}}],
            }
        )
    )

    # simulated clock: seenAt advances linearly with the rows written (one call per row)
    sim_start = datetime.fromisoformat(args.start).replace(tzinfo=UTC)
    step = timedelta(seconds=args.days * DAY / args.total)
    calls = itertools.count()

    def sim_clock() -> datetime:
        return sim_start + step * next(calls)

    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(12)
    stop = threading.Event()
    counters = Counters()
    opts = CollectorOptions()
    th = threading.Thread(
        target=run_collector,
        args=(landing, [ClusterConfig(kubeconfig=str(kc), context="b", name="bench")], ["pods"]),
        kwargs={
            "stop_event": stop,
            "max_events": None,
            "run_seconds": None,
            "options": opts,
            "counters": counters,
            "on_progress": None,
            "once": False,
            "save_state": True,
            "clock": sim_clock,
        },
        daemon=True,
    )
    th.start()
    parent.send("go")  # the producer waits for the collector's watch by itself
    t0 = time.perf_counter()
    day_rows = [round(args.total * d / args.days) for d in range(1, args.days + 1)]
    marks = sorted(set(list(range(every, args.total + 1, every)) + day_rows))
    samples: list[dict] = []
    snapshots: dict[str, object] = {}
    last = {"t": 0.0, "events": 0, "cpu": time.process_time()}
    cpu0 = last["cpu"]
    last["server_cpu"] = cpu_seconds(server.pid)
    final: int | None = None
    hour_dir = landing / "k8s" / "cluster=bench"
    pruned = 0

    def sample(written: int, tag: str) -> None:
        now = time.perf_counter() - t0
        dt = now - last["t"]
        cpu = time.process_time()
        dcpu = cpu - last["cpu"]
        s = {
            "t": round(now, 2),
            "events": written,
            "events_per_s": round((written - last["events"]) / dt) if dt > 0 else None,
            # rows per CPU-second of the collector process: what one free core would sustain
            "events_per_cpu_s": round((written - last["events"]) / dcpu) if dcpu > 0 else None,
            "cpu_busy": round(dcpu / dt, 2) if dt > 0 else None,
            "server_cpu_busy": round((cpu_seconds(server.pid) - last["server_cpu"]) / dt, 2)
            if dt > 0
            else None,
            "rss_mib": round(rss_mib(), 1),
            "server_rss_mib": round(rss_mib(server.pid), 1),
            "produced": produced.value,
            "producer_waited_s": round(waited.value, 1),
            "sim_time": (sim_start + step * written).strftime("%Y-%m-%dT%H:%MZ"),
            "tag": tag,
        }
        samples.append(s)
        last.update(t=now, events=written, cpu=cpu, server_cpu=cpu_seconds(server.pid))
        print(
            f"{written:>10,} {s['events_per_s'] or 0:>9,} {s['events_per_cpu_s'] or 0:>9,} "
            f"{s['cpu_busy'] or 0:>5.2f} {s['rss_mib']:>8.1f} "
            f"{s['server_rss_mib']:>8.1f} {s['sim_time']:>18} {tag}",
            flush=True,
        )

    print(
        f"collector on cpu {collector_cpu}, fake API server on cpu {server_cpu}; "
        f"{args.total:,} rows = {args.days} days x {args.pods_per_day:,} pods x "
        f"{VERSIONS_PER_POD} versions; load avg {load_start[0]:.2f}",
        flush=True,
    )
    print(
        f"{'events':>10} {'events/s':>9} {'ev/cpu-s':>9} {'busy':>5} {'RSS MiB':>8} "
        f"{'srv MiB':>8} {'simulated time':>18}"
    )
    mi = 0
    next_prune = 0.0
    idle_since, idle_written = time.perf_counter(), -1
    while True:
        time.sleep(0.05)
        written = counters.get("written")
        while mi < len(marks) and written >= marks[mi]:
            is_day = marks[mi] in day_rows
            tag = f"end of day {day_rows.index(marks[mi]) + 1}" if is_day else ""
            mi += 1
            while mi < len(marks) and written >= marks[mi]:  # collapse marks passed together
                if marks[mi] in day_rows:
                    tag = f"end of day {day_rows.index(marks[mi]) + 1}"
                mi += 1
            sample(written, tag)
            if args.tracemalloc and tag:
                import tracemalloc

                snapshots[tag] = tracemalloc.take_snapshot()
        if final is None and parent.poll():
            final = parent.recv()
        if final is not None and written >= final:
            break
        if written != idle_written:
            idle_since, idle_written = time.perf_counter(), written
        elif final is not None and time.perf_counter() - idle_since > 15:
            print(
                f"no new rows for 15 s: {final - written:,} produced versions not landed",
                flush=True,
            )
            break
        if not th.is_alive() or time.perf_counter() - t0 > args.max_seconds:
            print("stopped early", flush=True)
            break
        if not args.keep_landing and time.perf_counter() >= next_prune:
            next_prune = time.perf_counter() + 2.0
            keep = (sim_start + step * written - timedelta(hours=args.keep_hours)).strftime(
                "hour=%Y-%m-%dT%H"
            )
            for d in sorted(hour_dir.glob("hour=*")):
                if d.name < keep:
                    shutil.rmtree(d, ignore_errors=True)
                    pruned += 1
    dt = time.perf_counter() - t0
    written = counters.get("written")
    if not samples or samples[-1]["events"] != written:
        sample(written, "end")
    stop.set()
    th.join(timeout=60)
    parent.send("done")
    server.join(timeout=30)
    snap = counters.snapshot()["totals"]
    load_end = os.getloadavg()

    warm = day_rows[0] if args.days > 1 else every * 2
    steady = [(s["events"], s["rss_mib"]) for s in samples if s["events"] >= warm]
    rates = sorted(s["events_per_s"] for s in samples[1:] if s["events_per_s"])
    summary = {
        "events_produced": final,
        "events_written": written,
        "seconds": round(dt, 1),
        "events_per_second": round(written / dt),
        "collector_cpu_seconds": round(time.process_time() - cpu0, 1),
        "events_per_collector_cpu_second": round(written / max(time.process_time() - cpu0, 1e-9)),
        "events_per_second_window_median": rates[len(rates) // 2] if rates else None,
        "events_per_second_window_min_max": [rates[0], rates[-1]] if rates else None,
        "rss_mib_first_sample": samples[0]["rss_mib"],
        "rss_mib_after_warmup": steady[0][1] if steady else None,
        "warmup_events": warm,
        "rss_mib_end": samples[-1]["rss_mib"],
        "rss_mib_max": max(s["rss_mib"] for s in samples),
        "rss_slope_mib_per_million_events_after_warmup": (
            round(v, 2) if (v := slope_mb_per_m(steady)) is not None else None
        ),
        "rss_slope_mib_per_million_events_all": (
            round(v, 2)
            if (v := slope_mb_per_m([(s["events"], s["rss_mib"]) for s in samples])) is not None
            else None
        ),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "server_rss_mib_end": samples[-1]["server_rss_mib"],
        "producer_waited_s": round(waited.value, 1),
        "producer_waited_fraction": round(waited.value / dt, 3),
        "counters": snap,
        "landing_hour_folders_pruned": pruned,
    }
    out = {
        "args": dict(vars(args).items()),
        "pinning": {
            "collector_cpu": collector_cpu,
            "server_cpu": server_cpu,
            "note": "collector threads (and this sampler) on one core, fake API server on the other"
            if collector_cpu is not None
            else "not pinned",
        },
        "machine": {**machine_note(), "load_avg_start": load_start, "load_avg_end": load_end},
        "collector_options": dataclasses.asdict(opts),
        "summary": summary,
        "samples": samples,
    }
    print(json.dumps(summary, indent=1))
    if snapshots:
        first = snapshots.get("end of day 1") or next(iter(snapshots.values()))
        last_snap = list(snapshots.values())[-1]
        print("tracemalloc: top growth from", next(iter(snapshots)), "to the last day boundary")
        for stat in last_snap.compare_to(first, "traceback")[:12]:
            print(
                f"  {stat.size_diff / 2**20:+8.2f} MiB {stat.count_diff:+9,} blocks",
                stat.traceback.format()[-1].strip() if stat.traceback else "",
            )
    res = ROOT / "bench" / "results"
    res.mkdir(parents=True, exist_ok=True)
    name = f"collector-{git_key()}-d{args.days}-p{args.pods_per_day}" + (
        f"-{args.label}" if args.label else ""
    )
    targets = _targets()
    out["targets"] = targets.check_collector(summary)
    (res / f"{name}.json").write_text(json.dumps(out, indent=1, default=str))
    write_svg(
        res / f"{name}.svg",
        samples,
        [s["events"] for s in samples if s["tag"].startswith("end of day")],
        f"collector: {written:,} events, {summary['events_per_second']:,}/s on one core; "
        f"RSS {summary['rss_mib_first_sample']}→{summary['rss_mib_end']} MiB",
    )
    print(f"wrote {res / name}.json and .svg")
    if not args.keep_landing:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"landing kept in {landing}")
    gc.collect()
    print(targets.report(out["targets"]))
    if args.check and not all(t["met"] for t in out["targets"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
