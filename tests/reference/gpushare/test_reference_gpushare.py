"""Shared GPUs (time-slicing and MIG) from hand-made Node and Pod files in the formats the API
server and Runpod emit (sources: tests/reference/gpushare/README.md).

Each node is billed one hour at $3.60, every pod holds its GPU share for all of it: a pod's
money is $3.60 × the fraction of a physical GPU it held ÷ the node's physical GPUs.
"""

from decimal import Decimal
from pathlib import Path

import pytest

from recon.pipeline import run
from tests.flows.duck import q

HERE = Path(__file__).parent
HOUR = Decimal("3.60")
DEC = Decimal("0.000000000001")


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for case in ("oversubscribed", "within", "mig", "malformed"):
        db = tmp_path_factory.mktemp(case) / "recon.duckdb"
        res = run(HERE / case, db)
        assert res.quarantined == 0 and res.staging_quarantined == 0, res.files
        out[case] = db
    return out


def allocation(db: Path) -> dict[tuple[str, str], Decimal]:
    rows = q(db, "select resource_id, team, sum(amount) from marts.allocation group by all")
    return {(r, t): a for r, t, a in rows}


def gpu_findings(db: Path) -> list[tuple]:
    return q(db, "select code, resource_id, day::varchar, seconds, amount_at_stake, message, namespace, "
                 "owner_kind, owner_name, team from marts.findings where code = 'GPU_SHARED_OVERSUBSCRIBED'")


def test_one_replica_of_a_gpu_time_sliced_four_ways_is_a_quarter_of_it(warehouses):
    """gpu-ts: nvidia.com/gpu.count=1, nvidia.com/gpu.replicas=4, capacity nvidia.com/gpu 4
    ("a node with 8 GPUs … would now advertise 80 nvidia.com/gpu", k8s-device-plugin README):
    each pod's `nvidia.com/gpu: 1` is 1/4 of the one GPU, $3.60 × 1/4 = $0.90; two pods $1.80,
    the two replicas nobody held $1.80 idle. The node's pods get no more than its bill."""
    db = warehouses["oversubscribed"]
    assert q(db, "select pod_name, gpus, gpu_fraction from marts.workloads order by pod_name") == [
        ("embed-batch-q9m4w", 1, Decimal("0.25")), ("embed-batch-x7k2p", 1, Decimal("0.25"))]
    assert allocation(db) == {("rpts1a10", "nlp"): 2 * HOUR / 4, ("rpts1a10", "__idle__"): 2 * HOUR / 4}
    assert q(db, "select node_name, gpu_capacity, gpu_sharing, physical_gpus, gpu_replicas, gpu_note "
                 "from marts.nodes") == [("gpu-ts", 4, "time-slicing", 1, 4, None)]


def test_more_replicas_held_than_physical_gpus_is_gpu_shared_oversubscribed(warehouses):
    """Two replicas held on one physical GPU for 3,600 s. Whole-GPU accounting prices each
    `nvidia.com/gpu: 1` as a GPU: 2 × $3.60 = $7.20; the fractional split charges 2 × $0.90 =
    $1.80; at stake $7.20 − $1.80 = $5.40. Both pods are Job ml-batch/embed-batch's, team nlp."""
    [(code, rid, day, secs, amount, msg, ns, kind, name, team)] = gpu_findings(warehouses["oversubscribed"])
    assert (code, rid, day, secs) == ("GPU_SHARED_OVERSUBSCRIBED", "rpts1a10", "2026-06-01", 3600)
    assert amount == (2 * HOUR - 2 * HOUR / 4).quantize(DEC) == Decimal("5.40")
    assert (ns, kind, name, team) == ("ml-batch", "Job", "embed-batch", "nlp")
    assert "Node gpu-ts shares 1 physical GPU(s) by time-slicing, 4 replicas each" in msg
    assert "held up to 2 replicas, more than its 1 GPU(s), for 3600 s" in msg
    assert "ml-batch/embed-batch-q9m4w 1, ml-batch/embed-batch-x7k2p 1" in msg
    assert "5.40 USD more than their fractions (1/4 of a GPU per replica)" in msg


