"""Property: whatever the lifecycles and bills, the categories of every resource-day add up
exactly to its billed seconds, and the allocation adds up to the bill to the cent."""

import tempfile
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from engine.build import D0, World
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recon.db import connect
from recon.pipeline import run

COMPUTE = ("startup", "busy", "idle_gap", "tail", "unobserved")

pod_spec = st.tuples(
    st.integers(0, 47 * 60),      # scheduled, minutes after midnight (2 days)
    st.integers(0, 30),           # minutes until ready (0 = never ready)
    st.integers(1, 300),          # minutes running after ready
    st.integers(1, 2),            # gpus
)
node_spec = st.tuples(
    st.integers(0, 46 * 60),      # compute start (minutes)
    st.integers(1, 20 * 60),      # compute length (minutes)
    st.integers(0, 59),           # seconds offset: partial hours
    st.booleans(),                # mapped to a Kubernetes node?
    st.lists(pod_spec, max_size=4),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(node_spec, min_size=1, max_size=3))
def test_random_worlds_partition_and_allocate_exactly(nodes):
    with tempfile.TemporaryDirectory(prefix="prop-") as tmp:
        root = Path(tmp)
        w = World(root)
        for i, (start_m, length_m, off_s, mapped, pods) in enumerate(nodes):
            start = D0 + timedelta(minutes=start_m, seconds=off_s)
            stop = start + timedelta(minutes=length_m)
            pid = f"pod{i}"
            if mapped:
                w.node(f"n{i}", pid, start + timedelta(seconds=70), start + timedelta(seconds=95), gpus=2)
            for k, (s_m, r_m, run_m, gpus) in enumerate(pods):
                sched = D0 + timedelta(minutes=s_m)
                ready = sched + timedelta(minutes=r_m) if r_m else None
                fin = (ready or sched) + timedelta(minutes=run_m)
                w.pod(f"job-{i}-{k}", f"n{i}", sched, ready, fin, gpus=gpus, team=f"t{k % 2}")
            w.compute(pid, start, stop, Decimal("1.37"))
        d = w.write()
        run(d, root / "db.duckdb")
        con = connect(root / "db.duckdb", read_only=True)
        try:
            bad = con.execute(f"""
                select d.resource_id, d.day, d.billed_seconds, coalesce(sum(s.seconds), 0)
                from marts.resource_day d
                left join marts.billed_segments s
                  on s.resource_id = d.resource_id and s.day = d.day and s.category in {COMPUTE}
                group by all having coalesce(sum(s.seconds), 0) <> d.billed_seconds""").fetchall()
            assert bad == []
            ties = con.execute("""
                select b.day, b.billed, coalesce(a.allocated, 0)
                from (select day, sum(billed_amount) as billed from marts.resource_day group by day) b
                left join (select day, sum(amount) as allocated from marts.allocation group by day) a
                  using (day)""").fetchall()
            for day, billed, allocated in ties:
                assert billed == allocated, (day, billed, allocated)  # exactly (decimal shares)
            neg = con.execute("select count(*) from marts.allocation where seconds < 0 or amount < -0.000001"
                              ).fetchone()[0]
            assert neg == 0
        finally:
            con.close()
