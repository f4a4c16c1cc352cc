"""Runpod's list prices for the simulated fleet: one `GET /v2/catalog/gpus` answer
(openapi-v2 `ListGpuTypesResponse`), pulled the day before the window, so the FOCUS export has a
ListCost to set beside the contracted cost.

SAMPLE PRICES, invented for the simulation and NOT Runpod's real prices (the envelope says so):
each GPU type's secure price is above the rate the simulated contract charges for it
(world.SAMPLE_GPU_PER_HOUR, the savings plan of extras.py), and the serverless price of the
ADA_24 pool the simulated endpoints use is above SAMPLE_SERVERLESS_PER_SECOND × 3600, so the
export shows ListCost > ContractedCost for GPU compute. Every simulated pod is SECURE.
"""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

from .emit_runpod import iso
from .extras import GPU as H100
from .world import SAMPLE_GPU_PER_HOUR, day_epoch

# gpu type -> (pool, memory GB, secure, community, serverless USD per GPU-hour)
SAMPLE_LIST_PRICES: dict[str, tuple[str | None, int, Decimal, Decimal, Decimal | None]] = {
    "NVIDIA A100 80GB PCIe": ("AMPERE_80", 80, Decimal("1.89"), Decimal("1.19"), Decimal("2.72")),
    "NVIDIA L40S": ("ADA_48_PRO", 48, Decimal("0.99"), Decimal("0.79"), Decimal("1.90")),
    "NVIDIA GeForce RTX 4090": ("ADA_24", 24, Decimal("0.79"), Decimal("0.59"), Decimal("1.30")),
    "NVIDIA L4": ("ADA_24", 24, Decimal("0.48"), Decimal("0.43"), Decimal("1.30")),
    H100: ("HOPPER_141", 80, Decimal("2.99"), Decimal("2.69"), Decimal("4.18")),
}
NOTE = "SAMPLE PRICES: invented by `recon simulate`, NOT Runpod's real list prices"
FILE = "inventory-gpu-catalog.json"

assert all(SAMPLE_LIST_PRICES[g][2] > r for g, r in SAMPLE_GPU_PER_HOUR.items())


def catalog(start_day: date) -> dict:
    """The catalog answer as the connector lands it (x_recon first: when it was pulled)."""
    gpus = []
    for gid, (pool, mem, secure, community, serverless) in SAMPLE_LIST_PRICES.items():
        price = {"secure": float(secure), "community": float(community)}
        if serverless is not None:
            price["serverless"] = float(serverless)
        gpus.append({"id": gid, "name": gid.removeprefix("NVIDIA ").removeprefix("GeForce "),
                     "pool": pool, "manufacturer": "NVIDIA", "memory": mem, "secure": True,
                     "community": True, "price": price,
                     "maxCount": {"secure": 8, "community": 4}})
    return {"x_recon": {"endpoint": "/v2/catalog/gpus", "pulledAt": iso(day_epoch(start_day) - 86400),
                        "params": {}, "note": NOTE},
            "gpus": gpus}


def write_catalog(out: Path, start_day: date) -> list[str]:
    rp = out / "runpod"
    rp.mkdir(parents=True, exist_ok=True)
    (rp / FILE).write_text(json.dumps(catalog(start_day), indent=1))
    return [FILE]
