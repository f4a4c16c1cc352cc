-- `recon check`: the day's findings of the given codes (parameters: the day, a list of codes),
-- the most money at stake first.
select code, resource_id, message
from marts.findings
where day = ? and list_contains(?::varchar[], code)
order by amount_at_stake desc
