"""Shards by cluster that add up: each bill line reconciled by exactly one shard.

A shard is a set of Kubernetes clusters (`[shards]` in recon.toml: `eu = ["gpu-eu"]`), run
into its own warehouse (`recon run --shard eu`). The provider's bill is account-wide. One shard,
`__unassigned__`, holds the account: it lands every provider file (first, `land_only`, in the
fleet's order) and the clusters no shard names. A named shard lands its own clusters'
`cluster=<c>/` Kubernetes files and, routed (`account`: the `__unassigned__` warehouse), takes
from the account only the provider rows of the pods its nodes may run on (`take_account`), so
that its cost follows its own resources; not routed, it lands every provider file itself.
Each builds its marts whole. What is the shard's own is decided after the build, row by row:

* a row of a cluster (workloads, nodes, pod lifecycles) belongs to the shard owning the
  cluster;
* a row of a billed resource (an instance, a serverless endpoint, a network volume) belongs to
  the shard whose clusters' nodes run on it: the node <-> resource mapping of
  `intermediate.int_k8s__node_resources`, the resource's "claim" (`meta.shard_claims`);
* every other row: resources no shard's nodes claim, the account's own rows (balance, savings
  plans, invoices), clusters no shard names, belongs to `__unassigned__`. It builds after the
  named shards and reads their claims (`claims`: their warehouses, or the folders their marts
  were published to).

The marts stay whole in the warehouse, because models read them back across runs (the
invoice tie-out reads every day of `marts.resource_day`; settlement follows each bill from
pull to pull): deleting other shards' rows would make the next run's account-wide models wrong.
Instead a read-only connection to a shard's warehouse (`recon.db.connect(read_only=True)`:
reports, exports, publish, `recon query`) sees `marts.*` as the shard's own rows, through
views over the attached file (`lens`). The whole warehouse stays readable as
`whole.marts.<table>` on that connection.

`tieout` checks that the shards add up: per day, the shards' own billed amounts sum to the
account's to the cent, each named shard's bill of the resources it claims is the account's,
and no resource is claimed twice.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

UNASSIGNED = "__unassigned__"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
WHOLE = "whole"  # the attached warehouse's catalog on a lens connection
# the column naming a row's billed resource, by preference
RESOURCE_KEYS = ("resource_id", "pod_id", "endpoint_id", "volume_id")
PASS_THROUGH = {"validation_results"}  # the gate's record of its own checks, not rows of the bill

SHARD_DDL = (
    # the shard this warehouse holds, and the claims its last run read (__unassigned__)
    "create table if not exists meta.shard (name varchar not null, claims_from varchar, "
    "set_at timestamptz not null)",
    "create table if not exists meta.shard_clusters (cluster varchar not null, shard varchar not null)",
    "create table if not exists meta.shard_claims (resource_id varchar not null, "
    "cluster varchar, node_name varchar)",
    "create table if not exists meta.shard_foreign_claims (resource_id varchar not null, "
    "shard varchar not null, source varchar not null)",
    # a named shard that takes its provider rows from the account's warehouse (`account`): the
    # ids its nodes may claim, and which of the account's files it holds rows of
    "create table if not exists meta.shard_candidates (resource_id varchar primary key)",
    "create table if not exists meta.shard_imports (source_file varchar primary key, "
    "sha256 varchar not null, account_sha256 varchar, records bigint not null)",
    # the account's files as its last take saw them (sha256): the unchanged ones are not read
    "create table if not exists meta.shard_account_files (source_file varchar primary key, "
    "sha256 varchar)",
)
ACCOUNT = "recon_account"  # the account's warehouse, attached read-only during an import
IMPORTED = "imported"  # raw.files.skip_reason's prefix for a file imported from the account



def shard_names(cfg) -> list[str]:
    """The named shards of the config, in its order (not `__unassigned__`)."""
    return list(cfg.shards)


def check_name(cfg, shard: str) -> None:
    if shard != UNASSIGNED and shard not in cfg.shards:
        known = ", ".join(shard_names(cfg)) or "none: the config has no [shards] table"
        raise ValueError(f"unknown shard {shard!r}: the config's shards are {known} "
                         f"(and {UNASSIGNED}, everything no shard owns)")


def keeps_path(cfg, shard: str, rel: str, routed: bool = False) -> bool:
    """Whether a shard lands this file: the `cluster=` folders of the shard's own clusters (for
    `__unassigned__`, those of clusters no shard names), and every file outside a `cluster=`
    folder (the provider's files are account-wide) unless the shard is `routed`: it then takes
    its rows of those files from the account's warehouse (`take_account`). The folder is read
    as the loader reads a row's cluster from it."""
    from .ingest.reader import folder_cluster

    c = folder_cluster(rel)
    if c is None:
        return not routed
    if shard == UNASSIGNED:
        return not any(c in cs for cs in cfg.shards.values())
    return c in cfg.shards[shard]


def prepare(con, cfg, shard: str | None) -> None:
    """Before landing: a warehouse holds one shard, or none, for good. Mixing two shards' runs
    in one file would make each one's rows the other's."""
    held = is_sharded(con)
    if shard is None:
        if held is not None:
            raise ValueError(f"this warehouse holds shard {held!r}; an unsharded run needs a "
                             "warehouse of its own")
        return
    if held is None and con.execute("select count(*) from raw.files").fetchone()[0]:
        raise ValueError(f"this warehouse holds an unsharded run; shard {shard!r} needs a "
                         "warehouse of its own (e.g. warehouses/<shard>.duckdb)")
    if held is not None and held != shard:
        raise ValueError(f"this warehouse holds shard {held!r}; shard {shard!r} needs a "
                         "warehouse of its own")
    con.execute("create schema if not exists meta")
    for stmt in SHARD_DDL:
        con.execute(stmt)
    if held is None:  # the shard is the warehouse's from its first landing (`apply` restates it)
        con.execute("insert into meta.shard values (?, null, now())", [shard])


def _claims_from(con, paths: list[str]) -> set[str]:
    """The other shards' claims, from their warehouses (`.duckdb`) or the folders their marts
    were published to (`<root>/shard_claims/shard=<s>/part-0.parquet`); the shards read (one
    whose nodes claim nothing included)."""
    con.execute("delete from meta.shard_foreign_claims")
    seen: set[str] = set()
    for p in paths:
        path = Path(p)
        if path.suffix == ".duckdb":
            if not path.is_file():
                raise ValueError(f"claims: {p} is no warehouse file")
            con.execute(f"attach '{_sql_str(path)}' as shard_claims_src (read_only)")
            try:
                name = is_sharded(con, "shard_claims_src")
                if name is None:
                    raise ValueError(f"claims: {p} holds no shard's run")
                seen.add(name)
                con.execute("insert into meta.shard_foreign_claims select distinct resource_id, "
                            "?, ? from shard_claims_src.meta.shard_claims", [name, str(p)])
            finally:
                con.execute("detach shard_claims_src")
        elif path.is_dir():
            files = sorted(path.glob("shard_claims/shard=*/part-0.parquet"))
            if not files:
                raise ValueError(f"claims: {p} holds no shard_claims/shard=<name>/part-0.parquet "
                                 "(a shard's published marts)")
            for f in files:
                seen.add(f.parent.name[len("shard="):])
                con.execute("insert into meta.shard_foreign_claims select distinct resource_id, "
                            "?, ? from read_parquet(?)",
                            [f.parent.name[len("shard="):], str(f), str(f)])
        else:
            raise ValueError(f"claims: {p} is neither a shard's warehouse (.duckdb) nor a folder "
                             "of its published marts")
    return seen


def apply(con, cfg, shard: str | None, claims: list[str] | None) -> None:
    """After the build, in the run's transaction: record the shard, the config's shards'
    clusters and this shard's claims; for `__unassigned__`, the other shards' claims."""
    if claims and shard != UNASSIGNED:
        raise ValueError("claims are read by the __unassigned__ shard only")
    if shard is None:
        return
    con.execute("delete from meta.shard")
    con.execute("insert into meta.shard values (?, ?, now())", [shard, json.dumps(claims or [])])
    con.execute("delete from meta.shard_clusters")
    for name, cs in cfg.shards.items():
        for c in cs:
            con.execute("insert into meta.shard_clusters values (?, ?)", [c, name])
    con.execute("delete from meta.shard_claims")
    mine = ("cluster in (select cluster from meta.shard_clusters where shard = ?)"
            if shard != UNASSIGNED else
            "cluster not in (select cluster from meta.shard_clusters)")
    params = [shard] if shard != UNASSIGNED else []
    con.execute("insert into meta.shard_claims select distinct resource_id, cluster, node_name "
                f"from intermediate.int_k8s__node_resources where resource_id is not null and {mine}",
                params)
    if shard == UNASSIGNED:
        if cfg.shards and not claims:
            raise ValueError(f"the {UNASSIGNED} shard owns what no other shard claims: give it "
                             f"the claims of shards {', '.join(shard_names(cfg))} (--claims: "
                             "their warehouse files or published marts folders)")
        seen = _claims_from(con, claims or [])
        missing = [s for s in shard_names(cfg) if s not in seen]
        if missing:
            raise ValueError(f"claims: no claims of shard(s) {', '.join(missing)} among "
                             f"{', '.join(claims or [])}; every named shard's claims are needed")


# ----------------------------------------------------------------------------- the account's rows

# The account's pod rows, by raw table: which rows are a pod's, and the pod's id.
POD_ROWS = {"runpod_billing": ("source in ('v2_pods', 'v1_pods')", "doc ->> '$.podId'"),
            "runpod_inventory": ("inventory_kind = 'pods'", "doc ->> '$.id'")}
INDEX_DDL = ("create table if not exists meta.account_pod_rows (source_file varchar not null, "
             "tbl varchar not null, locator varchar, pod_id varchar)")


def index_account(con) -> None:
    """The `__unassigned__` shard, after landing, in the run's transaction: which of its raw
    rows are a pod's, and which pod's (`meta.account_pod_rows`: source file, raw table, the
    row's locator, unique in its file, and the pod id), for the files landed in this
    transaction (every file, the first time). A named shard finds its pods' rows through it
    with a join, instead of reading the JSON of the account's whole history every day."""
    from .ingest.land import LANDED_HERE, first_rowids

    con.execute(INDEX_DDL)
    firsts = first_rowids(con)
    if not firsts or not con.execute("select count(*) from meta.account_pod_rows").fetchone()[0]:
        con.execute("delete from meta.account_pod_rows")  # built from every row
        firsts = {}
    else:  # the files landed again (their old rows went) and any gone from the ledger
        con.execute(f"delete from meta.account_pod_rows where source_file in ({LANDED_HERE}) "
                    "or source_file not in (select source_file from raw.files)")
    for t, (where, pod) in POD_ROWS.items():
        con.execute(f"insert into meta.account_pod_rows select source_file, '{t}', locator, "
                    f"{pod} from raw.{t} where {where} and rowid >= {int(firsts.get(t, 0))}")


def _takes(table: str) -> str:
    """SQL over the account's raw row `r` of `table`, one of the files looked at
    (`_recon_look`): whether a routed named shard takes it.

    A pod's row (its bill, its inventory) is taken when the pod is one of the shard's
    candidates (`meta.shard_candidates`), found through the account's index of its pod rows; a
    pod row whose id cannot be read is taken too: taking too much costs time, taking too little
    would lose a claimed pod's bill. The GPU catalog (list prices) and FOCUS exports (other
    clouds' charges) are taken whole: a fixed amount whatever the fleet's size. Never taken:
    the rows of serverless endpoints and network volumes (no node runs on one) and the
    account's own rows (its hourly totals, the balance, v1 totals by GPU type, invoices), all
    `__unassigned__`'s: a named shard holds its own resources' bill only, so that its
    account-wide checks (the gate's account tie-out, the invoice check) are not run against a
    part of the bill. Kubernetes rows of files outside `cluster=` folders are taken by their
    `cluster`."""
    look = "r.source_file in (select source_file from _recon_look)"
    if table in POD_ROWS:
        pods = (f"(r.source_file, r.locator) in (select (source_file, locator) from "
                f"{ACCOUNT}.meta.account_pod_rows where tbl = '{table}' and source_file in "
                "(select source_file from _recon_look) and (pod_id is null or pod_id in "
                "(select resource_id from meta.shard_candidates)))")
        other = " or r.inventory_kind = 'gpu_catalog'" if table == "runpod_inventory" else ""
        return f"{look} and ({pods}{other})"
    if table in ("k8s_objects", "prometheus_series"):
        return f"{look} and r.cluster in (select cluster from _recon_own_clusters)"
    return look if table == "focus_rows" else "false"


def _candidates(con, cfg, everything: bool) -> None:
    """Add to `meta.shard_candidates` every id the shard's nodes may be claimed by: each Node's
    label value, name, provider ID (after the configured prefix, and each of its `/`- and
    `:`-separated parts, as is and in lower case), and the node names of pods and
    kube-state-metrics series (with `use_node_name`). A superset of the claims the build will
    make (`intermediate.int_k8s__node_resources`, the one node <-> resource mapping; checked
    after the build by `check_candidates`). Read: the rows landed in this transaction (all of
    them with `everything`) and the Kubernetes rows being taken from the account. The ids new
    to the table are `_recon_cand_new`."""
    from .ingest.land import first_rowids

    firsts = {} if everything else first_rowids(con)

    def rows(table: str, cols: str) -> str:
        return (f"(select {cols} from raw.{table} where rowid >= {int(firsts.get(table, 0))} "
                f"union all select {cols} from _recon_take_{table})")
    k8s, prom = rows("k8s_objects", "kind, doc"), rows("prometheus_series", "doc")
    nodes = f"from {k8s} where kind = 'Node'"
    pid = "doc ->> '$.spec.providerID'"
    parts = [f"select doc ->> ('$.metadata.labels.\"' || $label || '\"') as id {nodes}",
             f"select doc ->> '$.metadata.name' {nodes}",
             f"select substr({pid}, length($prefix) + 1) {nodes} and starts_with({pid}, $prefix)",
             f"select unnest(string_split_regex({pid}, '[/:]+')) {nodes}",
             f"select lower(unnest(string_split_regex({pid}, '[/:]+'))) {nodes}"]
    if cfg.mapping.use_node_name:
        parts += [f"select doc ->> '$.spec.nodeName' from {k8s} where kind = 'Pod'",
                  f"select doc ->> '$.metric.node' from {prom}"]
    con.execute("create or replace temp table _recon_cand_new as select distinct id as "
                "resource_id from (" + " union all ".join(parts) + ") where id is not null and "
                "id <> '' and id not in (select resource_id from meta.shard_candidates)",
                {"label": cfg.mapping.node_label, "prefix": cfg.mapping.provider_id_prefix})
    con.execute("insert into meta.shard_candidates select resource_id from _recon_cand_new")


def take_account(con, cfg, shard: str, account: str | Path) -> dict:
    """A routed named shard's provider rows: taken from the account's warehouse (the
    `__unassigned__` shard's, which landed every provider file first) instead of landing the
    account's files, so that a shard's cost follows its own resources, not the account's.

    In the run's transaction, after the shard's own `cluster=` folders landed. Only the
    account's files that can change what the shard holds are looked at (`_recon_look`): the
    ones new or changed since its last take, the ones gone, and the ones holding a row of a pod
    that became a candidate in this run (found in the account's index, `index_account`). Of
    them: the Kubernetes rows of the shard's clusters (files outside `cluster=` folders), then
    the ids the shard's nodes may claim (`_candidates`), then the rows `_takes` selects. Each
    account file the shard holds rows of is a file of this warehouse's `raw.files` under its
    own name, its sha256 that of the rows taken (the account file's and their locators), so
    that incremental staging sees a file whose taken rows changed as replaced. Records that
    are not taken are counted, not lost: the account's warehouse holds every one, landed or
    quarantined. Returns the counts."""
    from .ingest.land import note_landed
    from .ingest.raw_tables import TABLES
    from .ingest.reader import folder_cluster

    path = Path(account)
    if not path.is_file():
        raise ValueError(f"account: {account} is no warehouse file (the {UNASSIGNED} shard's "
                         "warehouse, landed first: recon run --shard __unassigned__ --land-only)")
    if any(folder_cluster(f) is None for f, in con.execute(
            "select source_file from raw.files where source_file not in "
            "(select source_file from meta.shard_imports)").fetchall()):
        raise ValueError(f"this warehouse of shard {shard!r} landed the account's provider files "
                         "itself; a shard that takes its rows from the account's warehouse "
                         "needs a warehouse of its own")
    # detached at the end; a failed statement aborts the run's transaction, which rolls back
    # and closes the connection (a DETACH then would raise and hide the error)
    con.execute(f"attach '{_sql_str(path)}' as {ACCOUNT} (read_only)")
    held = is_sharded(con, ACCOUNT)
    if held != UNASSIGNED:
        raise ValueError(f"account: {account} holds "
                         f"{'shard ' + repr(held) if held else 'an unsharded run'}, not the "
                         f"{UNASSIGNED} shard, which lands the account's provider files")
    if not con.execute("select count(*) from duckdb_tables() where database_name = ? and "
                       "schema_name = 'meta' and table_name = 'account_pod_rows'",
                       [ACCOUNT]).fetchone()[0]:
        raise ValueError(f"account: {account} has no index of its pod rows: land it with "
                         "`recon run --shard __unassigned__ --land-only` first")
    con.execute("create or replace temp table _recon_own_clusters as "
                "select unnest(?::varchar[]) as cluster", [list(cfg.shards[shard])])
    everything = not con.execute("select count(*) from meta.shard_candidates").fetchone()[0]
    # the account's files new or changed since the last take, and the ones gone from it
    con.execute(f"""create or replace temp table _recon_look as
        select source_file from {ACCOUNT}.raw.files a where not exists (
            select 1 from meta.shard_account_files c
            where c.source_file = a.source_file and c.sha256 is not distinct from a.sha256)
        union
        select source_file from meta.shard_account_files
        where source_file not in (select source_file from {ACCOUNT}.raw.files)""")
    order = ["k8s_objects", "prometheus_series", *[t for t in TABLES if t not in
                                                   ("k8s_objects", "prometheus_series")]]
    for t in order:
        if t == "runpod_billing":  # the Kubernetes rows are in: the candidates follow them,
            _candidates(con, cfg, everything)  # and the files of the pods they add
            con.execute(f"insert into _recon_look select distinct source_file from "
                        f"{ACCOUNT}.meta.account_pod_rows where pod_id in (select resource_id "
                        "from _recon_cand_new) and source_file not in (select source_file "
                        "from _recon_look)")
        con.execute(f"create or replace temp table _recon_take_{t} as select r.* from "
                    f"{ACCOUNT}.raw.{t} r where {_takes(t)}")
    taken = " union all ".join(f"select source_file, '{t}' as tbl, locator "
                               f"from _recon_take_{t}" for t in order)
    con.execute(f"""create or replace temp table _recon_taken as
        select source_file, f.kind, f.sha256 as account_sha256, count(*) as records,
               sha256(coalesce(f.sha256, '') || '|' ||
                      string_agg(tbl || ':' || locator, ',' order by tbl, locator)) as sha256
        from ({taken}) left join {ACCOUNT}.raw.files f using (source_file)
        group by source_file, f.kind, f.sha256""")
    gone = [r[0] for r in con.execute(
        "select source_file from meta.shard_imports i where source_file in (select source_file "
        "from _recon_look) and not exists (select 1 from _recon_taken t where "
        "t.source_file = i.source_file and t.sha256 = i.sha256)").fetchall()]
    for f in gone:  # the rows taken of it changed, or none is taken any more
        for t in TABLES:
            con.execute(f"delete from raw.{t} where source_file = ?", [f])
        con.execute("delete from raw.files where source_file = ?", [f])
        con.execute("delete from meta.shard_imports where source_file = ?", [f])
    con.execute("create or replace temp table _recon_take_files as select * from _recon_taken "
                "where source_file not in (select source_file from meta.shard_imports)")
    for t in order:
        con.execute(f"insert into raw.{t} by name select * from _recon_take_{t} "
                    "where source_file in (select source_file from _recon_take_files)")
    con.execute("insert into raw.files by name select source_file, kind, sha256, "
                "null::bigint as bytes, records as records_in, records as records_loaded, "
                "0 as records_quarantined, 0 as records_skipped, null as skip_reason "
                "from _recon_take_files")
    con.execute("insert into meta.shard_imports select source_file, sha256, account_sha256, "
                "records from _recon_take_files")
    con.execute("delete from meta.shard_account_files where source_file in "
                "(select source_file from _recon_look)")
    con.execute(f"insert into meta.shard_account_files select source_file, sha256 from "
                f"{ACCOUNT}.raw.files where source_file in (select source_file from _recon_look)")
    note_landed(con, "select source_file from _recon_take_files")
    out = dict(zip(("files", "records"), con.execute(
        "select count(*), coalesce(sum(records), 0) from meta.shard_imports").fetchone()))
    out["changed"] = con.execute("select count(*) from _recon_take_files").fetchone()[0]
    out["looked_at"] = con.execute("select count(*) from _recon_look").fetchone()[0]
    out["account_files"], out["account_records"] = con.execute(
        f"select count(*), coalesce(sum(records_loaded), 0) from {ACCOUNT}.raw.files"
    ).fetchone()
    out["account"] = str(path)
    for t in [*[f"_recon_take_{t}" for t in order], "_recon_taken", "_recon_take_files",
              "_recon_own_clusters", "_recon_look", "_recon_cand_new"]:
        con.execute(f"drop table if exists {t}")
    con.execute(f"detach {ACCOUNT}")
    return out


def describe_taken(t: dict) -> str:
    """A routed shard's take (`take_account`'s counts) in one sentence, for the CLI and the
    flows' logs."""
    return (f"holds {t['records']} record(s) of {t['files']} file(s) taken from the account's "
            f"warehouse {t['account']} ({t['account_records']} record(s) of "
            f"{t['account_files']} file(s)); this run read {t['looked_at']} of the account's "
            f"files, {t['changed']} new or changed")


def check_candidates(con, shard: str) -> None:
    """After the build of a routed shard: every resource its nodes claim was a candidate, so
    its bill was taken from the account. Else the run fails, naming them (the candidates are
    a superset of the mapping by construction; this keeps it so)."""
    missed = [r[0] for r in con.execute(
        "select distinct resource_id from meta.shard_claims where resource_id not in "
        "(select resource_id from meta.shard_candidates) order by 1 limit 6").fetchall()]
    if missed:
        raise ValueError(f"shard {shard}: its nodes claim {', '.join(missed[:5])}"
                         f"{' and more' if len(missed) > 5 else ''}, whose provider rows were "
                         "not taken from the account's warehouse: the node <-> resource mapping "
                         "named an id the candidates lack (recon/shards.py, _candidates)")


def _sql_str(p) -> str:
    return str(p).replace("'", "''")


# ----------------------------------------------------------------------------- the shard's rows

def owned_predicate(cols: list[str], shard: str, src: str = WHOLE) -> str:
    """SQL over a mart's row `x` (columns `cols`): whether it is the shard's own."""
    meta = f"{src}.meta"
    claimed = f"(select resource_id from {meta}.shard_claims)"
    if shard == UNASSIGNED:
        own_cluster = f"x.cluster not in (select cluster from {meta}.shard_clusters)"
    else:
        own_cluster = (f"x.cluster in (select cluster from {meta}.shard_clusters "
                       f"where shard = '{shard}')")
    key = next((k for k in RESOURCE_KEYS if k in cols), None)
    if key is None:
        resource = "true" if shard == UNASSIGNED else "false"
    else:
        k = f"x.{key}"
        # a finding about a pod that never ran (`pod:<ns>/<name>`) is its cluster's: only the
        # shard that landed that cluster's pods can raise it
        mine = f"({k} in {claimed} or starts_with({k}, 'pod:'))"
        if shard == UNASSIGNED:
            resource = (f"({k} is null or {mine} or not exists (select 1 from {meta}."
                        f"shard_foreign_claims f where f.resource_id = {k}))")
        else:
            resource = f"coalesce({mine}, false)"
    if "cluster" in cols:
        return f"(case when x.cluster is not null then {own_cluster} else {resource} end)"
    return resource


def is_sharded(con, catalog: str | None = None) -> str | None:
    """The shard a warehouse holds (None: an unsharded warehouse): the connection's own, or the
    attached `catalog`'s."""
    catalog = catalog or con.execute("select current_database()").fetchone()[0]
    if not con.execute("select count(*) from duckdb_tables() where database_name = ? and "
                       "schema_name = 'meta' and table_name = 'shard'", [catalog]).fetchone()[0]:
        return None
    quoted = '"' + catalog.replace('"', '""') + '"'
    row = con.execute(f"select name from {quoted}.meta.shard").fetchone()
    return row[0] if row else None


def lens(path: str | Path, shard: str, configure) -> object:
    """A read-only connection on which `marts.<table>` is the shard's own rows and every other
    table of the warehouse reads through; the whole warehouse is the catalog `whole`."""
    import duckdb

    con = duckdb.connect(":memory:")
    configure(con)
    con.execute(f"attach '{_sql_str(path)}' as {WHOLE} (read_only)")
    rows = con.execute(
        "select schema_name, table_name, list(column_name order by column_index) from "
        f"duckdb_columns() where database_name = '{WHOLE}' group by all order by all").fetchall()
    for schema in sorted({r[0] for r in rows}):
        con.execute(f'create schema if not exists "{schema}"')
    for schema, table, cols in rows:
        src = f'{WHOLE}."{schema}"."{table}"'
        if schema == "marts" and table not in PASS_THROUGH:
            sql = f"select * from {src} x where {owned_predicate(cols, shard)}"
        else:
            sql = f"select * from {src}"
        con.execute(f'create view "{schema}"."{table}" as {sql}')
    # the warehouse's macros (cfg(), ...) are the attached file's: found after the views' own
    con.execute(f"set search_path = 'memory.main,{WHOLE}.main'")
    return con


def lens_shard(con) -> str | None:
    """The shard a lens connection shows (None: any other connection)."""
    return is_sharded(con, WHOLE) if _has_whole(con) else None


# ----------------------------------------------------------------------------- the tie-out

@dataclass
class TieOut:
    shards: dict[str, dict[str, Decimal]] = field(default_factory=dict)  # shard -> day -> own
    account: dict[str, Decimal] = field(default_factory=dict)  # day -> the account's billed
    differences: dict[str, Decimal] = field(default_factory=dict)  # day -> account - sum(own)
    disagreements: list[str] = field(default_factory=list)  # a shard's bill not the account's
    conflicts: list[tuple[str, list[str]]] = field(default_factory=list)  # resource, shards
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (any(self.differences.values()) or self.disagreements or self.conflicts
                    or self.missing)

    def problems(self) -> list[str]:
        out = [f"{day}: the shards' billed amounts sum to {self.account[day] - d} against the "
               f"account's {self.account[day]} (off by {d})"
               for day, d in sorted(self.differences.items()) if d]
        out += self.disagreements
        out += [f"resource {r} is claimed by shards {', '.join(s)}: its bill would count "
                f"{len(s)} times" for r, s in self.conflicts]
        out += [f"shard {s} is missing from the tie-out" for s in self.missing]
        return out


def tieout(warehouses: list[str | Path], cfg=None) -> TieOut:
    """Per UTC day: each shard's own billed amount (`marts.resource_day` through its lens), the
    account's (the whole `marts.resource_day` of the `__unassigned__` shard, which lands every
    provider file), and what is off. Every other shard's own bill must be the account's, resource
    by resource and day by day, for the resources its nodes claim: a shard that lacks a provider
    file (or a routed shard that took too little from the account) shows there. `cfg`: with
    it, every named shard and `__unassigned__` must be present."""
    from .db import connect

    res = TieOut()
    claims: dict[str, set[str]] = {}
    accounts: dict[str, dict[tuple[str, str], Decimal]] = {}
    owns: dict[str, dict[tuple[str, str], Decimal]] = {}
    by_day = ("select cast(day as varchar), resource_id, sum(billed_amount) from {} "
              "group by all")
    for w in warehouses:
        con = connect(w, read_only=True)
        try:
            name = lens_shard(con)
            if name is None:
                raise ValueError(f"{w}: not a shard's warehouse (recon run --shard)")
            owns[name] = {(d, r): v or Decimal(0) for d, r, v in
                          con.execute(by_day.format("marts.resource_day")).fetchall()}
            accounts[name] = {(d, r): v or Decimal(0) for d, r, v in con.execute(
                by_day.format(f"{WHOLE}.marts.resource_day")).fetchall()}
            for r, in con.execute(f"select distinct resource_id from {WHOLE}.meta.shard_claims"
                                  ).fetchall():
                claims.setdefault(r, set()).add(name)
        finally:
            con.close()
    for name, own in owns.items():
        days: dict[str, Decimal] = {}
        for (d, _), v in own.items():
            days[d] = days.get(d, Decimal(0)) + v
        res.shards[name] = days
    reference = UNASSIGNED if UNASSIGNED in accounts else next(iter(accounts), None)
    account = accounts.get(reference, {})
    for (d, _), v in account.items():
        res.account[d] = res.account.get(d, Decimal(0)) + v
    for name, own in owns.items():
        if name == reference:
            continue
        mine = {r for r, s in claims.items() if name in s}
        keys = set(own) | {k for k in account if k[1] in mine}
        off = sorted(k for k in keys if own.get(k, Decimal(0)) != account.get(k, Decimal(0)))
        if off:
            res.disagreements.append(
                f"shard {name}'s bill differs from the account's ({reference}) for "
                f"{len(off)} resource-day(s), e.g. "
                + ", ".join(f"{r} on {d}: {own.get((d, r), Decimal(0))} against "
                            f"{account.get((d, r), Decimal(0))}" for d, r in off[:3])
                + ": its input lacks or adds provider files")
    for day in sorted(set(res.account) | {d for s in res.shards.values() for d in s}):
        total = sum((s.get(day, Decimal(0)) for s in res.shards.values()), Decimal(0))
        res.differences[day] = res.account.get(day, Decimal(0)) - total
    res.conflicts = sorted((r, sorted(s)) for r, s in claims.items() if len(s) > 1)
    if cfg is not None:
        res.missing = [s for s in [*shard_names(cfg), UNASSIGNED] if s not in res.shards]
    return res


def _has_whole(con) -> bool:
    return bool(con.execute("select count(*) from duckdb_databases() where database_name = ?",
                            [WHOLE]).fetchone()[0])
