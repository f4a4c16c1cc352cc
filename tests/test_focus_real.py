"""FOCUS files in the cell formats the clouds' own exports write, each landed through `recon run`.

No provider-written FOCUS file is stored in a public repository this project can read: the
Microsoft Cost Management FOCUS exports in microsoft/finops-toolkit
(src/open-data/dataset-examples/EA-Cost-FOCUS_1.0.csv at 599a846947eb937925dc49e431ee498166123ae4,
src/sample-data/EA-Cost-FOCUS.csv at d3e0ddc71689542eeb6d8ea144c31fcb226f61e9) are Git LFS
pointers, and the FOCUS-Sample-Data files (guymano/FOCUS-Sample-Data
FOCUS-1.2/focus_sample_costandusage_aws_1000.csv at 72f0f5f7fb2d79b211dfc66d4ee89c0cbbec36fe) are
synthetic by their README ("Synthetic, PII-free sample datasets"; their shapes are
test_focus_any_cloud's). So tests/reference/focus_real/ holds a few rows per cloud written in the
formats each export is documented or observed to write:

* aws_focus12.csv, landed gzip-compressed as the `.csv.gz` AWS Data Exports delivers: the column
  list of "FOCUS 1.2 with AWS columns" (docs.aws.amazon.com/cur/latest/userguide/
  table-dictionary-focus-1-2-aws-columns: BilledCost `double`, ChargePeriodStart
  `timestamp_milliseconds`, x_Discounts, x_Operation, x_ServiceCode), so times as
  `2025-04-02T10:00:00.000Z`, a tiny cost in scientific notation (`6.123E-7`, as a double prints),
  a quoted `"Amazon Web Services, Inc."`, a quoted empty `""`, JSON Tags with doubled quotes. Its
  Parquet twin is written here with those documented types (double, timestamp[ms, UTC], Tags a
  map).
* gcp_focus_bq_extract.csv: Google Cloud's FOCUS export is a BigQuery table
  (docs.cloud.google.com/billing/docs/how-to/export-data-bigquery-tables/focus-export); `bq
  extract` writes its TIMESTAMPs as `2025-04-02 10:00:00 UTC` ("bq extract outputs TIMESTAMP
  fields using the 'UTC' suffix instead of 'Z'", bxparks/bigquery-schema-generator#19). Its GPU
  SKU meters seconds (ConsumedUnit `seconds`) priced by the hour; with one GPU its seconds are
  the VM's. Only that SKU is here: the VM's cores and memory, billed as SKUs of their own on
  the same ResourceId, would add their seconds to the node's (a gap this file does not cover).
* azure_focus_cost.csv: a Cost Management FOCUS export (learn.microsoft.com/cloud-computing/finops/
  focus/metadata, "String encoding: UTF-8"; x_AccountName, x_BilledCostInUsd,
  x_ResourceGroupName, x_SkuMeterCategory) as Windows tools save a CSV: a byte order mark, CRLF
  line ends, every cell quoted; a daily row (Azure's exports are daily) with 2 Hours of a VM.
* oci_focus_report.csv, landed as the `.csv.gz` OCI writes under `FOCUS Reports/`: the columns of
  OCI's FOCUS reports as Oracle's own loader reads them (oracle-samples/usage-reports-to-adw
  focus2adw/focus2adw.py at 73cbe55d0cf2dab6d6ebc24dc5433c390dd17929: FOCUS 0.5's Provider,
  Publisher, InvoiceIssuer, Region, UsageQuantity, UsageUnit "In OCI", plus the oci_ columns;
  ChargePeriodStart read as its date and `HH:MM`), times as `2025-04-02T10:00Z`. Its units are
  left empty: no OCI row is public to copy them from.

Each GPU VM is a Kubernetes node (test_focus_any_cloud._cloud_node: node created 09:58, its one
pod's container finished 11:00) billed for 2 hours.
"""

import gzip
import json
import shutil
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from test_focus_any_cloud import _cloud_node

from recon.db import connect
from recon.ingest.focus import parse_focus_datetime
from recon.pipeline import run

REF = Path(__file__).parent / "reference" / "focus_real"
AWS_NODE = ("ip-10-0-1-5", "aws:///us-east-1a/i-0abc123def4567890", "0")
GCP_NODE = ("gpu-node-1", "gce://acme-ml/us-central1-a/gpu-node-1", "1")
AZURE_NODE = ("gpu-vm-1", "azure:///subscriptions/00000000-0000-0000-0000-000000000001/"
                          "resourceGroups/ml-gpu/providers/Microsoft.Compute/virtualMachines/gpu-vm-1",
              "2")


