-- `recon check`, step 4: per resource kind, the day's billed seconds and money against the
-- formula's, the storage seconds with compute stopped, the serverless idle, the last compute
-- stop (parameter: the day).
select resource_kind, count(*), sum(billed_seconds), sum(billed_amount),
       sum(expected_amount), sum(lingering_storage_seconds), sum(serverless_idle_seconds),
       max(compute_stopped_at)
from marts.resource_day
where day = ?
group by all
order by 1
