-- grain: one row: the stretch of time a windowed run (--from/--to) reads, [lo, hi): its days
-- padded by one day each side. Only built for windowed runs (see README "Incremental runs").
with final as (
    select cfg('day_from')::date::timestamptz - interval 1 day as lo,
           cfg('day_to')::date::timestamptz + interval 2 day as hi
)

select * from final
