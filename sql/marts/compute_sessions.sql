-- grain: one row per compute session of an instance (session_id): a maximal run of billed
-- compute, with its tail model where a GPU workload ended before compute stopped (the expected
-- tail of BILLED_AFTER_EXIT, which `recon whatif` re-prices); the tail columns are NULL otherwise.
select
    s.resource_id, s.session_id, s.start_at, s.end_at, s.placed_by,
    r.compute_rate_per_hour,
    t.last_finished_at, t.last_pod, t.node_name, t.scaler, t.owner, t.deactivated_at,
    t.cooldown_seconds, t.stabilization_seconds, t.grace_seconds, t.tolerance_seconds,
    t.allowed_seconds, t.allowed_parts
from intermediate.int_resource__compute_sessions s
left join intermediate.int_resource__tail_model t using (session_id)
left join intermediate.int_runpod__pod_rates r on r.pod_id = s.resource_id
