"""`recon report`: one self-contained HTML page for a UTC day, read from the marts.

Inline CSS and inline SVG only (a Content-Security-Policy forbids any fetch), so the page opens
offline and can be mailed. Every number is a Decimal from the warehouse rounded half-even to
cents; the key ones sit in elements with a `data-metric` attribute (`billed`, `expected`,
`findings`, `at_stake`, one per part of the bill in :data:`GROUPS`, `week_billed`,
`prev_week_billed`, `trend-<day>`, and `finding-amount` per finding row) so tests can read them.
"""

from __future__ import annotations

import html
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from string import Template

from ..build.guards import require_built
from ..pipeline import OUTSIDE_BILL_CODES
from .exports import atomic_write, network_volume_lingering, parse_day
from .present import GROUPS, money, seconds_text

TEMPLATE = Path(__file__).with_name("report_template.html")
TOP_FINDINGS = 10
MAX_TIMELINE_ROWS = 300

SEGMENT_COLOURS = {"busy": "#2e7d32", "startup": "#f9a825", "idle_gap": "#9e9e9e",
                   "tail": "#d84315", "unobserved": "#6d4c41"}
LINGER_COLOUR, WORKLOAD_COLOUR, FINDING_COLOUR = "#7b1fa2", "#1565c0", "#cf222e"


