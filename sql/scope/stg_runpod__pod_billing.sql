-- grain: as staging.stg_runpod__pod_billing, for the window: each instance over its whole
-- island (scope.resource_bounds), others over the window [lo, hi).
with final as (
    select b.*
    from staging.stg_runpod__pod_billing b
    cross join scope.window w
    left join scope.resource_bounds r on r.resource_id = b.pod_id
    where b.bucket_start < coalesce(r.scope_end, w.hi) and b.bucket_end > coalesce(r.scope_start, w.lo)
)

select * from final
