-- The run summary, one row per day: the billed money and seconds of marts.billed_segments by
-- the metrics of recon.pipeline.SUMMARY_METRICS (each category in exactly one metric, so the
-- metrics after `billed` add up to it; tests/test_pipeline.py holds this file to that dict),
-- and the day's findings with their money at stake. `at_stake_outside_bill` is the part of it
-- that is not on the day's bill (recon.pipeline.OUTSIDE_BILL_CODES).
with segments as (
    select * from marts.billed_segments
),

findings as (
    select * from marts.findings
),

segment_days as (
    select
        day,
        coalesce(sum(amount), 0) as billed,
        -- billed seconds are compute seconds: storage seconds run alongside them
        coalesce(sum(seconds) filter (where category not in ('storage_running', 'storage_lingering', 'network_volume')), 0) as billed_seconds,
        coalesce(sum(amount) filter (where category in ('busy')), 0) as busy,
        coalesce(sum(seconds) filter (where category in ('busy')), 0) as busy_seconds,
        coalesce(sum(amount) filter (where category in ('execution')), 0) as serverless_execution,
        coalesce(sum(seconds) filter (where category in ('execution')), 0) as serverless_execution_seconds,
        coalesce(sum(amount) filter (where category in ('startup', 'cold_start')), 0) as startup,
        coalesce(sum(seconds) filter (where category in ('startup', 'cold_start')), 0) as startup_seconds,
        coalesce(sum(amount) filter (where category in ('tail')), 0) as tail,
        coalesce(sum(seconds) filter (where category in ('tail')), 0) as tail_seconds,
        coalesce(sum(amount) filter (where category in ('idle')), 0) as serverless_idle,
        coalesce(sum(seconds) filter (where category in ('idle')), 0) as serverless_idle_seconds,
        coalesce(sum(amount) filter (where category in ('rounding')), 0) as serverless_rounding,
        coalesce(sum(seconds) filter (where category in ('rounding')), 0) as serverless_rounding_seconds,
        coalesce(sum(amount) filter (where category in ('idle_gap')), 0) as idle_gap,
        coalesce(sum(seconds) filter (where category in ('idle_gap')), 0) as idle_gap_seconds,
        coalesce(sum(amount) filter (where category in ('unobserved')), 0) as unobserved,
        coalesce(sum(seconds) filter (where category in ('unobserved')), 0) as unobserved_seconds,
        coalesce(sum(amount) filter (where category in ('storage_running')), 0) as storage_running,
        coalesce(sum(seconds) filter (where category in ('storage_running')), 0) as storage_running_seconds,
        coalesce(sum(amount) filter (where category in ('storage_lingering')), 0) as lingering_storage,
        coalesce(sum(seconds) filter (where category in ('storage_lingering')), 0) as lingering_storage_seconds,
        coalesce(sum(amount) filter (where category in ('network_volume')), 0) as network_volume,
        coalesce(sum(seconds) filter (where category in ('network_volume')), 0) as network_volume_seconds
    from segments
    group by day
),

-- FOCUS charges carried through without a lifecycle (storage, networking, purchases, credits,
-- taxes: marts.focus_charges not reconciled): on the bill, in no segment
other_days as (
    select day, sum(billed_cost) as other_charges
    from marts.focus_charges
    where not reconciled
    group by day
),

finding_days as (
    select
        day,
        count(*) as findings,
        sum(amount_at_stake) as at_stake,
        sum(amount_at_stake) filter (where code in ('SAVINGS_PLAN_UNUSED', 'ACTIVITY_WITHOUT_BILLING', 'BALANCE_BELOW_ONE_HOUR', 'GPU_SHARED_OVERSUBSCRIBED', 'INVOICE_MISMATCH')) as at_stake_outside_bill
    from findings
    group by day
)

select
    * exclude (findings, at_stake, at_stake_outside_bill, other_charges),
    coalesce(findings, 0) as findings,
    coalesce(at_stake, 0) as at_stake,
    coalesce(at_stake_outside_bill, 0) as at_stake_outside_bill,
    coalesce(other_charges, 0) as other_charges,
    -- the day's bill: the segments' money and the charges carried through
    coalesce(billed, 0) + coalesce(other_charges, 0) as bill_total
from segment_days
full join finding_days using (day)
full join other_days using (day)
order by day
