-- grain: as staging.stg_focus__charges, for the window (rows without a resource or a period
-- are all kept: the account tie-out reads them).
with final as (
    select c.*
    from staging.stg_focus__charges c
    cross join scope.window w
    left join scope.resource_bounds r on r.resource_id = c.resource_key
    where c.resource_key is null or c.charge_start is null or c.charge_end is null
       or (c.charge_start < coalesce(r.scope_end, w.hi) and c.charge_end > coalesce(r.scope_start, w.lo))
)

select * from final
