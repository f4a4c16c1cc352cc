-- grain: one row per Kubernetes Node object (cluster, node_uid), GPU or not: its GPU capacity and
-- when it was up, over every version landed (a Node's creationTimestamp never changes).
select cluster, node_uid, min(node_name) as node_name, max(gpu_capacity) as gpu_capacity,
       min(created_at) as created_at,
       case when bool_or(event_type = 'DELETED')
            then coalesce(min(deletion_at), max(created_at)) end as removed_at
from staging.stg_k8s__nodes
where created_at is not null
group by cluster, node_uid
