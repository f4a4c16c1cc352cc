-- `recon check`, step 1: the GPU nodes up during the day (parameter: the day, three times) — one
-- per Node object (marts.nodes), registered before the day's end and not removed before its
-- start — the GPUs between them, and the most GPUs up at one instant.
with nodes as (
    select cluster, node_uid, gpu_capacity as gpus, created_at as up, removed_at as down
    from marts.nodes
    where created_at < ?::date + 1
),

up_during_day as (
    select * from nodes where gpus > 0 and (down is null or down > ?::date)
),

instants as (
    select greatest(up, ?::date::timestamptz) as t from up_during_day
)

select (select count(*) from up_during_day),
       (select coalesce(sum(gpus), 0) from up_during_day),
       (select coalesce(max(s), 0) from (
           select sum(d.gpus) as s from instants join up_during_day d on d.up <= instants.t
           and (d.down is null or d.down > instants.t) group by instants.t))