def _nodes(folder, *nodes):
    lines = []
    for name, pid, uid in nodes:
        lines += _cloud_node(name, pid, uid)
    (folder / "k8s.jsonl").write_text("\n".join(lines) + "\n")


def _data_lines(path) -> int:
    """Rows in a reference file: its lines less the header (no cell here holds a newline)."""
    return len(path.read_bytes().splitlines()) - 1


@pytest.fixture(scope="module")
def landed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    folder = tmp / "in"
    folder.mkdir()
    (folder / "focus-00001.csv.gz").write_bytes(gzip.compress((REF / "aws_focus12.csv").read_bytes()))
    shutil.copy(REF / "gcp_focus_bq_extract.csv", folder)
    shutil.copy(REF / "azure_focus_cost.csv", folder)
    (folder / "FOCUS Reports").mkdir()
    (folder / "FOCUS Reports" / "0001000001234567.csv.gz").write_bytes(
        gzip.compress((REF / "oci_focus_report.csv").read_bytes()))
    _nodes(folder, AWS_NODE, GCP_NODE, AZURE_NODE)
    res = run(folder, tmp / "db.duckdb")
    con = connect(tmp / "db.duckdb", read_only=True)
    yield res, con
    con.close()


def _by_file(con, name):
    return con.execute("select count(*) from raw.focus_rows where source_file like ?",
                       [f"%{name}"]).fetchone()[0]


def test_every_row_of_each_export_lands(landed):
    res, con = landed
    # no row is quarantined and none is dropped: each file's rows are all in raw.focus_rows
    assert con.execute("select source_file, locator, reason from raw.quarantine").fetchall() == []
    assert res.quarantined == 0
    assert _by_file(con, "focus-00001.csv.gz") == _data_lines(REF / "aws_focus12.csv") == 4
    assert _by_file(con, "gcp_focus_bq_extract.csv") == _data_lines(REF / "gcp_focus_bq_extract.csv") == 3
    assert _by_file(con, "azure_focus_cost.csv") == _data_lines(REF / "azure_focus_cost.csv") == 2
    assert _by_file(con, "0001000001234567.csv.gz") == _data_lines(REF / "oci_focus_report.csv") == 2
    # the warehouse holds the files' BilledCost to the last decimal: AWS 1.006 + 1.006 + 6.123E-7
    # + 0.30, Google 2.933908 + 2.933908 + 0.000123, Azure 1.052 + 0.0064, OCI 2 + 0.0425
    aws = Decimal("1.006") * 2 + Decimal("0.0000006123") + Decimal("0.30")
    gcp = Decimal("2.933908") * 2 + Decimal("0.000123")
    azure = Decimal("1.052") + Decimal("0.0064")
    oci = Decimal("2") + Decimal("0.0425")
    assert con.execute("select sum(billed_cost) from marts.focus_charges").fetchone()[0] == (
        aws + gcp + azure + oci)


def test_aws_cells(landed):
    _, con = landed
    docs = [json.loads(d) for (d,) in con.execute(
        "select doc from raw.focus_rows where source_file like '%focus-00001.csv.gz' order by record_no").fetchall()]
    # the quoted comma stays in its cell; the doubled quotes of the JSON Tags are one quote
    assert docs[0]["InvoiceIssuerName"] == "Amazon Web Services, Inc."
    assert json.loads(docs[0]["Tags"]) == {"user:team": "ml", "aws:eks:cluster-name": "gpu"}
    # a quoted empty cell is a null like an unquoted one
    assert docs[2]["ResourceType"] is None and docs[3]["RegionId"] is None
    # 6.123E-7 is 0.0000006123 exactly, cost and quantity
    assert con.execute("select billed_cost, pricing_quantity from marts.focus_charges "
                       "where service_name = 'AmazonCloudWatch'").fetchone() == (
        Decimal("0.0000006123"), Decimal("0.0000006123"))
    # `2025-04-02T10:00:00.000Z` is 10:00 UTC; the instance's two hourly rows are its 2 hours
    assert con.execute("select charge_period_start, charge_period_end from marts.focus_charges "
                       "where resource_id = 'i-0abc123def4567890' order by 1").fetchall() == [
        (datetime(2025, 4, 2, 10, tzinfo=UTC), datetime(2025, 4, 2, 11, tzinfo=UTC)),
        (datetime(2025, 4, 2, 11, tzinfo=UTC), datetime(2025, 4, 2, 12, tzinfo=UTC))]
    # the tax on April (00:00 1 April .. 00:00 1 May, 30 days) is 0.30 / 30 = 0.01 a day
    assert con.execute("select count(*), min(billed_cost), max(billed_cost), sum(billed_cost) "
                       "from marts.focus_charges where charge_category = 'Tax'").fetchone() == (
        30, Decimal("0.01"), Decimal("0.01"), Decimal("0.30"))


