-- grain: one row per kube-state-metrics series (metric × pod [× container]) from Prometheus
-- query_range responses: the series' last sample value (for the *_time metrics: a Unix time).
with source as (
    select * from raw.prometheus_series
),

final as (
    select
        coalesce(doc ->> '$.metric.__name__', regexp_extract(query, '^([a-z_]+)', 1)) as metric,
        doc ->> '$.metric.namespace' as namespace,
        doc ->> '$.metric.pod' as pod_name,
        doc ->> '$.metric.uid' as pod_uid,
        doc ->> '$.metric.node' as node_name,
        doc ->> '$.metric.resource' as resource,
        -- kube-state-metrics writes a label as `label_<name>`, every character a Prometheus
        -- label name may not hold (`.`, `/`, `-`) as `_`
        label_of(doc -> '$.metric', list_transform(team_labels(),
                 lambda l: 'label_' || regexp_replace(l, '[^a-zA-Z0-9_]', '_', 'g'))) as team,
        coalesce(nullif(doc ->> '$.metric.cluster', ''), cluster) as cluster,
        try_cast(doc ->> '$.values[#-1][1]' as double) as last_value,
        try_cast(doc ->> '$.values[0][0]' as double) as first_seen_epoch,
        try_cast(doc ->> '$.values[#-1][0]' as double) as last_seen_epoch,
        source_file,
        record_no
    from source
)

select * from final