def test_replicas_held_within_the_physical_gpus_is_no_finding(warehouses):
    """gpu-ts2: 2 physical GPUs × 4 replicas (capacity 8); the same two pods hold 2 replicas,
    not more than 2 GPUs: no finding. Each holds 1/4 of a GPU, $3.60 × (1/4) ÷ 2 GPUs = $0.45."""
    db = warehouses["within"]
    assert gpu_findings(db) == []
    assert allocation(db) == {("rpts2a10", "nlp"): 2 * HOUR / 8, ("rpts2a10", "__idle__"): 6 * HOUR / 8}


def test_a_mig_device_is_its_compute_slices_over_the_gpus_seven(warehouses):
    """gpu-mig: one A100 80GB, MIG mixed. `nvidia.com/mig-1g.10gb: 1` is 1 of the GPU's 7
    compute slices ($3.60 / 7), `nvidia.com/mig-3g.40gb: 1` 3 of 7 ($3.60 × 3 / 7); the 3 slices
    nobody held are idle. Each share is cut to 12 places; the cent fractions add up to the bill."""
    db = warehouses["mig"]
    assert q(db, "select pod_name, gpus, mig_profiles, gpu_fraction from marts.workloads order by pod_name") == [
        ("finetune-h7j3k", 0, "mig-3g.40gb: 1", Decimal("0.428571")),
        ("tokenize-r2d4f", 0, "mig-1g.10gb: 1", Decimal("0.142857"))]
    got = allocation(db)
    assert got[("rpmiga100", "nlp")] == (HOUR / 7).quantize(DEC)
    assert got[("rpmiga100", "research")] == (HOUR * 3 / 7).quantize(DEC, rounding="ROUND_DOWN")
    assert sum(got.values()) == HOUR
    assert abs(got[("rpmiga100", "__idle__")] - HOUR * 3 / 7) < Decimal("0.000000001")
    assert gpu_findings(db) == []


def test_malformed_sharing_labels_fall_back_to_whole_gpus_with_a_note(warehouses):
    """gpu-bad: replicas `four` is no integer: each `nvidia.com/gpu` counts whole, of capacity 4
    ($3.60 / 4 each, as before sharing was read). gpu-a30: MIG mixed on an A30, whose slice count
    this project does not know: the `mig-1g.6gb` device counts as a whole GPU ($3.60). No
    finding, and marts.nodes says why."""
    db = warehouses["malformed"]
    assert gpu_findings(db) == []
    assert allocation(db) == {("rpbada10", "nlp"): 2 * HOUR / 4, ("rpbada10", "__idle__"): 2 * HOUR / 4,
                              ("rpbada30", "nlp"): HOUR}
    notes = dict(q(db, "select node_name, gpu_note from marts.nodes"))
    assert "nvidia.com/gpu.replicas=four" in notes["gpu-bad"] and "whole nvidia.com/gpu" in notes["gpu-bad"]
    assert "NVIDIA-A30 has no known MIG slice count" in notes["gpu-a30"]
    assert "each MIG device counted as a whole GPU" in notes["gpu-a30"]


@pytest.mark.parametrize("case", ["oversubscribed", "within", "mig", "malformed"])
def test_every_file_of_the_corpus_cites_its_source(case):
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    for p in sorted((HERE / case).iterdir()):
        assert f"`{case}/{p.name}`" in readme, p


@pytest.mark.parametrize("case", ["oversubscribed", "mig"])
def test_a_windowed_run_splits_the_day_as_the_full_run(case, warehouses, tmp_path):
    """A run with --from/--to reads its pods through sql/scope/ and keeps only its days' rows:
    the node's sharing labels and the pods' MIG devices come through it, so the day splits and
    the finding read as in the full run."""
    from datetime import date

    db = tmp_path / "w.duckdb"
    run(HERE / case, db, day_from=date(2026, 6, 1), day_to=date(2026, 6, 1))
    for sql in ("select * from marts.allocation order by all",
                "select code, resource_id, seconds, amount_at_stake, message from marts.findings order by all"):
        assert q(db, sql) == q(warehouses[case], sql), sql
