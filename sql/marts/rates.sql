-- grain: one row per billed instance and UTC day: the rates behind its seconds and amounts.
-- charged = what turned amounts into seconds (inventory cost, else the rate card); contracted =
-- savings plan in force, else the rate card (expected amounts); learned = the bill's own
-- amount ÷ billed hours, where the bill gives seconds (v1, FOCUS) — per SKU (GPU type) and day;
-- none for a usage-only FOCUS line, whose amount is the rate card's (int_billing__instance_lines).
with pod_buckets as (
    select * from intermediate.int_runpod__pod_buckets
),

pod_rates as (
    select * from intermediate.int_runpod__pod_rates
),

buckets as (
    select b.*, r.gpu_type, r.gpu_count
    from pod_buckets b
    left join pod_rates r using (pod_id)
    where b.compute_ms > 0
),

final as (
    select
        pod_id as resource_id,
        cast(date_trunc('day', bucket_start) as date) as day,
        min(gpu_type) as sku,
        min(gpu_count) as gpu_count,
        cast(max(compute_rate_per_hour) as decimal(38, 12)) as charged_rate_per_hour,
        min(rate_source) as charged_rate_source,
        cast(max(contracted_rate_per_hour) as decimal(38, 12)) as contracted_rate_per_hour,
        min(plan_id) as savings_plan_id,
        case when bool_and(not compute_derived and not amount_priced and not amount_unpriced)
             then cast(sum(compute_usd) * 3600000 / sum(compute_ms) as decimal(38, 12)) end
            as learned_rate_per_hour,
        sum(compute_ms) * 0.001::decimal(18, 3) as compute_seconds,
        cast(sum(compute_usd) as decimal(38, 12)) as compute_amount
    from buckets
    group by pod_id, cast(date_trunc('day', bucket_start) as date)
)

select * from final
where day between cfg('day_from')::date and cfg('day_to')::date
order by day, resource_id