def test_gcp_bq_extract_times_are_utc(landed):
    _, con = landed
    # `2025-04-02 10:00:00 UTC` is 10:00 UTC, not a row quarantined for its suffix
    assert con.execute("select charge_period_start, charge_period_end from marts.focus_charges "
                       "where resource_id = 'gpu-node-1' order by 1").fetchall() == [
        (datetime(2025, 4, 2, 10, tzinfo=UTC), datetime(2025, 4, 2, 11, tzinfo=UTC)),
        (datetime(2025, 4, 2, 11, tzinfo=UTC), datetime(2025, 4, 2, 12, tzinfo=UTC))]
    # the bucket's day: 2.75e-3 gibibyte months for 0.000123, no instance's time
    assert con.execute("select consumed_quantity, billed_cost, reconciled from marts.focus_charges "
                       "where resource_id = 'acme-ml-checkpoints'").fetchone() == (
        Decimal("0.00275"), Decimal("0.000123"), False)


def test_azure_bom_crlf_and_quoted_cells(landed):
    _, con = landed
    (doc,) = con.execute("select doc from raw.focus_rows where source_file like '%azure%' "
                         "order by record_no limit 1").fetchone()
    doc = json.loads(doc)
    # the byte order mark is not part of the first column's name, CRLF not part of the last cell
    assert doc["BillingAccountId"] == "12345678" and doc["x_SkuMeterCategory"] == "Virtual Machines"
    assert con.execute("select charge_period_start, charge_period_end, consumed_quantity "
                       "from marts.focus_charges where resource_id = 'gpu-vm-1'").fetchall() == [
        (datetime(2025, 4, 2, tzinfo=UTC), datetime(2025, 4, 3, tzinfo=UTC), Decimal("2"))]


def test_oci_report_columns(landed):
    _, con = landed
    # FOCUS 0.5's Provider, Publisher, InvoiceIssuer and Region name what the later names would
    assert con.execute(
        "select distinct provider_name, publisher_name, invoice_issuer_name, region_id "
        "from marts.focus_charges where focus_resource_id like 'ocid1.%'").fetchall() == [
        ("OCI", "Oracle", "Oracle", "us-ashburn-1")]
    # `2025-04-02T10:00Z` is 10:00 UTC; without a duration unit the GPU hour is another charge
    assert con.execute("select charge_period_start, charge_period_end, billed_cost, reconciled "
                       "from marts.focus_charges where resource_id = 'ocid1.instance.oc1.iad.anuwcljtgpu1'"
                       ).fetchall() == [
        (datetime(2025, 4, 2, 10, tzinfo=UTC), datetime(2025, 4, 2, 11, tzinfo=UTC), Decimal("2"),
         False)]


def test_gpu_nodes_reconcile(landed):
    _, con = landed
    # AWS: two hourly rows of 1 Hrs, 10:00-12:00 = 7,200 s for 2 × 1.006; the pod finished
    # 11:00, so 11:00-12:00 = 3,600 s after exit.
    # Google: two rows of 3,600 seconds each, 10:00-12:00: 7,200 s for 2 × 2.933908, 3,600 s
    # after exit.
    # Azure: one daily row of 2 Hours = 7,200 s for 1.052; the day is coarser than the hours, so
    # the 2 hours are placed from the node's registration (docs/design.md "Where in the hour":
    # "else at its node's registration"), 09:58-11:58: 58 min = 3,480 s after the 11:00 exit.
    assert con.execute("select resource_id, day::varchar, billed_seconds, billed_after_exit_seconds, "
                       "billed_amount from marts.resource_day order by 1").fetchall() == [
        ("gpu-node-1", "2025-04-02", Decimal("7200.000"), Decimal("3600.000"), Decimal("5.867816")),
        ("gpu-vm-1", "2025-04-02", Decimal("7200.000"), Decimal("3480.000"), Decimal("1.052")),
        ("i-0abc123def4567890", "2025-04-02", Decimal("7200.000"), Decimal("3600.000"),
         Decimal("2.012"))]
    assert con.execute("select resource_id, code from marts.findings order by 1").fetchall() == [
        ("gpu-node-1", "BILLED_AFTER_EXIT"), ("gpu-vm-1", "BILLED_AFTER_EXIT"),
        ("i-0abc123def4567890", "BILLED_AFTER_EXIT")]


