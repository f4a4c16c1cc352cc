-- grain: one row per Runpod pod billing bucket (pod_id, bucket_start): its billed compute and
-- storage in milliseconds and USD, storage split into running (compute ran) and lingering.
select pod_id, cast(date_trunc('day', bucket_start) as date) as day, bucket_start, bucket_end,
       bucket_ms, compute_ms, compute_derived, compute_usd, disk_usd, total_amount_usd,
       storage_running_ms, storage_running_usd, storage_lingering_ms, storage_lingering_usd,
       storage_lingering_derived
from intermediate.int_runpod__pod_buckets
