-- grain: one row per serverless endpoint and UTC day (endpoint_id, day): billed worker ms split
-- into cold start, execution, rounding and idle (or unobserved), and the rate that priced them.
select endpoint_id, day, billed_ms, observed, cold_start_ms, execution_ms, rounding_ms, idle_ms,
       unobserved_ms, expected_idle_ms, worker_sessions, last_request_done_at, rate_per_second,
       worker_usd, total_usd
from intermediate.int_serverless__endpoint_days