NUMBERS = {"BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ConsumedQuantity",
           "PricingQuantity", "ContractedUnitPrice", "ListUnitPrice"}
STAMPS = {"BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"}


def _parquet(name, path, number, stamp, tags):
    """A reference CSV as Parquet, its costs and quantities of type `number`, its periods of
    type `stamp`, its Tags of type `tags` (a map: each cell's JSON object as its pairs)."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(csv.DictReader((REF / name).open(newline="", encoding="utf-8")))
    cols = {}
    for c in rows[0]:
        vals = [r[c] or None for r in rows]
        if c in NUMBERS:
            conv = float if pa.types.is_floating(number) else Decimal
            cols[c] = pa.array([None if v is None else conv(v) for v in vals], number)
        elif c in STAMPS:
            cols[c] = pa.array([parse_focus_datetime(v) for v in vals], stamp)
        elif c == "Tags" and pa.types.is_map(tags):
            cols[c] = pa.array([list(json.loads(v).items()) for v in vals], tags)
        else:
            cols[c] = pa.array(vals, pa.string())
    pq.write_table(pa.table(cols), path)


def _aws_parquet(path):
    """aws_focus12.csv with the types AWS documents for the FOCUS 1.2 table: costs and
    quantities `double`, periods `timestamp_milliseconds`, and Tags a map of strings."""
    import pyarrow as pa

    _parquet("aws_focus12.csv", path, pa.float64(), pa.timestamp("ms", tz="UTC"),
             pa.map_(pa.string(), pa.string()))


def test_aws_parquet_with_its_documented_types(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    _aws_parquet(folder / "part-0.snappy.parquet")
    _nodes(folder, AWS_NODE)
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select count(*) from raw.quarantine").fetchone()[0] == 0
    docs = [json.loads(d) for (d,) in con.execute(
        "select doc from raw.focus_rows order by record_no").fetchall()]
    assert len(docs) == 4
    # a Parquet map lands as the JSON object the CSV writes, not as Python's repr of pairs
    assert json.loads(docs[0]["Tags"]) == {"user:team": "ml", "aws:eks:cluster-name": "gpu"}
    assert json.loads(docs[2]["Tags"]) == {}
    # timestamp[ms, UTC] 10:00 is 10:00 UTC; the double 6.123e-07 is 0.0000006123 exactly
    assert con.execute("select min(charge_period_start) from marts.focus_charges "
                       "where resource_id = 'i-0abc123def4567890'").fetchone()[0] == datetime(
        2025, 4, 2, 10, tzinfo=UTC)
    assert con.execute("select billed_cost from marts.focus_charges "
                       "where service_name = 'AmazonCloudWatch'").fetchone()[0] == Decimal("0.0000006123")
    assert con.execute("select sum(billed_cost) from marts.focus_charges").fetchone()[0] == (
        Decimal("1.006") * 2 + Decimal("0.0000006123") + Decimal("0.30"))
    # the same reconciliation as the CSV's
    assert con.execute("select resource_id, billed_seconds, billed_after_exit_seconds, billed_amount "
                       "from marts.resource_day").fetchall() == [
        ("i-0abc123def4567890", Decimal("7200.000"), Decimal("3600.000"), Decimal("2.012"))]


@pytest.mark.parametrize(("text", "instant"), [
    ("2025-04-02 10:00:00 UTC", datetime(2025, 4, 2, 10, tzinfo=UTC)),
    ("2025-04-02 10:00:00.250 UTC", datetime(2025, 4, 2, 10, 0, 0, 250000, tzinfo=UTC)),
    ("2025-04-02T10:00:00.000Z", datetime(2025, 4, 2, 10, tzinfo=UTC)),
    ("2025-04-02T10:00:00.0000000Z", datetime(2025, 4, 2, 10, tzinfo=UTC)),
    ("2025-04-02T10:00Z", datetime(2025, 4, 2, 10, tzinfo=UTC)),
    # BigQuery's other suffixes: a zone name, or UTC with no time, are not FOCUS date/times
    ("2025-04-02 10:00:00 America/Los_Angeles", None),
    ("2025-04-02 UTC", None),
    ("2025-04-02 10:00:00 UTC+01:00", None),
])
def test_focus_datetimes(text, instant):
    got = parse_focus_datetime(text)
    assert got == instant and (got is None or got.utcoffset().total_seconds() == 0)


def test_a_time_in_another_zone_name_is_quarantined_with_its_reason(tmp_path):
    """BigQuery can write a TIMESTAMP with a zone name; that is no FOCUS date/time (FOCUS_Spec
    attributes/datetime_format.md: UTC, 'YYYY-MM-DDTHH:mm:ssZ'), so the row is quarantined,
    named, and the file's other rows land."""
    folder = tmp_path / "in"
    folder.mkdir()
    text = (REF / "gcp_focus_bq_extract.csv").read_text(encoding="utf-8")
    text = text.replace("2025-04-02 11:00:00 UTC,2025-04-02 12:00:00 UTC",
                        "2025-04-02 04:00:00 America/Los_Angeles,2025-04-02 12:00:00 UTC", 1)
    (folder / "gcp.csv").write_text(text, encoding="utf-8")
    res = run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select locator, reason from raw.quarantine").fetchall() == [
        ("line 3", "ChargePeriodStart is not a FOCUS date/time (ISO 8601 in UTC, "
                   "YYYY-MM-DDTHH:mm:ssZ): '2025-04-02 04:00:00 America/Los_Angeles'")]
    assert res.quarantined == 1
    assert con.execute("select count(*) from raw.focus_rows").fetchone()[0] == 2


