"""How fast recon/ingest/list_scan.py finds a big List's items, on one core.

    uv run python bench/list_scan_speed.py [FILE] [MB]

FILE (written first with `write_sample` if missing or empty; a temporary file without one) is
read once into the page cache, then `scan_list` is timed on it with the default 64 MiB chunk.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("BENCH_ROOT", str(Path(__file__).resolve().parent.parent)))

from recon.ingest.list_scan import scan_list


def write_sample(path, target_bytes: int, seed: int = 1) -> int:
    """Write a pretty-printed kubectl-like event List of about target_bytes; returns its items."""
    import random

    rnd = random.Random(seed)
    texts = []
    for i in range(2000):
        ev = {
            "apiVersion": "v1", "count": rnd.randint(1, 500), "eventTime": None,
            "firstTimestamp": f"2024-05-01T12:{i % 60:02d}:{rnd.randint(0, 59):02d}Z",
            "involvedObject": {
                "apiVersion": "v1", "fieldPath": "spec.containers{main}", "kind": "Pod",
                "name": f"gpu-worker-{i}-abcde", "namespace": f"team-{i % 17}",
                "resourceVersion": str(100000 + i), "uid": f"1b4e28ba-2fa1-11d2-883f-{i:012d}"},
            "kind": "Event", "lastTimestamp": "2024-05-01T13:00:00Z",
            "message": ('Successfully pulled image "nvcr.io/nvidia/pytorch:24.01-py3" in 1.2s '
                        "(1.2s including waiting) [x, y]: {ok} \u00e9\u2713"),
            "metadata": {
                "creationTimestamp": "2024-05-01T12:00:00Z", "name": f"gpu-worker-{i}.17c{i:08x}",
                "namespace": f"team-{i % 17}", "resourceVersion": str(200000 + i),
                "uid": f"{i:08x}-aaaa-bbbb-cccc-{i:012d}"},
            "reason": rnd.choice(["Pulled", "Created", "Started", "Scheduled", "BackOff"]),
            "reportingComponent": "kubelet", "reportingInstance": f"node-{i % 40}",
            "source": {"component": "kubelet", "host": f"node-{i % 40}"}, "type": "Normal"}
        text = json.dumps(ev, indent=4, ensure_ascii=i % 500 != 7)  # some UTF-8 (every chunk)
        texts.append(("        " + text.replace("\n", "\n        ")).encode())
    n = written = 0
    with open(path, "wb") as f:
        f.write(b'{\n    "apiVersion": "v1",\n    "items": [\n')
        while written < target_bytes:
            t = texts[n % len(texts)]
            f.write(t if n == 0 else b",\n" + t)
            written += len(t) + 2
            n += 1
        f.write(b'\n    ],\n    "kind": "List",\n    "metadata": {\n'
                b'        "resourceVersion": ""\n    }\n}\n')
    return n


def bench(path=None, mb: int = 200, chunk_bytes: int = 64 << 20) -> float:
    """Time scan_list on `path` (written first with write_sample if missing); returns MB/s.
    The file is read once beforehand, so it is timed from the page cache."""
    import tempfile

    tmp = None
    if path is None:
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        path = tmp
    try:
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            write_sample(path, mb << 20)
        size = os.path.getsize(path)
        with open(path, "rb") as f:  # into the page cache
            while f.read(64 << 20):
                pass
        t0 = time.perf_counter()
        layout = scan_list(path, chunk_bytes=chunk_bytes)
        dt = time.perf_counter() - t0
        if layout is None:
            raise RuntimeError("scan_list returned None")
        rate = size / dt / 1e6
        print(f"{size / 1e6:.0f} MB, {len(layout.items)} items: {dt:.2f} s, {rate:.0f} MB/s")
        return rate
    finally:
        if tmp is not None:
            os.unlink(tmp)


if __name__ == "__main__":
    bench(sys.argv[1] if len(sys.argv) > 1 else None,
          int(sys.argv[2]) if len(sys.argv) > 2 else 200)
