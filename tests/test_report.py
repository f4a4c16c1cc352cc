"""`recon report` (HTML rendered in a real headless Chromium) and `recon schema`."""

import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from datetime import date
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from recon.cli import app
from recon.outputs.report import render, report_data, write_report
from recon.schema import MARTS

CHROMIUM = Path("/usr/bin/chromium")
DAY = "2026-06-02"
CENT = Decimal("0.01")


class Metrics(HTMLParser):
    """Collect the text of every element that has a data-metric attribute."""

    def __init__(self):
        super().__init__()
        self.stack, self.values = [], []

    def handle_starttag(self, tag, attrs):
        self.stack.append(dict(attrs).get("data-metric"))
        if tag in ("meta", "link", "br", "img", "input"):
            self.stack.pop()

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1]:
            self.values.append((self.stack[-1], data.strip()))


def metrics(html_text: str) -> list[tuple[str, str]]:
    p = Metrics()
    p.feed(html_text)
    return p.values


def c(v) -> str:
    return str(Decimal(v or 0).quantize(CENT))


def expected_metrics(con, day: str) -> dict:
    """The page's numbers, computed here straight from the marts (independently of report.py)."""
    d = date.fromisoformat(day)
    billed, expected = con.execute("select sum(billed_amount), sum(expected_amount) "
                                   "from marts.resource_day where day = ?", [d]).fetchone()
    cat = dict(con.execute("select category, sum(amount) from marts.billed_segments where day = ? "
                           "group by all", [d]).fetchall())
    nv = Decimal(0)
    for amount, lms, bms in con.execute(
            "select total_amount_usd, lingering_ms, bucket_ms from "
            "intermediate.int_storage__network_volume_buckets "
            "where cast(bucket_start as date) = ?", [d]).fetchall():
        nv += amount * int(lms) / int(bms)
    g = lambda *names: sum((cat.get(n, Decimal(0)) for n in names), Decimal(0))
    n, stake = con.execute("select count(*), sum(amount_at_stake) from marts.findings where day = ?",
                           [d]).fetchone()
    # money at stake that is not on the day's bill (written out here, not read from the code)
    outside = con.execute("select coalesce(sum(amount_at_stake), 0) from marts.findings where "
                          "day = ? and code in ('SAVINGS_PLAN_UNUSED', 'ACTIVITY_WITHOUT_BILLING', "
                          "'BALANCE_BELOW_ONE_HOUR', 'GPU_SHARED_OVERSUBSCRIBED')", [d]).fetchone()[0]
    week = con.execute("select sum(billed_amount) from marts.resource_day where day between ? and ?",
                       [date.fromordinal(d.toordinal() - 6), d]).fetchone()[0]
    prev = con.execute("select coalesce(sum(billed_amount), 0) from marts.resource_day "
                       "where day between ? and ?", [date.fromordinal(d.toordinal() - 13),
                                                     date.fromordinal(d.toordinal() - 7)]).fetchone()[0]
    daily = con.execute("select day, sum(billed_amount) from marts.resource_day group by day "
                        "order by day").fetchall()
    top = [a for (a,) in con.execute("select amount_at_stake from marts.findings where day = ? "
                                     "order by amount_at_stake desc, finding_id limit 10", [d]).fetchall()]
    want = {
        "day": day, "billed": c(billed), "expected": c(expected), "findings": str(n),
        "at_stake": c(stake), "at_stake_outside_bill": c(outside), "work": c(g("busy", "execution")), "startup": c(g("startup", "cold_start")),
        "tail": c(g("tail")), "storage_unused": c(g("storage_lingering") + nv),
        "serverless_idle": c(g("idle", "rounding")), "idle_gap": c(g("idle_gap")),
        "unobserved": c(g("unobserved")),
        "storage_in_use": c(g("storage_running", "network_volume") - nv),
        "week_billed": c(week), "prev_week_billed": c(prev),
    }
    want.update({f"trend-{dd.isoformat()}": c(v) for dd, v in daily})
    # the page says when its table holds only the largest findings, and what the rest hold
    rest = con.execute("select coalesce(sum(amount_at_stake), 0) from (select amount_at_stake "
                       "from marts.findings where day = ? order by amount_at_stake desc, "
                       "finding_id offset 10)", [d]).fetchone()[0]
    want["findings-shown"] = (f"The 10 largest of {n} findings; the other {n - 10} hold "
                              f"${c(rest)} (marts.findings; `recon export --day` writes them all)."
                              if n > 10 else f"All {n} findings of the day.")
    return {"single": want, "finding-amount": [c(a) for a in top]}


def check_page(values, want):
    got = {}
    for k, v in values:
        if k != "finding-amount":
            assert k not in got, f"metric {k} appears twice"
            got[k] = v
    for k, v in want["single"].items():
        assert got.get(k) == v, f"data-metric={k}: page {got.get(k)!r}, marts {v!r}"
    assert [v for k, v in values if k == "finding-amount"] == want["finding-amount"]


