"""Several simulated clusters as one fleet: each `simulate()` output placed as one cluster of a
landing tree (`k8s/cluster=<name>/`, the collector's layout), and their configs merged.

Every simulated world writes the same fixed account scenarios (the warm-pool pod, the balance,
the account's hourly bill, the two serverless endpoints of serverless_extras.py): one account's,
so only the first cluster keeps them, or the fleet would bill one pod and one endpoint once per
cluster. Used by the multi-cluster tests and benchmarks (tests/test_shards.py,
tests/flows/test_flows_fleet.py, tests/test_scaling_out.py, bench/scaling.py, bench/shards.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import serverless_extras
from .world import CLUSTER

ACCOUNT_BILL = "billing-account.json"  # the account's own hourly totals (/v2/billing)
ACCOUNT_FILES = frozenset({"warm-pool-watch.jsonl", "warm-pool-objects.json",
                           "billing-pods-warm-pool.json", "inventory-pods-warm-pool.json",
                           "balance.json", ACCOUNT_BILL, *serverless_extras.FILES})
RATES = "[rates.serverless_per_second]\n"


def place_cluster(sim: Path, tree: Path, name: str, first: bool,
                  runpod: Path | None = None) -> None:
    """`sim`'s Kubernetes files as cluster `name` of `tree` (`k8s/cluster=<name>/`, each watch
    line's own `cluster` renamed too: it wins over the folder), and with `runpod`, its Runpod
    files copied there. The fixed account scenarios only when `first`."""
    dst = tree / "k8s" / f"cluster={name}"
    dst.mkdir(parents=True)
    for p in sorted((sim / "k8s" / f"cluster={CLUSTER}").iterdir()):
        if not first and p.name in ACCOUNT_FILES:
            continue
        data = p.read_bytes()
        for sep in (b":", b": "):
            data = data.replace(b'"cluster"' + sep + b'"' + CLUSTER.encode() + b'"',
                                b'"cluster"' + sep + b'"' + name.encode() + b'"')
        (dst / p.name).write_bytes(data)
    if runpod is not None:
        runpod.mkdir(parents=True, exist_ok=True)
        for p in sorted((sim / "runpod").iterdir()):
            if p.is_dir():  # an endpoint's saved workers (serverless/<id>/workers.jsonl)
                shutil.copytree(p, runpod / p.name, dirs_exist_ok=True)
            elif first or p.name not in ACCOUNT_FILES:
                shutil.copyfile(p, runpod / p.name)


def merged_config(texts: list[str], shards: dict[str, list[str]] | None = None) -> str:
    """One recon.toml for the fleet: the first world's (the sample rate card is otherwise the
    same) plus every other world's serverless endpoints' rates (the fixed scenario's endpoints
    once: TOML refuses a key defined twice), and `[shards]` when given."""
    extra = "".join(line + "\n" for t in texts[1:]
                    for line in t.split(RATES, 1)[1].split("\n\n", 1)[0].splitlines()
                    if line.split(" = ")[0].strip('"') not in serverless_extras.ENDPOINTS)
    out = texts[0].replace(RATES, RATES + extra, 1)
    if shards:
        out += "\n[shards]\n" + "".join(
            f"{k} = [{', '.join(chr(34) + c + chr(34) for c in v)}]\n" for k, v in shards.items())
    return out
