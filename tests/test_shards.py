"""Shards by cluster that add up (recon/shards.py): a fleet of three clusters sharing ONE Runpod
account, run as shards `a` (cluster c0), `b` (c1) and `__unassigned__` (c2, which no shard
names, plus every bill line no shard's nodes claim and the account's own rows).

Checked against the same tree run on one machine, unsharded: every mart's rows, unioned over
the shards, equal the single run's row for row (as multisets), and per day the shards' billed
amounts add up to the account's to the cent. The tie-out catches a shard that saw another
account and a resource claimed twice. Only 127.0.0.1 is involved nowhere: no network at all.
"""

from __future__ import annotations

import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from recon import shards
from recon.config import load_config
from recon.db import connect
from recon.outputs.publish import publish
from recon.pipeline import run
from recon.simulate import simulate
from recon.simulate.fleet import merged_config, place_cluster

CLUSTERS = ("c0", "c1", "c2")
SHARDS = {"a": ["c0"], "b": ["c1"]}


def _fleet(root: Path) -> Path:
    """Three simulated clusters (seeds 7, 8, 9: disjoint Runpod pods) in the collector's layout
    `k8s/cluster=<c>/`, their Runpod files side by side under `runpod/` as one account's pulls."""
    tree = root / "tree"
    configs = []
    for k, name in enumerate(CLUSTERS):
        sim = root / f"sim{k}"
        simulate(sim, seed=7 + k, days=1, nodes=3, endpoints=1)
        place_cluster(sim, tree, name, first=k == 0, runpod=tree / "runpod" / f"pull={name}")
        configs.append((sim / "recon.toml").read_text())
    (tree / "recon.toml").write_text(merged_config(configs, SHARDS))
    return tree


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("fleet")
    tree = _fleet(root)
    dbs = root / "w"
    out = {"tree": tree, "root": root, "single": dbs / "single.duckdb",
           "a": dbs / "a.duckdb", "b": dbs / "b.duckdb", "u": dbs / "u.duckdb"}
    out["runs"] = {"single": run(tree, out["single"]),
                   "a": run(tree, out["a"], shard="a"),
                   "b": run(tree, out["b"], shard="b")}
    out["runs"]["u"] = run(tree, out["u"], shard=shards.UNASSIGNED,
                           claims=[str(out["a"]), str(out["b"])])
    return out


@pytest.fixture(scope="module")
def routed(fleet) -> dict:
    """The same fleet, routed: `__unassigned__` lands the account's files first (land only),
    the named shards take their rows of them from its warehouse, then it builds with their
    claims (the fleet flow's order)."""
    tree, dbs = fleet["tree"], fleet["root"] / "routed"
    out = {"tree": tree, "single": fleet["single"], "a": dbs / "a.duckdb",
           "b": dbs / "b.duckdb", "u": dbs / "u.duckdb"}
    out["runs"] = {"landed": run(tree, out["u"], shard=shards.UNASSIGNED, land_only=True)}
    for s in ("a", "b"):
        out["runs"][s] = run(tree, out[s], shard=s, account=out["u"])
    out["runs"]["u"] = run(tree, out["u"], shard=shards.UNASSIGNED,
                           claims=[str(out["a"]), str(out["b"])])
    return out


def _marts(con) -> list[str]:
    return [r[0] for r in con.execute(
        "select table_name from duckdb_tables() where schema_name = 'marts' and "
        "table_name != 'validation_results' and database_name = current_database() "
        "order by 1").fetchall()]


def _rows(path: Path, table: str) -> Counter:
    con = connect(path, read_only=True)
    try:
        return Counter(con.execute(f"select * from marts.{table}").fetchall())
    finally:
        con.close()


