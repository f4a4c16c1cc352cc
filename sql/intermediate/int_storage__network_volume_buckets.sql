-- grain: one row per network volume billing bucket. Network volumes bill by the hour whether or
-- not a pod uses them: lingering is the part of the bucket no running attached pod covered.
with buckets as (
    select *, epoch_ms(bucket_end) - epoch_ms(bucket_start) as bucket_ms
    from staging.stg_runpod__network_volume_billing
),

attached as (
    select b.volume_id, b.bucket_start,
           sum(epoch_ms(least(s.end_at, b.bucket_end)) - epoch_ms(greatest(s.start_at, b.bucket_start)))
               as attached_ms
    from buckets b
    join intermediate.int_runpod__pod_rates r on r.network_volume_id = b.volume_id
    join intermediate.int_resource__compute_sessions s
      on s.resource_id = r.pod_id and s.start_at < b.bucket_end and s.end_at > b.bucket_start
    group by all
),

final as (
    select b.volume_id, b.bucket_start, b.bucket_end, b.bucket_ms, b.total_amount_usd,
           least(coalesce(a.attached_ms, 0), b.bucket_ms) as attached_ms,
           b.bucket_ms - least(coalesce(a.attached_ms, 0), b.bucket_ms) as lingering_ms
    from buckets b
    left join attached a using (volume_id, bucket_start)
)

select * from final
