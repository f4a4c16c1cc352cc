"""Collector benchmark: watch events per second from the loopback API server, and memory.

    uv run python bench/collector.py [--events 200000] [--batch 2000]

The fake Kubernetes API (tests/fakes/k8s_api.py) runs in a child process and produces pod
versions as fast as it can (create/update/delete cycles, each a full Pod object); the
collector (connectors.kubernetes.collect) runs in this process and lands them. Reports events
per second landed and this process's RSS sampled along the way (a flat line = no growth with
history; a simulated week of a 500-node fleet is ~3.5 M versions, so the sampled RSS slope is
what matters). Loopback only.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def serve(conn, total: int, batch: int):
    from tests.fakes.k8s_api import FakeKubeAPI

    api = FakeKubeAPI(history_limit=50_000, bookmark_interval=1.0)
    api.start()
    conn.send(api.url)
    conn.recv()  # the collector is watching
    n = 0
    i = 0
    while n < total:
        for _ in range(batch // 3):
            name = f"job-{i % 5000}"
            try:
                api.create("pods", {"metadata": {"name": name, "namespace": "ml",
                                                 "labels": {"team": "vision"}},
                                    "spec": {"nodeName": "gpu-1", "containers": [
                                        {"name": "w", "image": "x" * 200,
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                                    "status": {"phase": "Pending"}})
                api.update("pods", name, "ml", lambda o: o["status"].update(phase="Running"))
                api.delete("pods", name, "ml")
                n += 3
            except ValueError:
                pass
            i += 1
        time.sleep(0.001)
    conn.send(n)
    conn.recv()
    api.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=150_000)
    ap.add_argument("--batch", type=int, default=3000)
    args = ap.parse_args()
    from connectors.kubernetes import ClusterConfig, CollectorOptions, Counters, collect

    parent, child = mp.Pipe()
    p = mp.Process(target=serve, args=(child, args.events, args.batch), daemon=True)
    p.start()
    url = parent.recv()
    tmp = Path(tempfile.mkdtemp(prefix="collector-bench-"))
    kc = tmp / "kubeconfig"
    kc.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "b",
                              "clusters": [{"name": "b", "cluster": {"server": url}}],
                              "contexts": [{"name": "b", "context": {"cluster": "b", "user": "b"}}],
                              "users": [{"name": "b", "user": {}}]}))
    stop = threading.Event()
    counters = Counters()
    opts = CollectorOptions(watch_timeout_seconds=60)
    th = threading.Thread(target=collect, args=(tmp / "landing", [ClusterConfig(kubeconfig=str(kc),
                                                                                 context="b")],
                                                ["pods"]),
                          kwargs={"stop_event": stop, "options": opts, "counters": counters},
                          daemon=True)
    th.start()
    time.sleep(2.0)
    parent.send("go")
    t0 = time.perf_counter()
    samples = []
    produced = None
    while True:
        time.sleep(1.0)
        written = counters.snapshot()["totals"].get("written", 0)
        samples.append((round(time.perf_counter() - t0, 1), written, round(rss_mib(), 1)))
        if parent.poll():
            produced = parent.recv()
        if produced is not None and written >= produced:
            break
        if time.perf_counter() - t0 > 600:
            break
    dt = time.perf_counter() - t0
    stop.set()
    parent.send("done")
    th.join(timeout=30)
    written = counters.snapshot()["totals"].get("written", 0)
    half = len(samples) // 2
    out = {"events_produced": produced, "events_written": written, "seconds": round(dt, 2),
           "events_per_second": round(written / dt), "rss_mib_first_half_max":
           max(s[2] for s in samples[:max(half, 1)]), "rss_mib_second_half_max":
           max(s[2] for s in samples[half:] or samples), "peak_rss_mib":
           resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "samples": samples,
           "note": "2 cores shared by the fake server process and the collector"}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