@pytest.mark.parametrize("mode", ["whole", "routed"])
def test_the_shards_marts_unioned_equal_the_single_machine_marts_row_for_row(mode, request):
    fleet = request.getfixturevalue("fleet" if mode == "whole" else "routed")
    con = connect(fleet["single"], read_only=True)
    marts = _marts(con)
    con.close()
    assert "resource_day" in marts and "findings" in marts and len(marts) >= 19
    for table in marts:
        want = _rows(fleet["single"], table)
        parts = {s: _rows(fleet[s], table) for s in ("a", "b", "u")}
        got = sum(parts.values(), Counter())
        assert got == want, (table, list((want - got).elements())[:2],
                             list((got - want).elements())[:2])
    # each shard really holds its own part, not everything or nothing
    days = {s: _rows(fleet[s], "resource_day") for s in ("a", "b", "u")}
    assert all(sum(c.values()) > 0 for c in days.values())
    # the cluster rows: each cluster's pods in its own shard only
    for s, cluster in (("a", "c0"), ("b", "c1"), ("u", "c2")):
        clusters = {r[0] for r in connect(fleet[s], read_only=True).execute(
            "select distinct cluster from marts.workload_lifecycle").fetchall()}
        assert clusters == {cluster}


def test_a_named_shard_lands_only_its_own_clusters_kubernetes_files(fleet):
    for s, mine in (("a", "c0"), ("b", "c1"), ("u", "c2")):
        con = connect(fleet[s], read_only=True)
        files = [r[0] for r in con.execute("select source_file from whole.raw.files").fetchall()]
        con.close()
        k8s = {f.split("cluster=")[1].split("/")[0] for f in files if "/k8s/" in f}
        assert k8s == {mine}
        # every provider file of the account, in every shard
        assert sum("/runpod/" in f for f in files) == sum(
            1 for p in (fleet["tree"] / "runpod").rglob("*") if p.is_file())


def test_a_routed_shard_takes_only_its_own_resources_rows_from_the_account(routed):
    """Shard a lands its cluster's files and takes, of the account's, only the rows of the
    pods its nodes may claim and the account's own rows: no serverless, no network volume, no
    other shard's pod. Every record stays accounted for in the account's warehouse."""
    con = connect(routed["a"], read_only=True)
    files = [r[0] for r in con.execute("select source_file from whole.raw.files").fetchall()]
    pods = {r[0] for r in con.execute(
        "select doc ->> '$.podId' from whole.raw.runpod_billing where source in "
        "('v2_pods', 'v1_pods') union select doc ->> '$.id' from whole.raw.runpod_inventory "
        "where inventory_kind = 'pods'").fetchall()}
    claims = {r[0] for r in con.execute("select resource_id from whole.meta.shard_claims"
                                        ).fetchall()}
    candidates = {r[0] for r in con.execute("select resource_id from "
                                            "whole.meta.shard_candidates").fetchall()}
    others = con.execute("select count(*) from whole.raw.runpod_billing where source in "
                         "('v2_serverless', 'v2_network_volumes')").fetchone()[0]
    jobs = con.execute("select count(*) from whole.raw.serverless_jobs").fetchone()[0]
    con.close()
    assert {f.split("cluster=")[1].split("/")[0] for f in files if "/k8s/" in f} == {"c0"}
    assert claims and claims <= pods <= candidates
    assert others == 0 and jobs == 0
    u = connect(routed["u"], read_only=True)
    b_claims = {r[0] for r in u.execute("select resource_id from whole.meta.shard_foreign_claims "
                                        "where shard = 'b'").fetchall()}
    landed, quarantined = u.execute("select sum(records_loaded), sum(records_quarantined) "
                                    "from whole.raw.files").fetchone()
    u.close()
    assert b_claims and not (pods & b_claims)  # none of shard b's pods
    taken = routed["runs"]["a"].taken
    assert 0 < taken["records"] < taken["account_records"] == landed
    # the account's warehouse accounts for every record of its files
    assert routed["runs"]["landed"].records_in == landed + quarantined + \
        routed["runs"]["landed"].skipped


