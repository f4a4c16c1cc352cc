-- grain: one row per GPU workload (cluster, pod_uid): a pod with a GPU or MIG limit, scheduled on
-- a node that maps to a billed resource, and the window it held the node's GPUs. gpu_fraction:
-- the physical GPUs it held (intermediate.int_resource__workloads: 1/4 for one replica of a GPU
-- time-sliced 4 ways, 1/7 for `nvidia.com/mig-1g.10gb: 1` on an A100), what marts.allocation
-- splits the node's money by.
select cluster, pod_uid, namespace, pod_name, workload, team, gpus, node_name, resource_id,
       scheduled_at, ready_at, window_end_at, mig_profiles, gpu_fraction
from intermediate.int_resource__workloads
