-- `recon waste`: marts.waste over the days [from, to] by one dimension (parameters: the
-- dimension — 'team', 'namespace', 'owner' or 'cause' — then the first and last day). Waste no
-- owner explains stays its own row ('__unattributed__', or '(none)' for a missing namespace or
-- owner), never spread over the others.
with waste as (
    select * from marts.waste
),

keyed as (
    select case $by
               when 'team' then team
               when 'namespace' then coalesce(namespace, '(none)')
               when 'owner' then coalesce(owner_kind || ' ' || namespace || '/' || owner_name,
                                          '(none)')
               when 'cause' then cause
           end as key,
           resource_id, seconds, amount
    from waste
    where day between $day_from and $day_to
)

select key, count(distinct resource_id) as resources, sum(seconds) as seconds,
       sum(amount) as amount
from keyed
group by key
order by amount desc, key
