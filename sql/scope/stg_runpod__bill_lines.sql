-- grain: as staging.stg_runpod__bill_lines (every pull of every bucket), for the window's buckets.
with final as (
    select l.*
    from staging.stg_runpod__bill_lines l
    cross join scope.window w
    left join scope.resource_bounds r
      on r.resource_id = l.resource_id and l.resource_kind = 'instance'
    where l.bucket_start is null
       or (l.bucket_start < coalesce(r.scope_end, w.hi)
           and coalesce(l.bucket_end, l.bucket_start + interval 1 day) > coalesce(r.scope_start, w.lo))
)

select * from final
