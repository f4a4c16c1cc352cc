-- grain: one row per billed instance whose billed compute touches the window: where the island of
-- contiguous compute buckets it is in began and ended (never inside the window's [lo, hi)). A
-- compute session lies inside one island, so everything a session overlapping the window needs
-- (its first bucket, the pods that ran in it, a task after the window that makes the window's
-- gap idle rather than tail) is read over that span.
with buckets as (
    -- compute buckets only: a stopped pod's volume bills on for days, but only compute makes
    -- sessions (storage is classified bucket by bucket)
    select pod_id as resource_id, bucket_start, bucket_end from staging.stg_runpod__pod_billing
    where coalesce(compute_amount_usd, 0) > 0 or coalesce(compute_seconds_billed, 0) > 0
       or (compute_amount_usd is null and compute_seconds_billed is null)
    union all
    select resource_key, charge_start, charge_end from staging.stg_focus__charges
    where resource_key is not null and charge_start is not null and charge_end is not null
      and service_category = 'Compute'
),

starts as (
    select *,
           case when bucket_start <= max(bucket_end) over (
                    partition by resource_id order by bucket_start, bucket_end
                    rows between unbounded preceding and 1 preceding)
                then 0 else 1 end as new_island
    from buckets
),

islands as (
    select resource_id, bucket_start, bucket_end,
           sum(new_island) over (partition by resource_id order by bucket_start, bucket_end
                                 rows unbounded preceding) as island
    from starts
),

spans as (
    select resource_id, island, min(bucket_start) as island_start, max(bucket_end) as island_end
    from islands
    group by all
),

final as (
    select s.resource_id, least(min(s.island_start), any_value(w.lo)) as scope_start,
           greatest(max(s.island_end), any_value(w.hi)) as scope_end
    from spans s cross join scope.window w
    where s.island_start < w.hi and s.island_end > w.lo
    group by s.resource_id
)

select * from final