def test_a_routed_shard_rerun_takes_nothing_again_and_keeps_its_rows(routed, tmp_path):
    a = tmp_path / "a.duckdb"
    shutil.copy(routed["a"], a)
    before = {t: _rows(a, t) for t in ("resource_day", "findings")}
    res = run(routed["tree"], a, shard="a", account=routed["u"])
    assert res.taken["changed"] == 0 and res.taken["files"] == routed["runs"]["a"].taken["files"]
    assert res.taken["looked_at"] == 0  # no account file changed: none is read again
    assert {t: _rows(a, t) for t in ("resource_day", "findings")} == before


def test_a_pod_that_becomes_a_candidate_later_gets_its_earlier_rows(routed, tmp_path):
    """Shard a's first run sees none of its nodes (its Kubernetes files not yet collected but
    one), so it takes no pod's rows. Its next run sees them: the account's files are unchanged,
    yet the ones holding rows of the new candidates are read again, through the account's index
    of its pod rows, and the shard ends as if it had seen everything at once."""
    tree = tmp_path / "tree"
    shutil.copytree(routed["tree"], tree)
    own = tree / "k8s" / "cluster=c0"
    later = tmp_path / "later"
    later.mkdir()
    for f in sorted(own.iterdir())[1:]:
        f.rename(later / f.name)
    a = tmp_path / "a.duckdb"
    first = run(tree, a, shard="a", account=routed["u"])
    con = connect(a, read_only=True)
    pods = con.execute("select count(*) from whole.raw.runpod_billing").fetchone()[0]
    con.close()
    assert pods == 0 and first.taken["records"] > 0  # the GPU catalog only
    for f in later.iterdir():
        f.rename(own / f.name)
    second = run(tree, a, shard="a", account=routed["u"])
    t = second.taken
    assert 0 < t["looked_at"] < t["account_files"] and t["changed"] > 0
    assert t["records"] == routed["runs"]["a"].taken["records"]
    for table in ("resource_day", "findings", "pod_buckets"):
        assert _rows(a, table) == _rows(routed["a"], table), table


def test_a_routed_shard_takes_a_bill_the_account_landed_later_and_reads_nothing_else(routed,
                                                                                    tmp_path):
    """The daily case: the account lands a new file of shard a's pods' bill (a later pull);
    shard a's next run reads that one file of the account's and ends as if the file had been
    there from the start."""
    tree = tmp_path / "tree"
    shutil.copytree(routed["tree"], tree)
    late = sorted((tree / "runpod" / "pull=c0").glob("billing-pods-*.json"))[0]
    aside = tmp_path / late.name
    late.rename(aside)
    u, a = tmp_path / "u.duckdb", tmp_path / "a.duckdb"
    run(tree, u, shard=shards.UNASSIGNED, land_only=True)
    first = run(tree, a, shard="a", account=u)
    assert _rows(a, "resource_day") != _rows(routed["a"], "resource_day")  # a bill missing
    aside.rename(late)
    run(tree, u, shard=shards.UNASSIGNED, land_only=True)
    second = run(tree, a, shard="a", account=u)
    assert second.taken["looked_at"] == 1 and second.taken["changed"] == 1
    assert second.taken["files"] == first.taken["files"] + 1
    for table in ("resource_day", "findings", "pod_buckets"):
        assert _rows(a, table) == _rows(routed["a"], table), table


