-- grain: one row per pod billing bucket with compute and storage converted to milliseconds.
-- v2 compute ms = amount ÷ rate (derived); v1 gives billed ms directly. Storage: the disk amount
-- beyond what running disk costs over the compute time, ÷ the stopped-volume rate, is lingering.
with lines as (
    select b.*, r.gpu_type, r.gpu_count, r.disk_running_per_month, r.disk_stopped_per_month,
           r.compute_rate_per_hour as pod_rate_per_hour, r.rate_source as pod_rate_source
    from intermediate.int_billing__instance_lines b
    left join intermediate.int_runpod__pod_rates r using (pod_id)
),

running_costs as (
    select pod_id, snapshot_at, cost_per_hour_usd
    from staging.stg_runpod__pods
    where status = 'RUNNING' and cost_per_hour_usd > 0 and snapshot_at is not null
),

with_inventory as (
    -- the cost the inventory showed last before the bucket ended (rates change: savings plans)
    select l.*, c.cost_per_hour_usd as inventory_rate
    from lines l
    asof left join running_costs c on c.pod_id = l.pod_id and c.snapshot_at <= l.bucket_end
),

with_cards as (
    select
        w.*,
        (select r.usd from config.rates r
          where r.rate_kind = 'pod_per_hour' and r.match_key = w.pod_id
            and coalesce(r.valid_from, '0001-01-01') <= w.bucket_start::date
            and w.bucket_start::date < coalesce(r.valid_to, '9999-12-31')
          order by r.valid_from desc nulls last limit 1) as card_pod,
        (select r.usd * w.gpu_count from config.rates r
          where r.rate_kind = 'gpu_per_hour' and r.match_key = w.gpu_type
            and coalesce(r.valid_from, '0001-01-01') <= w.bucket_start::date
            and w.bucket_start::date < coalesce(r.valid_to, '9999-12-31')
          order by r.valid_from desc nulls last limit 1) as card_gpu,
        (select p.usd_per_gpu_hour * w.gpu_count from config.savings_plans p
          where p.gpu_type = w.gpu_type and w.gpu_count <= p.gpu_count
            and p.start_day <= w.bucket_start::date and w.bucket_start::date < p.end_day
          order by p.usd_per_gpu_hour limit 1) as plan_rate,
        (select p.plan_id from config.savings_plans p
          where p.gpu_type = w.gpu_type and w.gpu_count <= p.gpu_count
            and p.start_day <= w.bucket_start::date and w.bucket_start::date < p.end_day
          order by p.usd_per_gpu_hour limit 1) as plan_id
    from with_inventory w
),

buckets as (
    select
        * exclude (line_rate_per_hour),
        -- what the provider charged: turns amounts into seconds
        coalesce(line_rate_per_hour, inventory_rate, pod_rate_per_hour, card_pod, card_gpu,
                 case when source_format = 'focus' and compute_seconds_billed > 0
                      then compute_amount_usd * 3600 / compute_seconds_billed end)
            as compute_rate_per_hour,
        case when line_rate_per_hour is not null then 'bill_contracted_unit_price'
             when inventory_rate is not null then 'inventory'
             when pod_rate_per_hour is not null then pod_rate_source
             when card_pod is not null then 'rate_card_pod'
             when card_gpu is not null then 'rate_card_gpu'
             when source_format = 'focus' then 'bill_amount_per_hour' end as rate_source,
        -- what was agreed: the savings plan in force, else the rate card, else what was charged
        coalesce(plan_rate, card_pod, card_gpu, line_rate_per_hour, inventory_rate, pod_rate_per_hour,
                 case when source_format = 'focus' and compute_seconds_billed > 0
                      then compute_amount_usd * 3600 / compute_seconds_billed end)
            as contracted_rate_per_hour,
        epoch_ms(bucket_end) - epoch_ms(bucket_start) as bucket_ms
    from with_cards
),

compute as (
    select
        *,
        case when source_format in ('v1', 'focus') then cast(round(coalesce(compute_seconds_billed, 0) * 1000) as bigint)
             when compute_amount_usd = 0 then 0
             when compute_rate_per_hour > 0
             then cast(round(compute_amount_usd * 3600000 / compute_rate_per_hour) as bigint)
        end as compute_ms,
        source_format = 'v2' as compute_derived
    from buckets
),

amounts as (
    select
        *,
        case when source_format = 'v1'
             then cast(compute_ms * compute_rate_per_hour / 3600000 as decimal(38, 12))
             else compute_amount_usd end as compute_usd,
        case when source_format = 'v1'
             then total_amount_usd - cast(compute_ms * compute_rate_per_hour / 3600000 as decimal(38, 12))
             else disk_amount_usd end as disk_usd
    from compute
),

storage as (
    select
        *,
        least(disk_usd, greatest(0, cast(
            coalesce(disk_running_per_month, 0) * compute_ms / (cast(cfg_int('hours_per_month') as bigint) * 3600000)
            as decimal(38, 12)))) as storage_running_usd,
        case when disk_usd <= 0 then 0
             when disk_stopped_per_month > 0 then least(bucket_ms - compute_ms, greatest(0, cast(round(
                 (disk_usd - coalesce(disk_running_per_month, 0) * compute_ms
                     / (cfg_int('hours_per_month') * 3600000))
                 * cfg_int('hours_per_month') * 3600000 / disk_stopped_per_month) as bigint)))
             when compute_ms = 0 then bucket_ms
             else 0 end as storage_lingering_ms,
        disk_stopped_per_month is null or disk_stopped_per_month = 0 as storage_split_assumed
    from amounts
),

-- what the disk amount holds beyond the running rate but buys no stopped millisecond at the
-- stopped rate is the bill's rounding (~1e-10 USD), not lingering storage: it stays with the
-- running disk instead of making a zero-second storage_lingering row
running as (
    select
        *,
        case when disk_stopped_per_month > 0 and storage_lingering_ms = 0 and compute_ms > 0
             then disk_usd else storage_running_usd end as running_usd
    from storage
),

final as (
    select
        pod_id, bucket_start, bucket_end, bucket_ms, source_format, compute_rate_per_hour,
        rate_source, contracted_rate_per_hour, plan_id, compute_ms, compute_derived, compute_usd, disk_usd, total_amount_usd,
        case when disk_usd > 0 then compute_ms else 0 end as storage_running_ms,
        running_usd as storage_running_usd,
        storage_lingering_ms,
        disk_usd - running_usd as storage_lingering_usd,
        storage_split_assumed,
        source_file, record_no
    from running
)

select * from final
