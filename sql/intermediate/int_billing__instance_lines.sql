-- grain: one row per billed instance and billing bucket, from every provider source:
-- Runpod v2/v1 pod billing and FOCUS usage rows (Compute → compute, anything else on the
-- resource → storage/disk). FOCUS Purchase/Credit/Adjustment/Tax rows are not usage of a
-- resource second; they stay in staging.stg_focus__charges for the account tie-out.
with pod_billing as (
    select * from staging.stg_runpod__pod_billing
),

charges as (
    select * from staging.stg_focus__charges
),

runpod as (
    select pod_id, bucket_start, bucket_end, compute_amount_usd, disk_amount_usd, total_amount_usd,
           compute_seconds_billed, disk_gb_billed, source_format,
           cast(null as decimal(38, 12)) as line_rate_per_hour,
           source_file, record_no
    from pod_billing
),

focus as (
    select
        resource_key as pod_id,
        charge_start as bucket_start,
        charge_end as bucket_end,
        coalesce(sum(billed_cost) filter (where service_category = 'Compute'), 0) as compute_amount_usd,
        coalesce(sum(billed_cost) filter (where service_category is distinct from 'Compute'), 0)
            as disk_amount_usd,
        sum(billed_cost) as total_amount_usd,
        sum(consumed_quantity * seconds_per_unit) filter (where service_category = 'Compute')
            as compute_seconds_billed,
        cast(null as bigint) as disk_gb_billed,
        'focus' as source_format,
        max(case when seconds_per_unit = 3600 then contracted_unit_price end)
            filter (where service_category = 'Compute') as line_rate_per_hour,
        min(source_file) as source_file,
        min(record_no) as record_no
    from charges
    where charge_category = 'Usage' and resource_key is not null
    group by resource_key, charge_start, charge_end
),

final as (
    select * from runpod
    union all
    select * from focus
)

select * from final
