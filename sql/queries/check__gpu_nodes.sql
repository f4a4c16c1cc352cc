-- `recon check`, step 1: the GPU nodes up during the day (parameter: the day, three times) — one
-- per Node object, registered before the day's end and not removed before its start — the GPUs
-- between them, and the most GPUs up at one instant.
with node_versions as (
    select * from staging.stg_k8s__nodes
),

nodes as (
    select cluster, node_uid, max(gpu_capacity) as gpus, min(created_at) as up,
           case when bool_or(event_type = 'DELETED')
                then coalesce(min(deletion_at), max(created_at)) end as down
    from node_versions
    where created_at < ?::date + 1
    group by all
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
