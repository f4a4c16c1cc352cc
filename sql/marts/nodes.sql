-- grain: one row per Kubernetes Node object (cluster, node_uid), GPU or not: its GPU capacity and
-- when it was up, over every version landed (a Node's creationTimestamp never changes); how its
-- GPUs are shared and counted (intermediate.int_k8s__node_gpus), with a note where its sharing
-- labels are missing or malformed and its pods are counted in whole GPUs instead.
with nodes as (
    select cluster, node_uid, min(node_name) as node_name, max(gpu_capacity) as gpu_capacity,
           min(created_at) as created_at,
           case when bool_or(event_type = 'DELETED')
                then coalesce(min(deletion_at), max(created_at)) end as removed_at
    from staging.stg_k8s__nodes
    where created_at is not null
    group by cluster, node_uid
)

select n.*, g.gpu_sharing, g.physical_gpus, g.gpu_replicas, g.gpu_note
from nodes n
left join intermediate.int_k8s__node_gpus g
  on g.cluster is not distinct from n.cluster and g.node_name = n.node_name
