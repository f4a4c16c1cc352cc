-- the batch of the suite expectations/tieout.waste.json (its notes say what it ties out)
with waste as (
    select resource_id, day, sum(amount) as amount from marts.waste group by all
),

nv_lingering as (
    select volume_id as resource_id, day, cast(lingering_amount as decimal(38, 12)) as amount
    from marts.network_volume_lingering
),

work as (
    -- busy, execution, storage_running, and a network volume's attached share
    select b.resource_id, b.day,
           sum(case when b.category = 'network_volume' then b.amount - coalesce(n.amount, 0)
                    else b.amount end) as amount
    from marts.billed_segments b
    left join nv_lingering n on b.category = 'network_volume' and n.resource_id = b.resource_id and n.day = b.day
    where b.category in ('busy', 'execution', 'storage_running', 'network_volume')
    group by all
)

select resource_id, day, r.resource_kind, r.billed_amount,
       w.amount as waste_amount, k.amount as work_amount,
       cast(coalesce(r.billed_amount, 0) - coalesce(w.amount, 0) - coalesce(k.amount, 0) as double) as difference
from marts.resource_day r
full join waste w using (resource_id, day)
full join work k using (resource_id, day)
