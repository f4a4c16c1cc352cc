"""Pod storage in the hour compute stops or starts, and a pod known only from a saved v1 bill.

The files in `input/` are written by hand in the shapes Runpod returns them, not by the
simulator:

* `billing-pods.json`: one `GET /v2/billing/pods?startTime=2026-06-01T09:00:00Z&endTime=
  2026-06-01T18:00:00Z&bucketSize=hour` response, `ListPodBillingResponse` of
  /work/shared/reference/runpod/openapi-v2.json (`records` of `PodBillingRecord`: startTime,
  endTime, podId, totalAmount, gpuAmount, cpuAmount, diskAmount; `metadata` with query,
  recordCount, totals, uniquePodCount). Amounts carry 10 decimals, USD only: "v2 reports no
  seconds and no GB" (runpod-billing.md line 28).
* `pods-0930.json`, `pods-1230.json`, `pods-1530.json`: `GET /v2/pods` saved with curl at those
  times (`ListPodsResponse`, modelled on the spec's own example): the container disk is `disk`
  (BaseContainerConfig: "Container disk in GB"), the pod volume `mounts.persistent.size`
  (PersistentMount: "Host-local persistent storage in GB"); `cost` is 0.0 once EXITED (Pod.cost:
  "0.0 when EXITED or TERMINATED"). The v2 API has no `volumeInGb`/`containerDiskInGb`: those
  are the retired v1 Pod's names (openapi-v1.json, Pod), which staging reads too. A pod without
  a volume is listed with `"mounts": {}` (Mounts: "At-most-one of persistent or network").
* `v1-billing-pods.json`: a saved v1 `GET /billing/pods` array grouped by pod (openapi-v1.json
  `BillingRecords`: amount, diskSpaceBilledGb, podId, time, timeBilledMs; runpod-billing.md
  line 38).
* `recon.toml`: the running and stopped disk rates (runpod-billing.md lines 66-67: "Container
  disk: billed while running, gone when the pod stops. Volume disk: billed while running and at
  a higher rate while stopped (docs: 0.10 vs 0.20 USD/GB/month)"); a month is 730 hours.

So in an hour with t_c seconds of compute and t_s stopped:
  diskAmount = (vol + ctr) × 0.10 × t_c / (730 × 3600) + vol × 0.20 × t_s / (730 × 3600).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from recon.db import connect
from recon.pipeline import run

INPUT = Path(__file__).with_name("input")
MONTH_S = Decimal(730 * 3600)  # seconds in a billing month
RUN, STOP = Decimal("0.10"), Decimal("0.20")  # USD per GB-month
DAY = "2026-06-01"
CENT = Decimal("0.01")
STOP_HOUR = "podstophour50v"  # 50 GB volume + 20 GB container disk, RTX 4090 at $0.69/h
START_HOUR = "podstarthr100v"  # 100 GB volume + 40 GB container disk, L40S at $0.86/h
NO_SIZE = "podnosize30vol"  # never in an inventory snapshot; rate card $1.64/h
CONTAINER_ONLY = "podctronly25gb"  # 25 GB container disk, no volume ("mounts": {})
BILL_ONLY = "podbillonly40g"  # only in the v1 bill: 45 min, 40 GB billed, no node, no inventory


def usd(gb: int, rate: Decimal, seconds: int) -> Decimal:
    """What `gb` of disk costs at `rate` USD/GB-month for `seconds`."""
    return gb * rate * seconds / MONTH_S


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("reference-storage") / "recon.duckdb"
    res = run(INPUT, path, validate=True)
    assert res.quarantined == 0
    con = connect(path, read_only=True)
    con.execute("set TimeZone = 'UTC'")
    yield con, res
    con.close()


def _bucket(con, pod: str, hour: int) -> dict:
    cols = ("compute_ms", "disk_usd", "storage_running_ms", "storage_running_usd",
            "storage_lingering_ms", "storage_lingering_usd", "storage_split",
            "storage_lingering_derived")
    row = con.execute(f"select {', '.join(cols)} from intermediate.int_runpod__pod_buckets "
                      "where pod_id = ? and hour(bucket_start) = ?", [pod, hour]).fetchone()
    return dict(zip(cols, row))


def _segments(con, pod: str) -> dict[str, tuple[Decimal, Decimal]]:
    return {c: (s, a) for c, s, a in con.execute(
        "select category, seconds, amount from marts.billed_segments where resource_id = ? "
        "and day = ?", [pod, DAY]).fetchall()}


def _finding(con, code: str, pod: str):
    return con.execute("select severity, seconds, amount_at_stake, message from marts.findings "
                       "where code = ? and resource_id = ?", [code, pod]).fetchone()


def test_the_hour_compute_stops_holds_running_and_stopped_disk(db):
    """Stops at 10:20: 1200 s running storage of 70 GB, 2400 s lingering of the 50 GB volume."""
    con, _ = db
    b = _bucket(con, STOP_HOUR, 10)
    assert b["compute_ms"] == 1_200_000  # gpuAmount 0.23 ÷ $0.69/h
    assert b["disk_usd"] == Decimal("0.0123287671")  # the record's diskAmount
    assert b["storage_split"] == "mixed" and b["storage_lingering_derived"]
    assert b["storage_running_ms"] == 1_200_000
    assert b["storage_lingering_ms"] == 2_400_000  # 3600 - 1200 s: stopped, not terminated
    assert abs(b["storage_running_usd"] - usd(70, RUN, 1200)) < Decimal("1e-9")  # $0.0031963
    assert abs(b["storage_lingering_usd"] - usd(50, STOP, 2400)) < Decimal("1e-9")  # $0.0091324
    assert b["storage_running_usd"] + b["storage_lingering_usd"] == Decimal("0.0123287671")
    # the day: 09:00 ran whole, 10:00-10:20 ran, 10:20-18:00 stopped (2400 s + 7 whole hours)
    seg = _segments(con, STOP_HOUR)
    assert seg["storage_running"][0] == 3600 + 1200
    assert seg["storage_lingering"][0] == 2400 + 7 * 3600
    assert seg["storage_running"][1].quantize(CENT) == usd(70, RUN, 4800).quantize(CENT)
    assert abs(seg["storage_lingering"][1] - usd(50, STOP, 27600)) < Decimal("1e-8")
    disk = Decimal("0.0095890411") + Decimal("0.0123287671") + 7 * Decimal("0.0136986301")
    assert seg["storage_running"][1] + seg["storage_lingering"][1] == disk
    assert seg["unobserved"] == (Decimal(4800), Decimal("0.92"))  # 0.69 + 0.23: no node
    _, secs, at_stake, msg = _finding(con, "STORAGE_LINGERING", STOP_HOUR)
    assert secs == 27600 and at_stake == seg["storage_lingering"][1] and "27600 s" in msg
    assert con.execute("select lingering_storage_seconds, seconds_derived from marts.resource_day "
                       "where resource_id = ?", [STOP_HOUR]).fetchone() == (27600, True)


def test_the_hour_compute_starts_holds_stopped_then_running_disk(db):
    """Stopped until it starts at 14:40: 2400 s lingering of 100 GB, then 1200 s of 140 GB."""
    con, _ = db
    b = _bucket(con, START_HOUR, 14)
    assert b["compute_ms"] == 1_200_000  # gpuAmount 0.2866666667 ÷ $0.86/h
    assert (b["storage_running_ms"], b["storage_lingering_ms"]) == (1_200_000, 2_400_000)
    assert abs(b["storage_running_usd"] - usd(140, RUN, 1200)) < Decimal("1e-9")  # $0.0063927
    assert abs(b["storage_lingering_usd"] - usd(100, STOP, 2400)) < Decimal("1e-9")  # $0.0182648
    assert b["storage_running_usd"] + b["storage_lingering_usd"] == Decimal("0.0246575342")
    # the compute of that hour is its last 1200 s: it runs on through 15:00
    start = con.execute("select strftime(min(start_at), '%H:%M:%S') from "
                        "intermediate.int_resource__compute_sessions where resource_id = ?",
                        [START_HOUR]).fetchone()[0]
    assert start == "14:40:00"
    seg = _segments(con, START_HOUR)
    assert seg["storage_lingering"][0] == 5 * 3600 + 2400  # 09:00-14:40
    assert seg["storage_running"][0] == 1200 + 3 * 3600  # 14:40-18:00
    disk = 5 * Decimal("0.0273972603") + Decimal("0.0246575342") + 3 * Decimal("0.0191780822")
    assert seg["storage_running"][1] + seg["storage_lingering"][1] == disk
    assert seg["storage_running"][1].quantize(CENT) == usd(140, RUN, 12000).quantize(CENT)
    assert abs(seg["storage_lingering"][1] - usd(100, STOP, 20400)) < Decimal("1e-8")


def test_an_hour_of_unknown_disk_size_stays_storage_and_is_rate_missing(db):
    """No inventory: sizes unknown. The whole running hour's disk is running storage; the hour
    it stops at 16:30 cannot be split, so its disk is storage_running with no lingering seconds
    and a RATE_MISSING finding holds it; the stopped hour after is lingering, whole (assumed)."""
    con, _ = db
    full, mixed, stopped = (_bucket(con, NO_SIZE, h) for h in (15, 16, 17))
    assert full["storage_split"] == "running"
    assert full["storage_running_ms"] == 3_600_000
    assert full["storage_running_usd"] == Decimal("0.0068493151")  # the record's diskAmount
    assert full["storage_lingering_usd"] == 0  # it was all lingering money, at 0 s
    assert mixed["storage_split"] == "mixed_unknown" and mixed["compute_ms"] == 1_800_000
    assert mixed["storage_running_ms"] == 1_800_000
    assert mixed["storage_running_usd"] == Decimal("0.0075342466")
    assert (mixed["storage_lingering_ms"], mixed["storage_lingering_usd"]) == (0, 0)
    assert stopped["storage_split"] == "stopped_assumed"
    assert stopped["storage_lingering_ms"] == 3_600_000
    seg = _segments(con, NO_SIZE)
    running = Decimal("0.0068493151") + Decimal("0.0075342466")
    assert seg["storage_running"] == (Decimal(5400), running)
    assert seg["storage_lingering"] == (Decimal(3600), Decimal("0.0082191781"))
    severity, secs, at_stake, msg = _finding(con, "RATE_MISSING", NO_SIZE)
    assert (severity, secs, at_stake) == ("warning", None, Decimal("0.0075342466"))
    assert "volume size" in msg and "container disk size" in msg and "rates." not in msg
    assert "1 hour(s)" in msg and "$0.007534" in msg
    assert con.execute("select seconds_derived from marts.resource_day where resource_id = ?",
                       [NO_SIZE]).fetchone() == (True,)  # compute from the amount, v2


def test_a_pod_without_a_volume_bills_no_stopped_disk(db):
    """`"mounts": {}`: no pod volume, 0 GB (not unknown): its 45 min of 25 GB container disk are
    running storage, to the last decimal (the bill rounds $0.00256849315 up to 0.0025684932)."""
    con, _ = db
    b = _bucket(con, CONTAINER_ONLY, 12)
    assert b["compute_ms"] == 2_700_000 and b["storage_split"] == "running"
    assert abs(b["disk_usd"] - usd(25, RUN, 2700)) < Decimal("1e-10")
    seg = _segments(con, CONTAINER_ONLY)
    assert seg["storage_running"] == (Decimal(2700), Decimal("0.0025684932"))
    assert "storage_lingering" not in seg
    assert _finding(con, "RATE_MISSING", CONTAINER_ONLY) is None


def test_a_pod_only_in_a_v1_bill_has_its_money_in_its_segment_and_at_stake(db):
    """Terminated before any inventory snapshot, no node, no rate card: the v1 line says 2700 s
    and $1.234109589041, of which 40 GB × $0.10/GB-month × 2700 s = $0.004109589041 is disk."""
    con, _ = db
    disk = usd(40, RUN, 2700)
    seg = _segments(con, BILL_ONLY)
    assert seg["unobserved"][0] == 2700
    assert seg["unobserved"][1] is not None
    assert seg["unobserved"][1].quantize(CENT) == Decimal("1.23")
    assert abs(seg["unobserved"][1] - (Decimal("1.234109589041") - disk)) < Decimal("1e-11")
    assert seg["storage_running"][0] == 2700
    assert seg["unobserved"][1] + seg["storage_running"][1] == Decimal("1.234109589041")
    _, secs, at_stake, _ = _finding(con, "BILLED_WITHOUT_ACTIVITY", BILL_ONLY)
    assert secs == 2700 and at_stake == seg["unobserved"][1]
    src, charged = con.execute("select charged_rate_source, charged_rate_per_hour from marts.rates "
                               "where resource_id = ?", [BILL_ONLY]).fetchone()
    assert src == "bill_amount_per_hour" and charged.quantize(CENT) == Decimal("1.64")
    assert _finding(con, "RATE_MISSING", BILL_ONLY) is None  # disk GB and rate are known


def test_every_resource_day_ties_to_its_bill_and_the_gate_passes(db):
    con, res = db
    rows = con.execute("""
        select d.resource_id, d.billed_amount, sum(s.amount), count(s.amount), count(*)
        from marts.resource_day d join marts.billed_segments s using (resource_id, day)
        group by all""").fetchall()
    assert len(rows) == 5
    for rid, billed, parts, n_amounts, n in rows:
        assert n_amounts == n and billed == parts, (rid, billed, parts)  # no NULL, exact
    assert res.validation.success, res.validation.summary()
