"""`recon simulate`: a realistic input folder plus the ground truth the reconciliation must find.

Same seed, same bytes. Sample rates are written to the folder's recon.toml, and sample list
prices to its GPU catalog (list_prices.py), each labelled as such.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import date
from pathlib import Path

from ..config import Thresholds
from . import list_prices, output, serverless_extras
from .emit_k8s import RV, write_k8s
from .emit_runpod import write_runpod
from .extras import extras_truth, plan_config, write_extras
from .gpushare import gpushare_truth, write_gpushare
from .truth import ground_truth
from .world import (
    HOURS_PER_MONTH,
    SAMPLE_DISK_RUNNING_GB_MONTH,
    SAMPLE_GPU_PER_HOUR,
    SAMPLE_NETWORK_VOLUME_GB_MONTH,
    SAMPLE_SERVERLESS_PER_SECOND,
    SAMPLE_VOLUME_STOPPED_GB_MONTH,
    World,
    build_world,
)

__all__ = ["World", "build_world", "simulate"]


def _config_text(world: World, th: Thresholds) -> str:
    lines = [
        "# recon configuration written by `recon simulate`.",
        "# SAMPLE RATES: invented for the simulation, NOT anybody's real prices.",
        "[thresholds]",
    ]
    lines += [f"{k} = {v}" for k, v in asdict(th).items()]
    lines += ["", "[rates]", f'disk_running_per_gb_month = "{SAMPLE_DISK_RUNNING_GB_MONTH}"',
              f'volume_stopped_per_gb_month = "{SAMPLE_VOLUME_STOPPED_GB_MONTH}"',
              f'network_volume_per_gb_month = "{SAMPLE_NETWORK_VOLUME_GB_MONTH}"',
              "", "[rates.gpu_per_hour]"]
    lines += [f'"{k}" = "{v}"' for k, v in SAMPLE_GPU_PER_HOUR.items()]
    lines += ["", "[rates.serverless_per_second]"]
    lines += [f'"{ep}" = "{SAMPLE_SERVERLESS_PER_SECOND}"'
              for ep in [e.endpoint_id for e in world.endpoints] + list(serverless_extras.ENDPOINTS)]
    return "\n".join(lines) + "\n"


def simulate(out: str | Path, seed: int = 7, days: int = 2, nodes: int = 4, endpoints: int = 2,
             scale: float = 1.0, start_day: date = date(2026, 6, 1),
             late_bill: date | None = None, late_out: str | Path | None = None,
             gpu_sharing: bool = False) -> dict:
    """Write inputs under `out`, `out/recon.toml` and `out/expected/ground_truth.json`.

    `late_bill`: that day's provider bill has not landed (a late export): none of its Runpod
    bill lines is under `out`; with `late_out`, they are written there instead (pulled a day
    after the day ended), for a test to move in when the export "arrives". The ground truth is
    the reconciliation once the bill is there; `awaiting_bill_days` names the day held before.

    `gpu_sharing`: add a node whose GPU is time-sliced and oversubscribed (recon/simulate/
    gpushare.py); its truth adds `gpu_sharing` (the money at stake and each team's share).
    """
    out = Path(out)
    before = output.snapshot(out)
    if late_bill is not None and not 0 <= (late_bill - start_day).days < days:
        raise ValueError(f"late_bill {late_bill} is not one of the simulated days")
    out.mkdir(parents=True, exist_ok=True)
    world = build_world(seed=seed, days=days, nodes=nodes, endpoints=endpoints, scale=scale,
                        start_day=start_day)
    th = Thresholds(hours_per_month=HOURS_PER_MONTH)
    late = None if late_bill is None else (late_bill - start_day).days
    files = write_k8s(world, out, RV()) + write_runpod(world, out, late, late_out)
    files += write_extras(out, start_day, days)
    files += serverless_extras.write_serverless_extras(out, start_day)
    files += list_prices.write_catalog(out, start_day)
    if gpu_sharing:
        files += write_gpushare(out, start_day, days)
    (out / "recon.toml").write_text(_config_text(world, th) + plan_config(start_day),
                                    encoding="utf-8")
    truth = ground_truth(world, asdict(th))
    rows, found = extras_truth(start_day, days, asdict(th))
    more_rows, more_found = serverless_extras.extras_truth(start_day, asdict(th))
    rows, found = rows + more_rows, found + more_found
    if gpu_sharing:
        more_rows, more_found, truth["gpu_sharing"] = gpushare_truth(start_day)
        rows, found = rows + more_rows, found + more_found
    truth["resource_days"] = sorted(truth["resource_days"] + rows,
                                    key=lambda r: (r["resource_id"], r["day"]))
    truth["findings"] = [{"code": c, "resource_id": r, "day": d} for c, r, d in sorted(
        {(f["code"], f["resource_id"], f["day"]) for f in truth["findings"]} | set(found))]
    truth["awaiting_bill_days"] = [] if late_bill is None else [late_bill.isoformat()]
    (out / "expected").mkdir(exist_ok=True)
    (out / "expected" / "ground_truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True))
    output.write_manifest(out, before)  # what `recon simulate --force` may clear, and only that
    return {"out": str(out), "files": len(files), "truth": truth}
