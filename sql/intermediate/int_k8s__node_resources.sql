-- grain: one row per (cluster, node_name): the billed resource it runs on.
-- Mapping (config [mapping]): node label, then spec.providerID with the prefix, then the node name.
with nodes as (
    select
        cluster,
        node_name,
        max(labels ->> ('$."' || cfg('node_label') || '"')) as label_id,
        max(case when starts_with(provider_id, cfg('provider_id_prefix'))
                 then substr(provider_id, length(cfg('provider_id_prefix')) + 1)
                 -- other clouds: the last segment (aws:///zone/i-0abc, gce://p/z/name, azure:///…/vm),
                 -- an Azure name in lower case (names are case-insensitive: stg_focus__charges)
                 when starts_with(provider_id, 'azure://')
                 then nullif(lower(regexp_extract(provider_id, '([^/:]+)/*$', 1)), '')
                 else nullif(regexp_extract(provider_id, '([^/:]+)/*$', 1), '') end) as provider_id
    from staging.stg_k8s__nodes
    group by all
),

pod_nodes as (
    select distinct cluster, node_name from staging.stg_k8s__pods where node_name is not null
    union
    select distinct cluster, node_name from intermediate.int_k8s__prometheus_pods
    where node_name is not null
),

all_nodes as (
    select cluster, node_name from nodes union select cluster, node_name from pod_nodes
),

final as (
    select
        a.cluster,
        a.node_name,
        coalesce(n.label_id, n.provider_id,
                 case when cfg('use_node_name') = 'True' then a.node_name end) as resource_id,
        case when n.label_id is not null then 'label'
             when n.provider_id is not null then 'provider_id'
             when cfg('use_node_name') = 'True' then 'node_name' end as mapped_by
    from all_nodes a
    left join nodes n using (cluster, node_name)
)

select * from final