def test_the_accounts_index_of_its_pod_rows_follows_each_landing(fleet, tmp_path):
    """`__unassigned__` lists which of its raw rows are whose pod as files land: files added
    by a later landing are added, a file landed again with other bytes is listed anew, and the
    index always equals one made from every row at once."""
    import json

    tree = tmp_path / "tree"
    shutil.copytree(fleet["tree"], tree)
    aside = tmp_path / "pull=c1"
    (tree / "runpod" / "pull=c1").rename(aside)
    u = tmp_path / "u.duckdb"

    def index_is_whole() -> int:
        con = duckdb.connect(str(u), read_only=True)
        got = Counter(con.execute("select * from meta.account_pod_rows").fetchall())
        want = Counter(con.execute(
            "select source_file, 'runpod_billing', locator, doc ->> '$.podId' from "
            "raw.runpod_billing where source in ('v2_pods', 'v1_pods') union all "
            "select source_file, 'runpod_inventory', locator, doc ->> '$.id' from "
            "raw.runpod_inventory where inventory_kind = 'pods'").fetchall())
        con.close()
        assert got == want and max(got.values()) == 1
        return sum(got.values())

    run(tree, u, shard=shards.UNASSIGNED, land_only=True)
    n1 = index_is_whole()
    aside.rename(tree / "runpod" / "pull=c1")
    run(tree, u, shard=shards.UNASSIGNED, land_only=True)
    n2 = index_is_whole()
    bill = sorted((tree / "runpod" / "pull=c1").glob("billing-pods-*.json"))[0]
    doc = json.loads(bill.read_text())
    doc["records"] = doc["records"][1:]  # the provider restated the file: one line fewer
    bill.write_text(json.dumps(doc))
    run(tree, u, shard=shards.UNASSIGNED, land_only=True)
    assert 0 < n1 < n2 and index_is_whole() == n2 - 1


def test_a_routed_shard_that_would_miss_a_claimed_bill_fails(routed, tmp_path):
    """The candidates are a superset of the claims by construction; were one missing, the
    pod's bill would not be taken and the shard's numbers would be short: the run fails,
    naming it, and leaves the warehouse as it was."""
    a = tmp_path / "a.duckdb"
    shutil.copy(routed["a"], a)
    con = duckdb.connect(str(a))
    pod = con.execute("select min(resource_id) from meta.shard_claims").fetchone()[0]
    con.execute("delete from meta.shard_candidates where resource_id = ?", [pod])
    con.close()
    with pytest.raises(ValueError, match=f"shard a: its nodes claim {pod}.*not taken"):
        run(routed["tree"], a, shard="a", account=routed["u"])
    assert _rows(a, "resource_day") == _rows(routed["a"], "resource_day")


def test_a_routed_shard_needs_the_unassigned_warehouse_and_a_warehouse_of_its_own(routed, fleet,
                                                                                  tmp_path):
    tree = routed["tree"]
    with pytest.raises(ValueError, match="holds shard 'a', not the __unassigned__ shard"):
        run(tree, tmp_path / "b.duckdb", shard="b", account=routed["a"])
    with pytest.raises(ValueError, match="holds an unsharded run"):
        run(tree, tmp_path / "b2.duckdb", shard="b", account=fleet["single"])
    with pytest.raises(ValueError, match="is no warehouse file"):
        run(tree, tmp_path / "b3.duckdb", shard="b", account=tmp_path / "none.duckdb")
    with pytest.raises(ValueError, match="only a named shard takes its provider rows"):
        run(tree, tmp_path / "u.duckdb", shard=shards.UNASSIGNED, account=routed["u"])
    whole = tmp_path / "b4.duckdb"
    shutil.copy(fleet["b"], whole)  # shard b's warehouse that landed the account's files
    with pytest.raises(ValueError, match="landed the account's provider files itself"):
        run(tree, whole, shard="b", account=routed["u"])


@pytest.mark.parametrize("mode", ["whole", "routed"])
def test_the_shards_billed_amounts_add_up_to_the_accounts_to_the_cent(mode, request):
    fleet = request.getfixturevalue("fleet" if mode == "whole" else "routed")
    t = shards.tieout([fleet["a"], fleet["b"], fleet["u"]], load_config(fleet["tree"] / "recon.toml"))
    assert t.ok, t.problems()
    single = connect(fleet["single"], read_only=True)
    account = dict(single.execute("select cast(day as varchar), sum(billed_amount) "
                                  "from marts.resource_day group by all").fetchall())
    single.close()
    assert t.account == account and account  # the whole account, as one machine sees it
    for day, total in account.items():
        parts = [t.shards[s][day] for s in ("a", "b", shards.UNASSIGNED)]
        assert all(p > 0 for p in parts)
        assert sum(parts, Decimal(0)) == total  # exact decimals: to the cent and below
        assert t.differences[day] == 0


