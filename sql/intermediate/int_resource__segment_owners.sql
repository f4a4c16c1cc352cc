-- grain: one row per (resource_id, seg_start, owner) of each instance segment that is not work
-- (startup, idle_gap, tail, unobserved): the cause of the segment and who it belongs to, with the
-- owner's weight; a segment no rule gives an owner is one row with NULL owner columns and weight.
-- marts.waste cuts these segments by cause and owner, marts.allocation gives their money to the
-- owners' teams: both read the rules here, so the two marts never disagree on an owner.
-- Rules, in order (docs/design.md, "Waste"); a segment takes the first that names an owner:
-- * a tail: the session's last pod (intermediate.int_resource__tail_model); cause keda_cooldown
--   when KEDA's scale to zero ended it, hpa_scale_down when the HPA's N → 1, else
--   tail_after_exit;
-- * a startup segment with pods starting in it: those pods, by the GPU fractions they hold
--   (slots); cause startup;
-- * the opening of a session, before its first pod is scheduled (node boot: startup; the node
--   Ready and the pod still Pending: unschedulable_wait): the pods scheduled first in the session
--   when they were created before the session began, i.e. the node was brought up for them
--   (cluster autoscaler or Karpenter provision a node for a pending pod); a pod created later
--   found a node already waiting: no owner by this rule, the gap stays idle;
-- * an idle gap between two workloads of the session: the owners of the workloads that ended
--   last before it and of those scheduled first after it; one owner takes it whole, different
--   owners share it by their GPU-seconds (fractions of GPUs held × seconds) on the resource
--   that day; cause idle_between_jobs;
-- * what these leave without an owner, on a resource whose Kubernetes node carries a team label
--   (mapping.team_labels, e.g. a node pool reserved for a team): that team, owner kind `Node`
--   and the node's name, NULL namespace;
-- * anything else: no owner. Its cause: an idle gap or unobserved compute on a resource-day
--   with no GPU workload is bill_without_workload, else idle_between_jobs (a gap) or
--   unobserved; a startup segment stays startup.
-- A pod with no team label has team `__unallocated__` (as marts.allocation).
with segments as (
    select * from intermediate.int_resource__instance_segments
),

workloads as (
    select * from intermediate.int_resource__workloads
),

k8s_workloads as (
    select * from intermediate.int_k8s__workloads
),

pod_owners as (
    select * from intermediate.int_k8s__pod_owners
),

tail_model as (
    select * from intermediate.int_resource__tail_model
),

compute_sessions as (
    select * from intermediate.int_resource__compute_sessions
),

node_ready as (
    select * from intermediate.int_k8s__node_ready
),

owned as (
    -- gpus in slots (a replica of a time-sliced GPU, a MIG compute slice, else a GPU:
    -- intermediate.int_k8s__node_gpus), so shares are by the fraction of a GPU each pod held
    select w.resource_id, w.gpu_slots as gpus, w.scheduled_at, w.ready_at, w.window_end_at, w.namespace,
           o.owner_kind, o.owner_name, coalesce(w.team, '__unallocated__') as team, k.created_at
    from workloads w
    left join pod_owners o on o.cluster is not distinct from w.cluster and o.pod_uid = w.pod_uid
    left join k8s_workloads k on k.cluster is not distinct from w.cluster and k.pod_uid = w.pod_uid
),

waste_segments as (
    select g.resource_id, g.session_id, g.day, g.seg_start, g.seg_end, g.category,
           s.start_at as session_start, s.end_at as session_end
    from segments g
    join compute_sessions s using (session_id)
    where g.category in ('startup', 'idle_gap', 'tail', 'unobserved')
),

-- each owner's GPU-milliseconds on a resource-day: the weights of a gap between owners
gpu_ms as (
    select o.resource_id, d.day, o.namespace, o.owner_kind, o.owner_name, o.team,
           sum(o.gpus * (epoch_ms(least(o.window_end_at, d.day::timestamptz + interval 1 day))
                         - epoch_ms(greatest(o.scheduled_at, d.day::timestamptz)))) as gpu_ms
    from owned o
    join (select distinct resource_id, day from waste_segments) d
      on d.resource_id = o.resource_id
     and o.scheduled_at < d.day::timestamptz + interval 1 day and o.window_end_at > d.day::timestamptz
    group by all
),

tail_owners as (
    select g.resource_id, g.seg_start, t.namespace, t.owner_kind, t.owner_name,
           coalesce(t.team, '__unallocated__') as team, 1.0 as weight,
           case t.scaler when 'scale_to_zero' then 'keda_cooldown'
                         when 'hpa_scale_in' then 'hpa_scale_down'
                         else 'tail_after_exit' end as cause
    from waste_segments g
    join tail_model t using (session_id)
    where g.category = 'tail'
),

startup_owners as (
    select g.resource_id, g.seg_start, o.namespace, o.owner_kind, o.owner_name, o.team,
           sum(o.gpus) as weight, 'startup' as cause
    from waste_segments g
    join owned o
      on o.resource_id = g.resource_id and o.scheduled_at <= g.seg_start
     and coalesce(o.ready_at, o.window_end_at) >= g.seg_end
    where g.category = 'startup'
    group by all
),

