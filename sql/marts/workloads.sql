-- grain: one row per GPU workload (cluster, pod_uid): a pod with a GPU limit, scheduled on a node
-- that maps to a billed resource, and the window it held the node's GPUs.
select cluster, pod_uid, namespace, pod_name, workload, team, gpus, node_name, resource_id,
       scheduled_at, ready_at, window_end_at
from intermediate.int_resource__workloads