def esc(v) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def _utc(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


# ---------------------------------------------------------------- data

def report_data(con, day: date) -> dict:
    """Everything the page shows, as Decimals and datetimes straight from the warehouse."""
    require_built(con, day, day, "the report")
    billed, expected = con.execute(
        "select coalesce(sum(billed_amount), 0), coalesce(sum(expected_amount), 0) "
        "from marts.resource_day where day = ?", [day]).fetchone()
    cats = {c: (s, a) for c, s, a in con.execute(
        "select category, sum(seconds), sum(amount) from marts.billed_segments where day = ? "
        "group by all", [day]).fetchall()}
    nv = network_volume_lingering(con, day, day).values()
    nv_secs = sum((v[0] for v in nv), Decimal(0))
    nv_amt = sum((v[1] for v in nv), Decimal(0))
    groups = {}
    for key, (_, _, names) in GROUPS.items():
        s = sum((cats.get(c, (0, 0))[0] for c in names), Decimal(0))
        a = sum((cats.get(c, (0, 0))[1] for c in names), Decimal(0))
        groups[key] = [s, a]
    nv_s, nv_a = cats.get("network_volume", (Decimal(0), Decimal(0)))
    groups["storage_unused"][0] += nv_secs
    groups["storage_unused"][1] += nv_amt
    groups["storage_in_use"][0] += nv_s - nv_secs
    groups["storage_in_use"][1] += nv_a - nv_amt
    groups["unsplit"][1] = billed - sum((a for _, a in cats.values()), Decimal(0))

    findings = con.execute(
        "select finding_id, code, severity, resource_id, window_start, window_end, seconds, "
        "amount_at_stake, message from marts.findings where day = ? "
        "order by amount_at_stake desc, finding_id", [day]).fetchall()
    d0 = day - timedelta(days=13)
    daily = dict(con.execute(
        "select day, sum(billed_amount) from marts.resource_day where day between ? and ? "
        "group by day", [d0, day]).fetchall())
    trend = [(d0 + timedelta(days=i), daily.get(d0 + timedelta(days=i), Decimal(0)))
             for i in range(14)]
    return {"day": day, "billed": billed, "expected": expected, "groups": groups,
            "findings": findings, "trend": trend, "instances": _instances(con, day),
            "waste": _waste_by_team(con, day), "invoices": _invoices(con, day)}


def _invoices(con, day: date) -> list[tuple]:
    """The tie-out (marts.invoice_tieout) of every invoice whose billing period holds the day."""
    try:
        return con.execute(
            "select invoice_id, cost_center, service, invoice_amount, reconciled_amount, "
            "unexplained_amount, status, explanation from marts.invoice_tieout "
            "where period_start <= ? and period_end > ? order by invoice_id, cost_center, service",
            [_utc(day), _utc(day)]).fetchall()
    except Exception:  # noqa: BLE001 - a warehouse built before invoices were an input has none
        return []


def _invoice_rows(data) -> str:
    rows = []
    for iid, cc, svc, inv, rec, unexplained, status, why in data["invoices"]:
        rows.append(f'<tr data-invoice="{esc(iid)}"><td>{esc(iid)}</td><td>{esc(cc)}</td>'
                    f'<td>{esc(svc)}</td><td class="num">${money(inv)}</td>'
                    f'<td class="num">${money(rec)}</td>'
                    f'<td class="num">$<span data-metric="invoice-unexplained">{money(unexplained)}</span></td>'
                    f'<td>{esc(status)}</td><td class="msg">{esc(why)}</td></tr>')
    return "\n".join(rows) or ('<tr><td colspan="8">No invoice covers this day (invoice files: '
                               'docs/reference.md, "Invoice files").</td></tr>')


def _waste_by_team(con, day: date) -> list[tuple]:
    """(team, seconds, USD, its largest cause) of the day's marts.waste, most money first;
    the unattributed waste is a row of its own."""
    return con.execute(
        "select team, sum(seconds), sum(amount), arg_max(cause, amount) from ("
        "select team, cause, sum(seconds) as seconds, sum(amount) as amount from marts.waste "
        "where day = ? group by all) group by team order by 3 desc, team", [day]).fetchall()


def _instances(con, day: date) -> list[dict]:
    lo, hi = _utc(day), _utc(day + timedelta(days=1))
    res = con.execute(
        "select resource_id, billed_amount, task_finished_at, compute_stopped_at "
        "from marts.resource_day where day = ? and resource_kind = 'instance' "
        "order by billed_amount desc, resource_id limit ?", [day, MAX_TIMELINE_ROWS]).fetchall()
    out = {r[0]: {"id": r[0], "billed": r[1], "finished": r[2], "stopped": r[3], "segments": [],
                  "workloads": [], "lingering": [], "findings": []} for r in res}
    ids = list(out)
    if not ids:
        return []
    for rid, s, e, cat in con.execute(
            "select resource_id, seg_start, seg_end, category "
            "from marts.instance_segments where day = ? "
            "and list_contains(?, resource_id) order by resource_id, seg_start", [day, ids]).fetchall():
        segs = out[rid]["segments"]
        if segs and segs[-1][2] == cat and segs[-1][1] == s:
            segs[-1][1] = e
        else:
            segs.append([s, e, cat])
    for rid, name, s, e in con.execute(
            "select resource_id, namespace || '/' || pod_name, scheduled_at, window_end_at "
            "from marts.workloads where scheduled_at < ? and window_end_at > ? "
            "and list_contains(?, resource_id) order by scheduled_at", [hi, lo, ids]).fetchall():
        out[rid]["workloads"].append((name, max(s, lo), min(e, hi)))
    sessions = defaultdict(list)
    for rid, s, e in con.execute(
            "select resource_id, start_at, end_at from marts.compute_sessions "
            "where start_at < ? and end_at > ? and list_contains(?, resource_id)",
            [hi, lo, ids]).fetchall():
        sessions[rid].append((s, e))
    for rid, bs, be, lms in con.execute(
            "select pod_id, bucket_start, bucket_end, storage_lingering_ms "
            "from marts.pod_buckets where bucket_start >= ? and bucket_start < ? "
            "and storage_lingering_ms > 0 and list_contains(?, pod_id) order by bucket_start",
            [lo, hi, ids]).fetchall():
        out[rid]["lingering"] += _place_lingering(bs, be, int(lms), sessions[rid])
    for rid, code, s, e, amt, msg in con.execute(
            "select resource_id, code, window_start, window_end, amount_at_stake, message "
            "from marts.findings where day = ? and list_contains(?, resource_id)",
            [day, ids]).fetchall():
        out[rid]["findings"].append((code, s, e, amt, msg))
    return [out[i] for i in ids]


def _place_lingering(bs, be, ms: int, sessions) -> list[tuple]:
    """Lingering disk time of an hour bucket, drawn in the parts of the hour with no compute."""
    free, t = [], bs
    for s, e in sorted(sessions):
        if e <= t or s >= be:
            continue
        if s > t:
            free.append((t, s))
        t = max(t, e)
    if t < be:
        free.append((t, be))
    out, left = [], timedelta(milliseconds=ms)
    for s, e in free:
        take = min(e - s, left)
        if take > timedelta(0):
            out.append((s, s + take))
            left -= take
    return out


# ---------------------------------------------------------------- rendering

def _bar(data) -> str:
    total = sum((max(a, Decimal(0)) for _, a in data["groups"].values()), Decimal(0))
    w, x, parts = 1000.0, 0.0, []
    for key, (label, colour, _) in GROUPS.items():
        a = data["groups"][key][1]
        if a <= 0 or not total:
            continue
        width = float(a / total) * w
        parts.append(f'<rect x="{x:.2f}" y="0" width="{width:.2f}" height="34" fill="{colour}">'
                     f'<title>{esc(label)}: ${money(a)}</title></rect>')
        x += width
    return (f'<svg width="100%" height="34" viewBox="0 0 {w:.0f} 34" preserveAspectRatio="none" role="img" '
            f'aria-label="stacked bar of the bill" data-chart="split">{"".join(parts)}</svg>')


def _split_rows(data) -> str:
    rows, billed = [], data["billed"]
    for key, (label, colour, cats) in GROUPS.items():
        s, a = data["groups"][key]
        if key == "unsplit" and money(a) == "0.00":
            continue
        share = f"{(a / billed * 100).quantize(Decimal('0.1')) + 0} %" if billed else ""
        rows.append(f'<tr><td><span class="sw" style="background:{colour}"></span>{esc(label)}</td>'
                    f'<td>{esc(", ".join(cats))}</td><td class="num">{s:,.0f}</td>'
                    f'<td class="num">$<span data-metric="{key}">{money(a)}</span></td>'
                    f'<td class="num">{share}</td></tr>')
    return "\n".join(rows)


def _waste_rows(data) -> str:
    """One row per team: its waste, its share of the day's waste and a bar of that share."""
    total = sum((a for _, _, a, _ in data["waste"]), Decimal(0))
    rows = []
    for team, secs, amount, cause in data["waste"]:
        share = amount / total if total else Decimal(0)
        width = max(float(share) * 100, 0.0)
        colour = "#9e9e9e" if team == "__unattributed__" else "#1565c0"
        rows.append(f'<tr><td>{esc(team)}</td><td>{esc(cause)}</td>'
                    f'<td class="num">{secs:,.0f}</td>'
                    f'<td class="num">$<span data-waste-team="{esc(team)}">{money(amount)}</span></td>'
                    f'<td class="num">{(share * 100).quantize(Decimal("0.1")) + 0} %</td>'
                    f'<td style="width:30%"><div role="img" aria-label="share of waste" '
                    f'style="height:10px;width:{width:.2f}%;background:{colour}"></div></td>'
                    f'</tr>')
    return "\n".join(rows) or '<tr><td colspan="6">No waste on this day.</td></tr>'


def _clock(t: datetime, day: date) -> str:
    """HH:MM:SS within the day, 24:00:00 for the next midnight, else the full UTC time."""
    if t == _utc(day + timedelta(days=1)):
        return "24:00:00"
    return f"{t:%H:%M:%S}" if t.date() == day else f"{t:%Y-%m-%d %H:%M:%S}"


def _finding_rows(data) -> str:
    rows = []
    for fid, code, sev, rid, ws, we, secs, amt, msg in data["findings"][:TOP_FINDINGS]:
        win = f"{_clock(ws, data['day'])} – {_clock(we, data['day'])}" if ws and we else ""
        rows.append(f'<tr data-finding-id="{esc(fid)}"><td>{esc(code)}</td>'
                    f'<td class="sev-{esc(sev)}">{esc(sev)}</td><td>{esc(rid)}</td><td>{win}</td>'
                    f'<td class="num">{seconds_text(secs)}</td>'
                    f'<td class="num">$<span data-metric="finding-amount">{money(amt)}</span></td>'
                    f'<td class="msg">{esc(msg)}</td></tr>')
    return "\n".join(rows) or '<tr><td colspan="7">No findings on this day.</td></tr>'


def _legend() -> str:
    items = [(c, k.replace("_", " ")) for k, c in SEGMENT_COLOURS.items()]
    items += [(LINGER_COLOUR, "lingering storage"), (WORKLOAD_COLOUR, "workload window"),
              (FINDING_COLOUR, "finding")]
    return '<p class="note">' + " ".join(
        f'<span class="sw" style="background:{c}"></span>{esc(n)} &nbsp;' for c, n in items) + "</p>"


def _timeline(data) -> str:
    inst, day0 = data["instances"], _utc(data["day"])
    if not inst:
        return '<p class="note">No instance billed on this day.</p>'
    left, width, row_h, top = 170, 1100, 50, 22
    height = top + row_h * len(inst) + 6

    def x(t):
        return left + max(0.0, min(1.0, (t - day0).total_seconds() / 86400)) * width

    def rect(t0, t1, y, h, colour, title, extra=""):
        return (f'<rect x="{x(t0):.2f}" y="{y}" width="{max(x(t1) - x(t0), 0.8):.2f}" height="{h}" '
                f'fill="{colour}"{extra}><title>{esc(title)}</title></rect>')

    out = [(f'<svg width="{left + width + 24}" height="{height}" viewBox="0 0 {left + width + 24} '
            f'{height}" role="img" aria-label="instance timeline" data-chart="timeline">')]
    for h in range(25):
        hx = left + width * h / 24
        out.append(f'<line x1="{hx:.1f}" y1="{top - 4}" x2="{hx:.1f}" y2="{height - 4}" '
                   f'stroke="#eaeef2"/>')
        if h % 3 == 0:
            out.append(f'<text x="{hx:.1f}" y="12" text-anchor="middle">{h:02d}:00</text>')
    for i, r in enumerate(inst):
        y = top + i * row_h
        out.append(f'<g data-resource="{esc(r["id"])}"><text x="4" y="{y + 24}">{esc(r["id"])}</text>'
                   f'<text x="4" y="{y + 38}" fill="#57606a">${money(r["billed"])}</text>')
        for name, s, e in r["workloads"]:
            out.append(rect(s, e, y + 4, 4, WORKLOAD_COLOUR, f"{name} {s:%H:%M:%S}–{e:%H:%M:%S}"))
        for s, e, cat in r["segments"]:
            out.append(rect(s, e, y + 11, 16, SEGMENT_COLOURS.get(cat, "#000"),
                            f"{cat} {s:%H:%M:%S}–{e:%H:%M:%S}", f' data-category="{esc(cat)}"'))
        for s, e in r["lingering"]:
            out.append(rect(s, e, y + 30, 6, LINGER_COLOUR, f"lingering storage {s:%H:%M}–{e:%H:%M}",
                            ' data-category="storage_lingering"'))
        for code, s, e, amt, msg in r["findings"]:
            if s is None:
                continue
            fx = x(s)
            out.append(f'<g data-finding="{esc(code)}"><title>{esc(code)} ${money(amt)}: {esc(msg)}'
                       f'</title><path d="M{fx - 5:.1f},{y + 47} L{fx + 5:.1f},{y + 47} L{fx:.1f},'
                       f'{y + 39} Z" fill="{FINDING_COLOUR}"/>'
                       + rect(s, e or s, y + 38, 2, FINDING_COLOUR, code) + "</g>")
        for t, shape in ((r["finished"], "ring"), (r["stopped"], "square")):
            if t is None or not (day0 <= t <= day0 + timedelta(days=1)):
                continue
            tx, label = x(t), ("last task finished " if shape == "ring" else "compute stopped ")
            mark = (f'<circle cx="{tx:.1f}" cy="{y + 19}" r="5" fill="none" stroke="{WORKLOAD_COLOUR}" '
                    f'stroke-width="2.5"/>' if shape == "ring" else
                    f'<rect x="{tx - 4:.1f}" y="{y + 15}" width="8" height="8" fill="#000"/>')
            out.append(f'<g data-marker="{shape}"><title>{label}{t:%H:%M:%S}Z</title>'
                       f'<line x1="{tx:.1f}" y1="{y + 8}" x2="{tx:.1f}" y2="{y + 30}" stroke="#000" '
                       f'stroke-width="1"/>{mark}</g>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _trend(data) -> str:
    prev, this = data["trend"][:7], data["trend"][7:]
    top = max([a for _, a in data["trend"]] + [Decimal(1)])
    w, h, base = 1000, 230, 190
    out = [(f'<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
            f'aria-label="week over week" data-chart="trend">')]
    for i in range(7):
        gx = 40 + i * 135
        for j, (d, a) in enumerate((prev[i], this[i])):
            bh = float(a / top) * 160
            colour = "#afb8c1" if j == 0 else "#1f6feb"
            out.append(f'<rect x="{gx + j * 50}" y="{base - bh:.1f}" width="44" height="{bh:.1f}" '
                       f'fill="{colour}"><title>{d.isoformat()}: ${money(a)}</title></rect>'
                       f'<text x="{gx + j * 50 + 22}" y="{base - bh - 4:.1f}" text-anchor="middle" '
                       f'data-metric="trend-{d.isoformat()}">{money(a)}</text>')
        out.append(f'<text x="{gx + 47}" y="{base + 16}" text-anchor="middle">{this[i][0]:%a %d}</text>'
                   f'<text x="{gx + 47}" y="{base + 30}" text-anchor="middle" fill="#57606a">vs '
                   f'{prev[i][0]:%d %b}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _findings_note(data) -> str:
    """Says when the table holds only the largest findings (a day with 17 shows 10: the note
    says so, so that a reader does not take the 10 for all)."""
    n = len(data["findings"])
    if n == 0:
        return "No findings on this day."
    if n <= TOP_FINDINGS:
        return f"All {n} findings of the day."
    rest = sum((f[7] or Decimal(0) for f in data["findings"][TOP_FINDINGS:]), Decimal(0))
    return (f"The {TOP_FINDINGS} largest of {n} findings; the other {n - TOP_FINDINGS} hold "
            f"${money(rest)} (marts.findings; `recon export --day` writes them all).")


def render(data, db_label: str = "") -> str:
    prev = sum((a for _, a in data["trend"][:7]), Decimal(0))
    this = sum((a for _, a in data["trend"][7:]), Decimal(0))
    change = (f"{((this - prev) / prev * 100).quantize(Decimal('0.1'))} %" if prev
              else "no billing in the previous week")
    at_stake = sum((f[7] or Decimal(0) for f in data["findings"]), Decimal(0))
    outside = sum((f[7] or Decimal(0) for f in data["findings"] if f[1] in OUTSIDE_BILL_CODES),
                  Decimal(0))
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        day=esc(data["day"].isoformat()), db=esc(db_label), billed=money(data["billed"]),
        expected=money(data["expected"]), findings=len(data["findings"]), at_stake=money(at_stake),
        at_stake_outside=money(outside), findings_note=esc(_findings_note(data)),
        bar=_bar(data), split_rows=_split_rows(data), finding_rows=_finding_rows(data),
        waste_rows=_waste_rows(data), invoice_rows=_invoice_rows(data), waste_total=money(sum(
            (a for _, _, a, _ in data["waste"]), Decimal(0))),
        legend=_legend(), timeline=_timeline(data), week_billed=money(this),
        prev_week_billed=money(prev), week_change=esc(change), trend=_trend(data))


def write_report(con, day: str, out: str | Path, db_label: str = "") -> Path:
    """Render the page for `day` (YYYY-MM-DD) and write it atomically to `out`."""
    d = parse_day(day)
    page = render(report_data(con, d), db_label).encode("utf-8")
    target = Path(out)
    return atomic_write(target, lambda f: f.write(page))