gap_sides as (
    -- the workloads that ended last before the gap and those scheduled first after it, in its session
    select g.resource_id, g.seg_start, g.day, 'before' as side, o.namespace, o.owner_kind, o.owner_name, o.team
    from waste_segments g
    join owned o
      on o.resource_id = g.resource_id and o.window_end_at <= g.seg_start and o.window_end_at >= g.session_start
    where g.category = 'idle_gap'
    qualify o.window_end_at = max(o.window_end_at) over (partition by g.resource_id, g.seg_start)
    union all
    select g.resource_id, g.seg_start, g.day, 'after', o.namespace, o.owner_kind, o.owner_name, o.team
    from waste_segments g
    join owned o
      on o.resource_id = g.resource_id and o.scheduled_at >= g.seg_end and o.scheduled_at < g.session_end
    where g.category = 'idle_gap'
    qualify o.scheduled_at = min(o.scheduled_at) over (partition by g.resource_id, g.seg_start)
),

gap_complete as (
    select resource_id, seg_start from gap_sides group by all having count(distinct side) = 2
),

gap_owners_all as (
    select resource_id, seg_start, day, namespace, owner_kind, owner_name, team,
           count(*) over (partition by resource_id, seg_start) as owners
    from (select distinct resource_id, seg_start, day, namespace, owner_kind, owner_name, team
          from gap_sides semi join gap_complete using (resource_id, seg_start))
),

gap_owners as (
    select a.resource_id, a.seg_start, a.namespace, a.owner_kind, a.owner_name, a.team,
           case when a.owners = 1 then 1.0 else coalesce(m.gpu_ms, 0) end as weight,
           'idle_between_jobs' as cause
    from gap_owners_all a
    left join gpu_ms m
      on m.resource_id = a.resource_id and m.day = a.day and m.namespace = a.namespace
     and m.owner_kind is not distinct from a.owner_kind and m.owner_name is not distinct from a.owner_name
     and m.team = a.team
),

-- the session's first pods, and whether the node was brought up for them (pending before the
-- session began); every segment before their scheduling is the session's opening
first_pods as (
    select s.session_id, o.namespace, o.owner_kind, o.owner_name, o.team, o.gpus, o.scheduled_at,
           o.created_at, s.start_at
    from compute_sessions s
    join owned o
      on o.resource_id = s.resource_id and o.scheduled_at >= s.start_at and o.scheduled_at < s.end_at
    qualify o.scheduled_at = min(o.scheduled_at) over (partition by s.session_id)
),

opening_owners as (
    select g.resource_id, g.seg_start, p.namespace, p.owner_kind, p.owner_name, p.team,
           sum(p.gpus) as weight,
           case g.category when 'startup' then 'startup' else 'unschedulable_wait' end as cause
    from waste_segments g
    join first_pods p
      on p.session_id = g.session_id and g.seg_end <= p.scheduled_at and p.created_at <= p.start_at
    where g.category in ('startup', 'idle_gap')
    group by all
),

rule_owners as (
    select *, 1 as rule from tail_owners
    union all select *, 2 from startup_owners
    union all select *, 3 from opening_owners
    union all select *, 4 from gap_owners
),

-- the first rule that names an owner with a weight, per segment
ruled as (
    select * exclude (rule)
    from rule_owners
    where weight > 0
    qualify rule = min(rule) over (partition by resource_id, seg_start)
),

-- a node's team label, for the segments no workload explains; of two Node objects of one
-- resource (a re-registered node), the one registered last before the segment
node_teams as (
    select g.resource_id, g.seg_start, n.node_name,
           label_of(l.labels, team_labels()) as team
    from waste_segments g
    join node_ready n
      on n.resource_id = g.resource_id and coalesce(n.registered_at, g.seg_start) <= g.seg_start
    join (select cluster, node_uid, arg_max(labels, resource_version) as labels
          from staging.stg_k8s__nodes group by all) l
      on l.cluster is not distinct from n.cluster and l.node_uid = n.node_uid
    where not exists (select 1 from ruled r where r.resource_id = g.resource_id and r.seg_start = g.seg_start)
    qualify row_number() over (partition by g.resource_id, g.seg_start
                               order by n.registered_at desc nulls last, n.node_uid) = 1
),

worked as (
    select g.*, exists (select 1 from owned o
                        where o.resource_id = g.resource_id
                          and o.scheduled_at < g.day::timestamptz + interval 1 day
                          and o.window_end_at > g.day::timestamptz) as worked_that_day
    from waste_segments g
),

unruled_cause as (
    select g.resource_id, g.seg_start,
           case g.category
               when 'startup' then 'startup'
               when 'tail' then 'tail_after_exit'
               when 'idle_gap' then case when g.worked_that_day then 'idle_between_jobs'
                                         else 'bill_without_workload' end
               else case when g.worked_that_day then 'unobserved' else 'bill_without_workload' end
           end as cause
    from worked g
),

final as (
    select g.resource_id, g.session_id, g.day, g.seg_start, g.seg_end, g.category,
           coalesce(r.cause, u.cause) as cause,
           r.namespace,
           coalesce(r.owner_kind, case when n.team is not null then 'Node' end) as owner_kind,
           coalesce(r.owner_name, case when n.team is not null then n.node_name end) as owner_name,
           coalesce(r.team, n.team) as team,
           coalesce(r.weight, case when n.team is not null then 1.0 end) as weight
    from waste_segments g
    left join ruled r using (resource_id, seg_start)
    left join unruled_cause u using (resource_id, seg_start)
    left join node_teams n using (resource_id, seg_start)
)

select * from final