def test_gcp_parquet_with_bigquery_types(tmp_path):
    """gcp_focus_bq_extract.csv as a BigQuery table exported to Parquet: NUMERIC costs (38 digits,
    9 after the point) as decimal(38, 9), TIMESTAMPs (microseconds) as timestamp[us, UTC]. The
    decimals land exactly and the node reconciles as from the CSV."""
    import pyarrow as pa

    folder = tmp_path / "in"
    folder.mkdir()
    _parquet("gcp_focus_bq_extract.csv", folder / "000000000000.parquet", pa.decimal128(38, 9),
             pa.timestamp("us", tz="UTC"), pa.string())
    _nodes(folder, GCP_NODE)
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    assert con.execute("select count(*) from raw.quarantine").fetchone()[0] == 0
    assert con.execute("select count(*) from raw.focus_rows").fetchone()[0] == 3
    # 0.000123 written as decimal(38, 9) (0.000123000), 2.75e-3 as 0.002750000
    assert con.execute("select consumed_quantity, billed_cost from marts.focus_charges "
                       "where resource_id = 'acme-ml-checkpoints'").fetchone() == (
        Decimal("0.00275"), Decimal("0.000123"))
    assert con.execute("select resource_id, billed_seconds, billed_after_exit_seconds, billed_amount "
                       "from marts.resource_day").fetchall() == [
        ("gpu-node-1", Decimal("7200.000"), Decimal("3600.000"), Decimal("5.867816"))]


def test_a_gpu_vm_metered_by_several_skus_counts_its_hours_once(tmp_path):
    """Google Cloud bills a GPU VM's hour per SKU: the GPU, the vCPUs (core-seconds: 12 vCPUs of
    an a2-highgpu-1g × 3,600 s = 43,200), the memory (GiB-seconds, not a duration). AWS splits
    one SKU's hour when a Savings Plan covers part of it (0.6 + 0.4 Hrs). Either way the node ran
    the hour once: its seconds are the largest SKU's, at most the hour; its money every row's."""
    folder = tmp_path / "in"
    folder.mkdir()
    text = (REF / "gcp_focus_bq_extract.csv").read_text(encoding="utf-8").splitlines()
    header, gpu_10 = text[0], text[1]
    cores = gpu_10.replace("Nvidia Tesla A100 GPU running in Americas", "A2 Instance Core running in Americas")
    cores = cores.replace(",2.933908,2.933908,2.933908,2.933908,3600,seconds,1,hour,",
                          ",0.379128,0.379128,0.379128,0.379128,43200,seconds,12,hour,")
    cores = cores.replace("039F-F0B4-1D3A", "B2E1-6F5C-0A11")
    assert cores != gpu_10 and cores.count("43200") == 1
    (folder / "gcp.csv").write_text("\n".join([header, gpu_10, cores]) + "\n", encoding="utf-8")
    _nodes(folder, GCP_NODE)
    run(folder, tmp_path / "db.duckdb")
    con = connect(tmp_path / "db.duckdb", read_only=True)
    try:
        assert con.execute("select resource_id, billed_seconds, billed_amount from marts.resource_day"
                           ).fetchall() == [("gpu-node-1", Decimal("3600.000"), Decimal("3.313036"))]
    finally:
        con.close()
