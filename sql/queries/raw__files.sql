-- the batch of the suite expectations/raw.files.json (its notes say what it ties out)
with landed as (
    select source_file, count(*) as n
    from (select source_file from raw.k8s_objects
          union all select source_file from raw.runpod_billing
          union all select source_file from raw.runpod_inventory
          union all select source_file from raw.serverless_jobs
          union all select source_file from raw.focus_rows
          union all select source_file from raw.invoice_lines
          union all select source_file from raw.prometheus_series)
    group by source_file
),
quarantined as (
    select source_file, count(*) as n from raw.quarantine group by source_file
),
keys as (
    select source_file from raw.files
    union select source_file from landed
    union select source_file from quarantined
)
select k.source_file, f.kind, f.sha256,
       f.records_in, f.records_loaded, f.records_quarantined, f.records_skipped,
       f.records_in - f.records_loaded - f.records_quarantined - f.records_skipped as accounting_difference,
       coalesce(f.records_loaded, 0) - coalesce(l.n, 0) as loaded_difference,
       coalesce(f.records_quarantined, 0) - coalesce(q.n, 0) as quarantined_difference
from keys k
left join raw.files f on f.source_file is not distinct from k.source_file
left join landed l on l.source_file is not distinct from k.source_file
left join quarantined q on q.source_file is not distinct from k.source_file