def test_the_tieout_catches_another_account_a_double_claim_and_a_missing_shard(fleet, tmp_path):
    cfg = load_config(fleet["tree"] / "recon.toml")
    # shard b run without one of the bills of its own pods: its bill is not the account's
    tree = tmp_path / "tree"
    shutil.copytree(fleet["tree"], tree)
    dropped = sorted((tree / "runpod" / "pull=c1").glob("billing-pods-*.json"))[0]
    dropped.unlink()
    short = tmp_path / "b.duckdb"
    run(tree, short, shard="b")
    t = shards.tieout([fleet["a"], short, fleet["u"]], cfg)
    assert not t.ok and any("shard b's bill differs from the account's (__unassigned__)" in p
                            and "lacks or adds provider files" in p for p in t.problems())
    # a bill of another shard's pods missing from it changes nothing of shard b's own
    other = tmp_path / "tree2"
    shutil.copytree(fleet["tree"], other)
    sorted((other / "runpod" / "pull=c2").glob("billing-pods-*.json"))[0].unlink()
    b2 = tmp_path / "b-other.duckdb"
    run(other, b2, shard="b")
    assert shards.tieout([fleet["a"], b2, fleet["u"]], cfg).ok
    # a resource two shards' nodes map to (a node label pointing at another cluster's pod)
    twice = tmp_path / "b2.duckdb"
    shutil.copy(fleet["b"], twice)
    taken = connect(fleet["a"], read_only=True).execute(
        "select min(resource_id) from whole.meta.shard_claims").fetchone()[0]
    con = duckdb.connect(str(twice))
    con.execute("insert into meta.shard_claims values (?, 'c1', 'node-x')", [taken])
    con.close()
    t = shards.tieout([fleet["a"], twice, fleet["u"]], cfg)
    assert t.conflicts == [(taken, ["a", "b"])]
    assert f"resource {taken} is claimed by shards a, b" in " ".join(t.problems())
    # the double claim counts that resource's bill twice: the day is off by exactly its amount
    amount = connect(fleet["a"], read_only=True).execute(
        "select sum(billed_amount) from marts.resource_day where resource_id = ?",
        [taken]).fetchone()[0]
    assert sum(t.differences.values()) == -amount
    # a shard left out
    t = shards.tieout([fleet["a"], fleet["u"]], cfg)
    assert t.missing == ["b"] and not t.ok


def test_unassigned_reads_the_claims_from_published_marts_and_publishes_by_shard(fleet, tmp_path):
    out = tmp_path / "pub"
    for s in ("a", "b"):
        con = connect(fleet[s], read_only=True)
        res = publish(con, out)
        con.close()
        assert res.manifest == f"marts/_manifest.shard={s}.json"
    assert (out / "shard_claims" / "shard=a" / "part-0.parquet").is_file()
    u = tmp_path / "u.duckdb"
    run(fleet["tree"], u, shard=shards.UNASSIGNED, claims=[str(out)])
    for table in ("resource_day", "findings", "pod_buckets"):
        assert _rows(u, table) == _rows(fleet["u"], table)
    con = connect(u, read_only=True)
    publish(con, out)
    con.close()
    got = duckdb.connect().execute(
        f"select shard, sum(billed_amount) from read_parquet('{out}/marts/resource_day/*/*/*.parquet',"
        " hive_partitioning = true) group by all").fetchall()
    t = shards.tieout([fleet["a"], fleet["b"], fleet["u"]])
    assert dict(got) == {s: sum(v.values(), Decimal(0)) for s, v in t.shards.items()}
    assert sum(dict(got).values(), Decimal(0)) == sum(t.account.values(), Decimal(0))


