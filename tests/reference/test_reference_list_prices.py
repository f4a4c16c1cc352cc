"""Runpod's list prices: the catalog, its bad prices, each billed hour priced, the FOCUS columns.

The files in `list_prices/input/` are written by hand in the shapes Runpod returns them, not by
the simulator:

* `catalog-20260601T120000Z.json`, `catalog-20260602T000000Z.json`: `GET /v2/catalog/gpus`
  as the connector lands it (`x_recon.pulledAt` first), `ListGpuTypesResponse` of
  /work/shared/reference/runpod/openapi-v2.json. Its first GPU is the spec's own example of
  `listGpuTypes` verbatim (RTX 4090, pool ADA_24, `price` {secure 0.44, community 0.31,
  serverless 1.1}); `GpuType.price` is "List price in USD per hour for a **single** GPU ... the
  rate for a unit is the figure times `gpu.count`", `serverless` "Absent when the GPU is not in
  a serverless pool" (the H100 PCIe, `pool` null). Two GPUs of the first pull carry prices the
  spec does not allow: the L4's `secure` is the string "n/a", the A40's `community` is -0.1.
  The second pull, at 00:00 on 2 June, raises the H100 PCIe to 2.69 secure.
* `pods-1030.json`: `GET /v2/pods` (`Pod`: `gpu` {id, count}, `cloud` SECURE | COMMUNITY, the
  `Cloud` enum; `cost` the rate billed, USD/h). `lppodnocloud1` is saved without `cloud`.
* `serverless-1030.json`: `GET /v2/serverless` (`Endpoint.gpu`: `pools` ["ADA_24"], `count` 2,
  "GPUs per worker").
* `billing-pods.json`, `billing-serverless.json`: `ListPodBillingResponse` /
  `ListEndpointBillingResponse`-shaped hourly records, USD only ("v2 reports no seconds",
  runpod-billing.md line 28): seconds = gpuAmount ÷ the pod's `cost`, or the worker amount ÷
  the configured per-second rate.
* `recon.toml`: the user's contracted rates, below the list prices.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from recon.db import connect
from recon.outputs.focus import focus_rows
from recon.pipeline import run

INPUT = Path(__file__).parent / "list_prices" / "input"
JUNE1, JUNE2 = date(2026, 6, 1), date(2026, 6, 2)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("reference-list-prices") / "recon.duckdb"
    res = run(INPUT, path, validate=True)
    con = connect(path, read_only=True)
    con.execute("set TimeZone = 'UTC'")
    yield con, res
    con.close()


def _list(con, rid: str, day: date) -> dict:
    cols = ("price_basis", "gpu_type", "gpu_count", "cloud_assumed", "priced_seconds",
            "list_usd_per_gpu_hour", "list_amount")
    row = con.execute(f"select {', '.join(cols)} from marts.list_cost where resource_id = ? "
                      "and day = ?", [rid, day]).fetchone()
    return dict(zip(cols, row, strict=True))


def test_a_gpu_with_a_bad_price_is_quarantined_with_its_reason_and_the_rest_loads(db):
    con, res = db
    assert res.quarantined == 2
    got = con.execute("select locator, reason from raw.quarantine where source_file like "
                      "'%catalog-20260601T120000Z.json' order by locator").fetchall()
    assert got == [("gpus[3]", "GPU type 'NVIDIA L4': price.secure is not a number: 'n/a'"),
                   ("gpus[4]", "GPU type 'NVIDIA A40': price.community is negative: -0.1")]
    # the first pull's three good GPU types and the second pull's one
    prices = con.execute("select gpu_type_id, secure_usd_per_gpu_hour, community_usd_per_gpu_hour, "
                         "serverless_usd_per_gpu_hour from staging.stg_runpod__gpu_prices "
                         "order by pulled_at, gpu_type_id").fetchall()
    assert prices == [
        ("NVIDIA GeForce RTX 4090", Decimal("0.44"), Decimal("0.31"), Decimal("1.1")),
        ("NVIDIA H100 PCIe", Decimal("2.49"), Decimal("1.99"), None),
        ("NVIDIA RTX A6000", Decimal("0.79"), Decimal("0.49"), Decimal("0.85")),
        ("NVIDIA H100 PCIe", Decimal("2.69"), Decimal("2.09"), None),
    ]


def test_a_two_gpu_secure_pod_is_priced_at_list_per_gpu_hour(db):
    con, _ = db
    got = _list(con, "lppodsecure2g", JUNE1)
    # billed 10:00-11:00 (gpuAmount 3.98 ÷ cost 3.98/h = 3600 s) and 11:00-12:00 (1.99 ÷ 3.98
    # = 1800 s): 5400 s. Both hours lie before the first pull (12:00): the earliest pull prices
    # them. 2.49 USD/GPU-h × 2 GPUs × 5400 s ÷ 3600 = 4.98 × 1.5 = 7.47
    assert got == {"price_basis": "secure", "gpu_type": "NVIDIA H100 PCIe", "gpu_count": 2,
                   "cloud_assumed": False, "priced_seconds": Decimal("5400"),
                   "list_usd_per_gpu_hour": Decimal("2.49"), "list_amount": Decimal("7.47")}
    # its contract: the rate card's 1.99 × 2 GPUs × 1.5 h = 5.97, below the list
    assert con.execute("select expected_amount from marts.resource_day where resource_id = ? "
                       "and day = ?", ["lppodsecure2g", JUNE1]).fetchone() == (Decimal("5.97"),)


def test_an_hour_is_priced_by_the_latest_pull_at_or_before_it(db):
    con, _ = db
    # 2 June 00:00-01:00, 3600 s: the 00:00 pull's 2.69 holds from 00:00 on; 2.69 × 2 × 1 h
    got = _list(con, "lppodsecure2g", JUNE2)
    assert (got["list_usd_per_gpu_hour"], got["list_amount"]) == (Decimal("2.69"), Decimal("5.38"))


def test_the_pods_cloud_chooses_the_price_and_a_pod_without_one_is_secure(db):
    con, _ = db
    community = _list(con, "lppodcommunity", JUNE1)
    # COMMUNITY RTX A6000, 1 GPU, 0.59 ÷ 0.59/h = 3600 s: community list 0.49 × 1 × 1 h
    assert (community["price_basis"], community["list_amount"]) == ("community", Decimal("0.49"))
    nocloud = _list(con, "lppodnocloud1", JUNE1)
    # no `cloud` in its snapshot: priced as SECURE and said so; 2.49 × 1 GPU × 1 h
    assert (nocloud["price_basis"], nocloud["cloud_assumed"], nocloud["list_amount"]) == (
        "secure", True, Decimal("2.49"))


def test_serverless_is_priced_at_its_pools_price_per_gpu_of_a_worker(db):
    con, _ = db
    got = _list(con, "lpendpoint01", JUNE1)
    # worker amount 0.558 ÷ 0.00031 USD/s = 1800 s; pool ADA_24's serverless 1.1 (the RTX
    # 4090's, the spec's example) × 2 GPUs per worker × 0.5 h = 1.10
    assert (got["price_basis"], got["gpu_type"], got["gpu_count"], got["priced_seconds"],
            got["list_amount"]) == ("serverless", "ADA_24", 2, Decimal("1800"), Decimal("1.10"))


def test_focus_list_cost_is_list_unit_price_times_pricing_quantity_exactly(db):
    con, _ = db
    rows = {(r["ResourceId"], r["ChargePeriodStart"].date()): r
            for r in focus_rows(con, date(2026, 6, 1))}
    # each resource-day is one row here (no workload: all `unobserved`)
    pod = rows[("lppodsecure2g", JUNE1)]
    # 7.47 / 5400 s = 0.00138333… USD/s → 0.001383333 (9 places); × 5400 = 7.469998200
    assert pod["PricingQuantity"] == Decimal("5400") and pod["PricingUnit"] == "Seconds"
    assert pod["ListUnitPrice"] == Decimal("0.001383333")
    assert pod["ListCost"] == Decimal("7.469998200")
    assert pod["ContractedCost"] == pod["BilledCost"] == Decimal("5.97")
    assert pod["ListCost"] > pod["ContractedCost"]
    # 2 June: 5.38 / 3600 = 0.0014944… → 0.001494444; × 3600 = 5.379998400
    assert rows[("lppodsecure2g", JUNE2)]["ListCost"] == Decimal("5.379998400")
    # serverless: 1.10 / 1800 = 0.00061111… → 0.000611111; × 1800 = 1.099999800
    ep = rows[("lpendpoint01", JUNE1)]
    assert (ep["ListUnitPrice"], ep["ListCost"]) == (Decimal("0.000611111"), Decimal("1.099999800"))
    # community list below the contract is reported as it is: 0.49/3600 → 0.000136111 × 3600
    assert rows[("lppodcommunity", JUNE1)]["ListCost"] == Decimal("0.489999600")
    for r in rows.values():
        assert r["ListUnitPrice"] is not None and r["ListCost"] >= 0
        assert r["ListCost"] == r["ListUnitPrice"] * r["PricingQuantity"]
        assert -r["ListCost"].as_tuple().exponent <= 12  # the file's 12 places hold it whole


def test_a_catalog_saved_without_a_pull_time_is_the_earliest_and_a_day_can_change_price(
        tmp_path):
    """Two more catalogs beside the case's: one saved as the API returns it (no `x_recon`, so no
    pull time: it holds before every dated pull) with the H100 PCIe at 2.29, and one pulled at
    11:00 on 1 June with it at 2.59."""
    import json
    import shutil

    folder = tmp_path / "input"
    shutil.copytree(INPUT, folder)
    h100 = {"id": "NVIDIA H100 PCIe", "name": "H100 PCIe", "pool": None, "manufacturer": "NVIDIA",
            "memory": 80, "secure": True, "community": True,
            "maxCount": {"secure": 8, "community": 4}}
    (folder / "catalog-saved.json").write_text(json.dumps(
        {"gpus": [{**h100, "price": {"secure": 2.29, "community": 1.79}}]}))
    (folder / "catalog-20260601T110000Z.json").write_text(json.dumps(
        {"x_recon": {"endpoint": "/v2/catalog/gpus", "pulledAt": "2026-06-01T11:00:00Z",
                     "params": {}},
         "gpus": [{**h100, "price": {"secure": 2.59, "community": 1.99}}]}))
    db = tmp_path / "recon.duckdb"
    run(folder, db)
    con = connect(db, read_only=True)
    try:
        got = _list(con, "lppodsecure2g", JUNE1)
        # 10:00-11:00 (3600 s) at the saved catalog's 2.29, the latest at or before 10:00;
        # 11:00-12:00 (1800 s) at the 11:00 pull's 2.59: 2.29 × 2 × 1 + 2.59 × 2 × 0.5
        # = 4.58 + 2.59 = 7.17, and no one price for the day
        assert (got["list_amount"], got["list_usd_per_gpu_hour"]) == (Decimal("7.17"), None)
        # 2 June 00:00: the 00:00 pull's 2.69 still, × 2 × 1 h
        assert _list(con, "lppodsecure2g", JUNE2)["list_amount"] == Decimal("5.38")
    finally:
        con.close()
