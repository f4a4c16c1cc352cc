-- grain: as staging.stg_runpod__pod_billing, for the window: each instance from the start of its
-- island (scope.resource_bounds), others from the window's lo.
with final as (
    select b.*
    from staging.stg_runpod__pod_billing b
    cross join scope.window w
    left join scope.resource_bounds r on r.resource_id = b.pod_id
    where b.bucket_start < w.hi and b.bucket_end > coalesce(r.scope_start, w.lo)
)

select * from final
