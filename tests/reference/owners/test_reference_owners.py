"""Who owns the seconds no task used: a node brought up for a pending pod, a startup probe's
killed runs, a node pool's team label, and the team label list, from hand-made files in the
formats the API server and Runpod emit (sources: tests/reference/owners/README.md).

Both bills are cut at $3.60 an hour ($0.001 a second: recon.toml), one GPU per node.
"""

import shutil
from decimal import Decimal
from pathlib import Path

from recon.pipeline import run
from tests.flows.duck import q

HERE = Path(__file__).parent
EMBED = ("ml-batch", "ScaledJob", "embed", "nlp")
POOL = (None, "Node", "gpu-n", "search")
UN = (None, None, None, "__unattributed__")


def usd(seconds: int) -> Decimal:
    return Decimal(seconds) / 1000


def marts(folder: Path, db: Path) -> tuple[list[tuple], list[tuple]]:
    res = run(folder, db)
    assert res.quarantined == 0 and res.staging_quarantined == 0, res.files
    waste = q(db, "select resource_id, cause, namespace, owner_kind, owner_name, team, seconds, amount "
                  "from marts.waste order by all")
    alloc = q(db, "select team, namespace, workload, category, seconds, amount from marts.allocation "
                  "order by all")
    return waste, alloc


def test_a_node_brought_up_for_a_pending_pod_is_that_pods_owners(tmp_path):
    """The pod is created 08:57:30 and Pending ("Insufficient nvidia.com/gpu") before its node
    registers (08:58:00, the bill's first second: 120 s of the 08:00 hour at $0.12); the node is
    Ready 08:59:00, the pod scheduled 09:00:10. Its first run 09:00:20–09:00:40 is killed by the
    startup probe (failureThreshold 2 × periodSeconds 10 = 20 s; lastState.terminated, exit 137),
    the second starts 09:00:45, Ready 09:01:00, done 10:30:00; the node bills until 10:45:00.
    * 08:58:00–08:59:00 node boot, 60 s: startup, the pod's (the node was made for it);
    * 08:59:00–09:00:10 node Ready, pod still Pending, 70 s: unschedulable_wait, the pod's;
    * 09:00:10–09:01:00 the pod starting, 50 s: 20 s in the killed run (probe_restarts), 30 s
      startup;
    * 10:30:00–10:45:00 after exit, 900 s: tail_after_exit (a ScaledJob's node scale-down).
    The pod has no `team` label; mapping.team_labels falls back to app.kubernetes.io/part-of."""
    waste, alloc = marts(HERE / "provisioned", tmp_path / "p.duckdb")
    want = [("rpc3emb", cause, *EMBED, Decimal(s), usd(s)) for cause, s in
            [("probe_restarts", 20), ("startup", 90), ("tail_after_exit", 900), ("unschedulable_wait", 70)]]
    assert waste == want
    # marts.allocation gives the same seconds to the same team: nothing is left __idle__
    assert alloc == [("nlp", "ml-batch", "embed", cat, Decimal(s), usd(s)) for cat, s in
                     [("busy", 5340), ("idle_gap", 70), ("startup", 110), ("tail", 900)]]


def test_a_pod_created_after_its_node_came_up_does_not_own_the_nodes_boot(tmp_path):
    """The near miss: the same node and pod, the pod created 09:00:10 (tests/reference/keda/
    scaledjob): the node was already waiting, so its boot and wait belong to no one."""
    waste, alloc = marts(HERE.parent / "keda" / "scaledjob", tmp_path / "s.duckdb")
    assert [w for w in waste if w[2:6] == UN] == [
        ("rpc3emb", "idle_between_jobs", *UN, Decimal(70), usd(70)),
        ("rpc3emb", "startup", *UN, Decimal(60), usd(60))]
    assert ("__idle__", "__idle__", "rpc3emb", "startup", Decimal(60), usd(60)) in alloc


def test_a_node_pools_team_label_owns_the_node_no_workload_explains(tmp_path):
    """Node gpu-n, labelled team=search by its node pool, registers 08:00:00, Ready 08:01:00;
    nothing is ever scheduled on it; the bill runs 08:00–10:00 (7200 s, $7.20).
    * 08:00:00–08:01:00 node boot, 60 s: startup;
    * 08:01:00–10:00:00 Ready, no GPU workload that day, 7140 s: bill_without_workload;
    both the node's team's, owner kind Node, no namespace."""
    waste, alloc = marts(HERE / "node-pool", tmp_path / "n.duckdb")
    assert waste == [("rpn1idle", "bill_without_workload", *POOL, Decimal(7140), usd(7140)),
                     ("rpn1idle", "startup", *POOL, Decimal(60), usd(60))]
    assert alloc == [("search", "__node__", "gpu-n", "idle_gap", Decimal(7140), usd(7140)),
                     ("search", "__node__", "gpu-n", "startup", Decimal(60), usd(60))]


def test_a_node_without_a_configured_team_label_stays_unattributed(tmp_path):
    """The near miss: the same node when the configured team labels are others (cost-center):
    its seconds stay explicit __unattributed__ rows, and __idle__ in the allocation."""
    case = tmp_path / "node-pool"
    shutil.copytree(HERE / "node-pool", case)
    with (case / "recon.toml").open("a") as f:
        f.write('\n[mapping]\nteam_labels = ["cost-center"]\n')
    waste, alloc = marts(case, tmp_path / "c.duckdb")
    assert waste == [("rpn1idle", "bill_without_workload", *UN, Decimal(7140), usd(7140)),
                     ("rpn1idle", "startup", *UN, Decimal(60), usd(60))]
    assert {a[0] for a in alloc} == {"__idle__"}
