-- grain: one row per pod billing bucket with compute and storage converted to milliseconds.
-- v2 compute ms = amount ÷ rate (derived); v1 gives billed ms directly. Storage: the disk amount
-- beyond what running disk costs over the compute time, ÷ the stopped-volume rate, is lingering.
with buckets as (
    select b.* exclude (line_rate_per_hour),
           coalesce(b.line_rate_per_hour, r.compute_rate_per_hour,
                    case when b.source_format = 'focus' and b.compute_seconds_billed > 0
                         then b.compute_amount_usd * 3600 / b.compute_seconds_billed end)
               as compute_rate_per_hour,
           case when b.line_rate_per_hour is not null then 'bill_contracted_unit_price'
                when r.compute_rate_per_hour is not null then r.rate_source
                when b.source_format = 'focus' then 'bill_amount_per_hour' end as rate_source,
           r.disk_running_per_month, r.disk_stopped_per_month,
           epoch_ms(b.bucket_end) - epoch_ms(b.bucket_start) as bucket_ms
    from intermediate.int_billing__instance_lines b
    left join intermediate.int_runpod__pod_rates r using (pod_id)
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

final as (
    select
        pod_id, bucket_start, bucket_end, bucket_ms, source_format, compute_rate_per_hour,
        rate_source, compute_ms, compute_derived, compute_usd, disk_usd, total_amount_usd,
        case when disk_usd > 0 then compute_ms else 0 end as storage_running_ms,
        storage_running_usd,
        storage_lingering_ms,
        disk_usd - storage_running_usd as storage_lingering_usd,
        storage_split_assumed,
        source_file, record_no
    from storage
)

select * from final