def test_a_warehouse_holds_one_shard_and_unassigned_needs_the_others_claims(fleet, tmp_path):
    tree = fleet["tree"]
    run(tree, tmp_path / "x.duckdb", shard="a")
    with pytest.raises(ValueError, match="holds shard 'a'; shard 'b' needs a warehouse of its own"):
        run(tree, tmp_path / "x.duckdb", shard="b")
    with pytest.raises(ValueError, match="holds shard 'a'; an unsharded run"):
        run(tree, tmp_path / "x.duckdb")
    run(tree, tmp_path / "y.duckdb")
    with pytest.raises(ValueError, match="holds an unsharded run; shard 'a'"):
        run(tree, tmp_path / "y.duckdb", shard="a")
    with pytest.raises(ValueError, match="give it the claims of shards a, b"):
        run(tree, tmp_path / "z.duckdb", shard=shards.UNASSIGNED)
    with pytest.raises(ValueError, match="no claims of shard\\(s\\) b"):
        run(tree, tmp_path / "z2.duckdb", shard=shards.UNASSIGNED, claims=[str(fleet["a"])])
    with pytest.raises(ValueError, match="unknown shard 'eu'"):
        run(tree, tmp_path / "w.duckdb", shard="eu")
    # nothing was committed by the refused runs: the warehouse holds shard a's run only
    con = connect(tmp_path / "x.duckdb", read_only=True)
    assert con.execute("select name from whole.meta.shard").fetchall() == [("a",)]
    con.close()


def test_the_shards_table_is_checked(tmp_path):
    p = tmp_path / "recon.toml"
    p.write_text('[shards]\neu = ["c0", "c1"]\nus = ["c1"]\n__unassigned__ = ["c2"]\n'
                 '"bad name" = ["c3"]\nempty = []\n')
    with pytest.raises(ValueError) as e:
        load_config(p)
    text = str(e.value)
    assert "4 problem(s)" in text
    assert "cluster 'c1' is already in shard 'eu'" in text
    assert "__unassigned__: reserved" in text
    assert "bad name: a shard name is letters, digits" in text
    assert "empty: should be a non-empty list of cluster names (got [])" in text
    p.write_text('[shards]\neu = ["c0"]\nus = ["c1", "c2"]\n')
    assert load_config(p).shards == {"eu": ("c0",), "us": ("c1", "c2")}


def test_identical_files_of_two_clusters_both_land(tmp_path):
    """The same KEDA objects deployed in two clusters (one Helm chart in each) are
    byte-identical files under two `cluster=` folders: each cluster's rows, not one file and
    its copy. A byte-identical copy inside one cluster's folder stays a duplicate."""
    sim = tmp_path / "sim"
    simulate(sim, seed=7, days=1, nodes=2, endpoints=1)
    tree = tmp_path / "tree"
    keda = (sim / "k8s" / "cluster=sim-cluster" / "keda.json").read_bytes()
    for c in ("c0", "c1"):
        (tree / "k8s" / f"cluster={c}").mkdir(parents=True)
        (tree / "k8s" / f"cluster={c}" / "keda.json").write_bytes(keda)
    (tree / "k8s" / "cluster=c1" / "keda-copy.json").write_bytes(keda)
    res = run(tree, tmp_path / "w.duckdb")
    kinds = {Path(f.path).name + "@" + f.path.split("cluster=")[1][:2]: f.kind for f in res.files}
    assert kinds["keda.json@c0"] != "duplicate"
    # of c1's two identical files, one lands and the other is its duplicate
    assert sorted(kinds[f"{n}@c1"] == "duplicate" for n in ("keda.json", "keda-copy.json")) == [
        False, True]
    con = connect(tmp_path / "w.duckdb", read_only=True)
    per = dict(con.execute("select cluster, count(*) from staging.stg_k8s__scaled_objects "
                           "group by all").fetchall())
    con.close()
    assert set(per) == {"c0", "c1"} and per["c0"] == per["c1"] > 0
