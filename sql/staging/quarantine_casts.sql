-- grain: one row per raw record whose values staging cannot cast, with the reason: a part of
-- the quarantine (sql/staging/quarantine.sql), the part a record's own values decide, so
-- that it is kept between runs and only new files' rows are parsed.
with pods as (
    select source_file, record_no, locator, 'Pod metadata.creationTimestamp is not a timestamp: '
           || coalesce(doc ->> '$.metadata.creationTimestamp', 'null') as reason, doc::varchar as record
    from raw.k8s_objects
    -- ts_ok: landing's verdict on this very cast (recon/ingest/reader.py TS_CHECKED); only rows
    -- where it is not true are parsed (NULL: landed before it existed)
    where kind = 'Pod' and ts_ok is not true
      and try_cast(doc ->> '$.metadata.creationTimestamp' as timestamptz) is null
),

billing as (
    select source_file, record_no, locator,
           'billing bucket time is not a timestamp or ends before it starts: '
           || coalesce(doc ->> '$.startTime', doc ->> '$.time', 'null') as reason, doc::varchar as record
    from raw.runpod_billing
    where coalesce(try_cast(coalesce(doc ->> '$.startTime', doc ->> '$.time') as timestamptz),
                   '-infinity'::timestamptz) = '-infinity'::timestamptz
       or (doc ->> '$.endTime' is not null
           and coalesce(try_cast(doc ->> '$.endTime' as timestamptz) <= try_cast(doc ->> '$.startTime' as timestamptz), true))
),

jobs as (
    -- completedAt is required; submittedAt is optional, but a present one must be a timestamp
    -- (stg_runpod__jobs keeps neither kind of row; ts_ok covers both casts)
    select source_file, record_no, locator,
           case when try_cast(doc ->> '$.completedAt' as timestamptz) is null
                then 'job completedAt is not a timestamp: ' || coalesce(doc ->> '$.completedAt', 'null')
                else 'job submittedAt is not a timestamp: ' || (doc ->> '$.submittedAt') end as reason,
           doc::varchar as record
    from raw.serverless_jobs
    where ts_ok is not true
      and (try_cast(doc ->> '$.completedAt' as timestamptz) is null
           or (doc ->> '$.submittedAt' is not null
               and try_cast(doc ->> '$.submittedAt' as timestamptz) is null))
),

focus as (
    -- what stg_focus__charges leaves out; landing quarantines these rows first
    -- (recon/ingest/focus.py), so only rows landed before that check come here
    select source_file, record_no, locator,
           'FOCUS ChargePeriodStart/End is not a FOCUS date/time or the period is empty: '
           || coalesce(doc ->> '$.ChargePeriodStart', 'null') || ' .. '
           || coalesce(doc ->> '$.ChargePeriodEnd', 'null') as reason, doc::varchar as record
    from raw.focus_rows
    where not coalesce(
        regexp_full_match(doc ->> '$.ChargePeriodStart', '[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2}| UTC)?|(?:Z|[+-][0-9]{2}:?[0-9]{2})?)')
        and regexp_full_match(doc ->> '$.ChargePeriodEnd', '[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2}| UTC)?|(?:Z|[+-][0-9]{2}:?[0-9]{2})?)')
        and try_cast(doc ->> '$.ChargePeriodEnd' as timestamptz)
            > try_cast(doc ->> '$.ChargePeriodStart' as timestamptz), false)
),

final as (
    select * from pods union all select * from billing union all select * from jobs
    union all select * from focus
)

select * from final
