-- grain: one row per elementary segment of billed instance compute (resource_id, seg_start):
-- the timeline `recon report` draws and `recon whatif` prices. A segment lies inside one bucket,
-- one compute session and one UTC day, with one category; a resource-day's segments add up to its
-- billed compute (marts.billed_segments sums them by category).
select resource_id, session_id, day, seg_start, seg_end, category, ms, amount_usd, expected_usd
from intermediate.int_resource__instance_segments
