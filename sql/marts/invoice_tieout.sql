-- grain: one row per invoice, cost center and service (invoice_id, cost_center, service): what the
-- invoice says vs the reconciled bill of the same period and scope, the difference, the part the
-- project can explain and the rest.
--
-- Scope: the invoice's rows of one service that name a resource_id tie out against those
-- resources; rows that name none, against the account's whole bill of that service. The project
-- has no cost-center assignment of resources (Runpod assigns them in the console, as of month
-- end), so two cost centers' invoices without resource lines for one service each tie out against
-- the account's whole bill: itemize by resource to split them. An invoice's total row
-- (service `total`) ties out against every service and the savings-plan purchases of the period,
-- and only when the invoice has no line items (its lines are then the comparison).
--
-- Reconciled amounts: pods and pod_storage are a pod bucket's bill split as the bill splits it
-- (staging.stg_runpod__pod_billing: total less diskAmount, and diskAmount); serverless and network_volumes
-- are marts.resource_day's billed_amount; savings_plans the upfront_usd of config.savings_plans
-- starting in the period; credits have no input (reconciled 0): an invoice's credit is a
-- difference until it is explained by hand.
--
-- Explanations (what the invoice could not hold when it was issued, `issued_at`): usage landed
-- after the cut-off (a bucket whose first pull came after issued_at: the bill shows new spend up
-- to 60 minutes late, and the invoice was cut before it), and restated buckets (a pull after
-- issued_at changed a bucket's amount: the invoice holds the amount as of its issue). Both come
-- from the pull history (staging.stg_runpod__bill_lines, v2 lines with a pull time, as
-- marts.restatements); a pod bucket's share is split between pods and pod_storage as its bill
-- splits it. Without issued_at, nothing is explained.
-- unexplained_amount = invoice_amount − (reconciled − late_usage − restated_after_issue); beyond
-- thresholds.invoice_mismatch_tolerance_usd it is an INVOICE_MISMATCH finding (marts.findings).
with invoice_lines as (
    select * from staging.stg_invoice__lines
),

-- the bill's own split (v2 gpuAmount + cpuAmount, diskAmount; the latest pull): from staging,
-- which holds every day landed, so that a windowed run ties out the whole period; a saved v1
-- line names no disk amount and counts as pods
pod_buckets as (
    select pod_id, bucket_start, coalesce(total_amount_usd, 0) as total_usd,
           coalesce(disk_amount_usd, 0) as disk_usd
    from staging.stg_runpod__pod_billing
),

resource_day as (
    select resource_id, resource_kind, day, billed_amount from marts.resource_day
),

bill_lines as (
    select * from staging.stg_runpod__bill_lines
),

savings_plans as (
    select * from config.savings_plans
),

-- the invoice's rows, one per invoice × cost center × service; a total row only for an invoice
-- without line items
invoices as (
    select invoice_id, cost_center, service,
           any_value(issuer) as issuer, any_value(currency) as currency,
           min(period_start) as period_start, max(period_end) as period_end,
           max(issued_at) as issued_at,
           sum(amount) as invoice_amount,
           coalesce(list_sort(list_distinct(list(resource_id) filter (where resource_id is not null))),
                    []::varchar[]) as resource_ids,
           min(source_file) as source_file,
           string_agg(distinct locator, ', ') as locators
    from invoice_lines l
    where service <> 'total'
       or not exists (select 1 from invoice_lines o
                      where o.invoice_id = l.invoice_id and o.service <> 'total')
    group by invoice_id, cost_center, service
),

-- the reconciled bill, one piece per resource and bucket (or day), by service
pieces as (
    select 'pods' as service, pod_id as resource_id, bucket_start as at, total_usd - disk_usd as amount
    from pod_buckets
    union all select 'pod_storage', pod_id, bucket_start, disk_usd from pod_buckets
    union all select 'serverless', resource_id, day::timestamptz, billed_amount
              from resource_day where resource_kind = 'serverless'
    union all select 'network_volumes', resource_id, day::timestamptz, billed_amount
              from resource_day where resource_kind = 'network_volume'
    union all select 'savings_plans', 'plan:' || plan_id, start_day::timestamptz, upfront_usd
              from savings_plans
),

-- each pull of a bucket, one version per pull time (as marts.restatements)
versions as (
    select resource_kind, resource_id, start_time as bucket_start, pulled_at, max(total_amount) as amount
    from bill_lines
    where source in ('v2_pods', 'v2_serverless', 'v2_network_volumes') and has_pull_time
    group by all
),

-- a pod bucket's disk share of its bill, to split what landed late between pods and pod_storage
pod_share as (
    select pod_id as resource_id, bucket_start,
           case when total_usd = 0 then 0 else disk_usd / total_usd end as disk_share
    from pod_buckets
),

-- per invoice row and bucket of its period and scope: the amount as of the invoice's issue and
-- the latest
late as (
    select i.invoice_id, i.cost_center, i.service, v.resource_kind, v.resource_id, v.bucket_start,
           arg_max(v.amount, v.pulled_at) as latest_amount,
           arg_max(v.amount, v.pulled_at) filter (where v.pulled_at <= i.issued_at) as issued_amount,
           bool_or(v.pulled_at <= i.issued_at) as on_invoice,
           min(v.pulled_at) filter (where v.pulled_at > i.issued_at) as first_pull_after_issue
    from invoices i
    join versions v
      on v.bucket_start >= i.period_start and v.bucket_start < i.period_end
     and (i.service = 'total'
          or (i.service in ('pods', 'pod_storage') and v.resource_kind = 'instance')
          or (i.service = 'serverless' and v.resource_kind = 'serverless')
          or (i.service = 'network_volumes' and v.resource_kind = 'network_volume'))
     and (len(i.resource_ids) = 0 or list_contains(i.resource_ids, v.resource_id))
    where i.issued_at is not null and i.service not in ('savings_plans', 'credits')
    group by all
    having max(v.pulled_at) > any_value(i.issued_at)
),

late_by_row as (
    select l.invoice_id, l.cost_center, l.service,
           sum(case when l.resource_kind <> 'instance' or l.service = 'total' then 1
                    when l.service = 'pod_storage' then coalesce(s.disk_share, 0)
                    else 1 - coalesce(s.disk_share, 0) end
               * case when l.on_invoice then 0 else l.latest_amount end) as late_usage_amount,
           sum(case when l.resource_kind <> 'instance' or l.service = 'total' then 1
                    when l.service = 'pod_storage' then coalesce(s.disk_share, 0)
                    else 1 - coalesce(s.disk_share, 0) end
               * case when l.on_invoice then l.latest_amount - l.issued_amount else 0 end)
               as restated_after_issue_amount,
           count(*) filter (where not l.on_invoice) as late_buckets,
           count(*) filter (where l.on_invoice and l.latest_amount <> l.issued_amount) as restated_buckets,
           min(l.first_pull_after_issue) filter (where not l.on_invoice) as first_late_pull
    from late l
    left join pod_share s on l.resource_kind = 'instance' and s.resource_id = l.resource_id
                         and s.bucket_start = l.bucket_start
    group by all
),

reconciled as (
    select i.invoice_id, i.cost_center, i.service,
           coalesce(sum(p.amount), 0) as reconciled_amount,
           coalesce(sum(p.amount) filter (where p.service = 'savings_plans'), 0) as savings_plan_amount
    from invoices i
    left join pieces p
      on p.at >= i.period_start and p.at < i.period_end
     and (p.service = i.service or i.service = 'total')
     and (len(i.resource_ids) = 0 or list_contains(i.resource_ids, p.resource_id))
    group by all
),

joined as (
    select i.*, r.reconciled_amount, r.savings_plan_amount,
           coalesce(l.late_usage_amount, 0) as late_usage_amount,
           coalesce(l.restated_after_issue_amount, 0) as restated_after_issue_amount,
           coalesce(l.late_buckets, 0) as late_buckets,
           coalesce(l.restated_buckets, 0) as restated_buckets,
           l.first_late_pull,
           cast(cfg('invoice_mismatch_tolerance_usd') as decimal(38, 12)) as tolerance
    from invoices i
    join reconciled r using (invoice_id, cost_center, service)
    left join late_by_row l using (invoice_id, cost_center, service)
),

final as (
    select
        invoice_id, cost_center, service, issuer, currency, period_start, period_end, issued_at,
        case when len(resource_ids) = 0 then 'account' else array_to_string(resource_ids, ',') end as scope,
        cast(invoice_amount as decimal(38, 12)) as invoice_amount,
        cast(reconciled_amount as decimal(38, 12)) as reconciled_amount,
        cast(invoice_amount - reconciled_amount as decimal(38, 12)) as difference,
        cast(late_usage_amount as decimal(38, 12)) as late_usage_amount,
        cast(restated_after_issue_amount as decimal(38, 12)) as restated_after_issue_amount,
        cast(savings_plan_amount as decimal(38, 12)) as savings_plan_amount,
        cast(-(late_usage_amount + restated_after_issue_amount) as decimal(38, 12)) as explained_amount,
        cast(invoice_amount - (reconciled_amount - late_usage_amount - restated_after_issue_amount)
             as decimal(38, 12)) as unexplained_amount,
        concat_ws('; ',
            case when late_buckets > 0 then late_buckets || ' bucket(s) first pulled after the invoice was issued ('
                 || strftime(issued_at, '%Y-%m-%dT%H:%M:%SZ') || '; first at '
                 || strftime(first_late_pull, '%Y-%m-%dT%H:%M:%SZ') || '): $'
                 || printf('%.2f', late_usage_amount) || ' of usage landed after the cut-off' end,
            case when restated_buckets > 0 then restated_buckets || ' bucket(s) restated after the invoice was issued: $'
                 || printf('%.2f', restated_after_issue_amount) end,
            case when savings_plan_amount <> 0 then 'savings-plan purchases of $' || printf('%.2f', savings_plan_amount)
                 || ' in the period are part of the reconciled amount' end,
            case when service = 'credits' then 'no input of the project carries credits: reconciled 0' end,
            case when issued_at is null then 'no issued_at: no late usage or restatement can be explained' end)
            as explanation,
        tolerance,
        source_file,
        locators
    from joined
)

select *,
       case when abs(unexplained_amount) > tolerance then 'mismatch'
            when abs(difference) > tolerance then 'explained'
            else 'tied' end as status
from final
order by period_start, invoice_id, cost_center, service
