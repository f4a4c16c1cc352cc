-- the batch of the suite expectations/tieout.billed_seconds.json (its notes say what it ties out)
with seg as (
    select resource_id, day,
           sum(seconds) filter (where category not in ('storage_running', 'storage_lingering')) as seconds,
           sum(amount) as amount
    from marts.billed_segments
    group by resource_id, day
)
select resource_id, day, r.resource_kind,
       r.billed_seconds, s.seconds as segment_seconds,
       cast(coalesce(r.billed_seconds, 0) - coalesce(s.seconds, 0) as double) as difference,
       -- a rate-missing resource-day bills compute no seconds could be derived for: its
       -- RATE_MISSING finding holds that money (allocation: __unallocated__), not a segment
       case when not coalesce(r.rate_missing, false)
            then cast(coalesce(r.billed_amount, 0) - coalesce(s.amount, 0) as double) end as amount_difference
from marts.resource_day r
full join seg s using (resource_id, day)