@pytest.fixture(scope="module")
def page(sim_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / f"report_{DAY}.html"
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    write_report(con, DAY, out, db_label="test")
    want = expected_metrics(con, DAY)
    con.close()
    return {"path": out, "html": out.read_text(encoding="utf-8"), "want": want}


def test_page_numbers_equal_the_marts(page):
    check_page(metrics(page["html"]), page["want"])
    # the split adds up to the bill (to the cent, allowing one cent per part for rounding)
    parts = [Decimal(page["want"]["single"][k]) for k in (
        "work", "startup", "tail", "storage_unused", "serverless_idle", "idle_gap", "unobserved",
        "storage_in_use")]
    assert abs(sum(parts) - Decimal(page["want"]["single"]["billed"])) <= Decimal("0.08")


def test_idle_between_jobs_and_unobserved_are_two_lines(page, sim_run):
    """Nodes waiting between jobs and billed compute no workload explains are two causes: each
    has its line, bar part and colour, and the two hold what one merged line held."""
    h, w = page["html"], page["want"]["single"]
    assert "Idle gap + unobserved" not in h
    rows = {label: colour for colour, label in re.findall(
        r'<tr><td><span class="sw" style="background:(#[0-9a-f]{6})"></span>([^<]+)</td>', h)}
    assert rows["Idle: node up, no task running"] == "#9e9e9e"
    assert rows["Unobserved: billed, no workload seen"] == "#6d4c41"
    assert len(set(rows.values())) == len(rows)  # every line its own colour
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    try:
        merged = con.execute("select sum(amount) from marts.billed_segments where day = ? and "
                             "category in ('idle_gap', 'unobserved')", [date.fromisoformat(DAY)]
                             ).fetchone()[0]
    finally:
        con.close()
    gap, unobserved = Decimal(w["idle_gap"]), Decimal(w["unobserved"])
    assert gap > 0 and unobserved > 0
    # each is rounded to the cent on its own
    assert abs(gap + unobserved - merged) <= Decimal("0.01")
    for title in ("Idle: node up, no task running", "Unobserved: billed, no workload seen"):
        assert f"<title>{title}: $" in h
    # the day has money at stake outside its bill (the simulated savings plan covers nothing on
    # it), and the page says how much of the total that is
    w = page["want"]["single"]
    assert Decimal(0) < Decimal(w["at_stake_outside_bill"]) < Decimal(w["at_stake"])


def test_page_is_self_contained(page):
    h = page["html"]
    assert "Content-Security-Policy" in h and "default-src 'none'" in h
    assert not re.search(r"<script|<link|<img|\bsrc=|@import|url\(", h, re.IGNORECASE)
    assert h.count('data-chart="timeline"') == 1 and h.count('data-chart="trend"') == 1
    # one timeline row per billed instance of the day: 8, the pod only a saved v1 bill knows,
    # and the simulated ScaledObjects' two replica nodes each (recon.simulate.keda and
    # recon.simulate.hpa_slow); markers and lingering storage drawn
    assert len(re.findall(r'<g data-resource="', h)) == 8 + 1 + 2 + 2
    assert 'data-marker="ring"' in h and 'data-marker="square"' in h
    assert 'data-category="storage_lingering"' in h and 'data-finding="BILLED_AFTER_EXIT"' in h


def test_seconds_read_as_seconds(page):
    """The findings table shows 86,400 for a whole day (not 86400.000), fractions
    without trailing zeros, and thousands separated, as the split table does."""
    from recon.outputs.report import seconds_text

    assert [seconds_text(v) for v in (Decimal("86400.000"), Decimal("688.580"), Decimal("0.000"), None)] \
        == ["86,400", "688.58", "0", ""]
    cells = re.findall(r'<tr data-finding-id="[^"]+">(?:<td[^>]*>.*?</td>){4}<td class="num">([^<]*)</td>',
                       page["html"])
    assert cells and not any(re.search(r"\.\d*0$", c) for c in cells), cells
    assert "86,400" in cells


def test_text_from_the_data_is_escaped(sim_run):
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    data = report_data(con, date.fromisoformat(DAY))
    con.close()
    f = list(data["findings"][0])
    f[8] = '<script>alert("x")</script> & <img src=x>'
    data["findings"][0] = tuple(f)
    h = render(data)
    assert "<script>alert" not in h and "<img src=x>" not in h
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x&gt;" in h


def _apt_install_chromium() -> str:
    """Install Debian's chromium package where the test run may: as root with apt-get (this
    project's machines and CI start without a browser). Returns what went wrong, or ''."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "not root with apt-get"
    print("\ninstalling Debian's chromium for the report tests (once) ...", file=sys.stderr,
          flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
        if r.returncode != 0:
            return f"`{' '.join(cmd)}` exited {r.returncode}: {(r.stderr or r.stdout)[-500:]}"
    return ""


def _ensure_chromium() -> None:
    if not CHROMIUM.exists():
        why = _apt_install_chromium() or "no binary after the install"
        if not CHROMIUM.exists():
            pytest.fail(f"{CHROMIUM} is missing and could not be installed ({why}): install it "
                        "(apt-get install -y chromium); the report is checked in a real "
                        "headless browser")


def _chromium(args, tmp_path):
    _ensure_chromium()
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
           "--window-size=1400,2000", *args]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)


def png_pixels(data: bytes):
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) into rows of bytes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, cc = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - cc
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else cc)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def test_rendered_in_chromium_the_numbers_equal_the_marts(page, tmp_path):
    r = _chromium(["--dump-dom", page["path"].as_uri()], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'data-metric="billed"' in r.stdout
    check_page(metrics(r.stdout), page["want"])


def test_rendered_in_chromium_the_screenshot_shows_the_charts(page, tmp_path):
    shot = tmp_path / "page.png"
    r = _chromium([f"--screenshot={shot}", page["path"].as_uri()], tmp_path)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    width, height, bpp, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 2000)
    colours = set()
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 2):
            colours.add(row[x:x + 3])
    assert len(colours) > 50, f"page looks blank: {len(colours)} colours"
    for name, rgb in (("busy", (0x2E, 0x7D, 0x32)), ("tail", (0xD8, 0x43, 0x15)),
                      ("lingering storage", (0x7B, 0x1F, 0xA2)), ("idle", (0x9E, 0x9E, 0x9E))):
        assert bytes(rgb) in colours, f"no {name} colour on the screenshot"


def test_cli_report(sim_run, tmp_path):
    out = tmp_path / "r.html"
    r = CliRunner().invoke(app, ["report", "--day", DAY, "--db", str(sim_run["db"]), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert 'data-metric="billed"' in out.read_text()
    r = CliRunner().invoke(app, ["report", "--day", "2026/06/02", "--db", str(sim_run["db"])])
    assert r.exit_code == 2


def test_every_mart_column_is_described_and_vice_versa(marts):
    cols = {}
    for t, col in marts.execute("select table_name, column_name from information_schema.columns "
                                "where table_schema = 'marts' order by table_name, ordinal_position"
                                ).fetchall():
        cols.setdefault(t, []).append(col)
    if "validation_results" not in cols:  # written by the validation step, not by `recon run`
        import duckdb

        from recon.gate.run import RESULTS_DDL
        mem = duckdb.connect()
        mem.execute("create schema marts")
        mem.execute(RESULTS_DDL)
        cols["validation_results"] = [r[0] for r in mem.execute(
            "select column_name from information_schema.columns where table_name = "
            "'validation_results' order by ordinal_position").fetchall()]
    assert sorted(cols) == sorted(MARTS), "marts tables and recon/schema.py differ"
    for t, columns in cols.items():
        assert columns == list(MARTS[t]["columns"]), f"marts.{t}: columns and descriptions differ"
        assert all(MARTS[t]["columns"][c].strip() for c in columns)


def test_cli_schema_lists_every_mart_column():
    r = CliRunner().invoke(app, ["schema", "--markdown"])
    assert r.exit_code == 0
    for t, spec in MARTS.items():
        assert f"### `marts.{t}`" in r.output
        for col in spec["columns"]:
            assert f"| `{col}` |" in r.output


def test_chromium_is_where_the_tests_expect_it():
    _ensure_chromium()
    assert shutil.which("chromium") == str(CHROMIUM) or CHROMIUM.exists()


def test_money_never_shows_minus_zero():
    from decimal import Decimal

    from recon.outputs.report import money

    assert money(Decimal("-0.0000001")) == "0.00"  # a residue below a cent has no sign
    assert money(Decimal("-1.235")) == "-1.24" and money(Decimal("2.345")) == "2.34"


def test_waste_by_team_is_the_days_marts_waste_by_team(page, sim_run):
    """The "Waste by team" table: one row per team of the day's marts.waste, its money to the
    cent, the unattributed waste a row of its own, and the total the note states."""
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    try:
        want = dict(con.execute("select team, sum(amount) from marts.waste where day = ? "
                                "group by team", [DAY]).fetchall())
    finally:
        con.close()
    shown = dict(re.findall(r'data-waste-team="([^"]*)">([\d.,-]+)<', page["html"]))
    assert set(shown) == set(want) and "__unattributed__" in shown
    for team, amount in want.items():
        assert Decimal(shown[team]) == amount.quantize(Decimal("0.01")), team
    total = re.search(r'data-metric="waste_total">([\d.,]+)<', page["html"]).group(1)
    assert Decimal(total) == sum(want.values()).quantize(Decimal("0.01"))
