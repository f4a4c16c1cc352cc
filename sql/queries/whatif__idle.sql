-- `recon whatif --idle-timeout`: per serverless endpoint, its worker sessions of the window
-- (parameters: first and last day, twice), the idle timeout they were given, and the endpoint's
-- idle seconds and rate over the same days.
with worker_sessions as (
    select * from marts.serverless_worker_sessions
),

endpoint_days as (
    select * from marts.serverless_endpoint_days
),

endpoints as (
    select endpoint_id, sum(idle_ms) as idle_ms, any_value(rate_per_second) as rate_per_second
    from endpoint_days
    where day between ? and ?
    group by all
)

select w.endpoint_id, count(*) as sessions,
       sum(w.idle_timeout_ms) / 1000.0 as timeout_s,
       any_value(e.idle_ms) / 1000.0 as idle_s, any_value(e.rate_per_second) as rate
from worker_sessions w
join endpoints e using (endpoint_id)
where w.day between ? and ?
group by w.endpoint_id
