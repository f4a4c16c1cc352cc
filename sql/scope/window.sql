-- grain: one row: the stretch of time a windowed run (--from/--to) reads, [lo, hi): its days.
-- No padding: what reaches across the window's edges is widened by entity, not by time (an
-- instance's whole compute island, a pod's whole life, a serverless worker's every job; see
-- resource_bounds.sql, stg_k8s__pods.sql, stg_runpod__jobs.sql). Day-by-day runs equal one full
-- run on the 30-day 100-node simulation (every mart, every day) and in tests/test_incremental.py.
with final as (
    select cfg('day_from')::date::timestamptz as lo,
           cfg('day_to')::date::timestamptz + interval 1 day as hi
)

select * from final
