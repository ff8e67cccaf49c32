-- agency blackboard on PostgreSQL, schema 6: two fewer indexes keyed by a brief's status, as in SQLite's
-- schema 7. Every status change writes new entries into each index on `status`; `briefs_claimable` and
-- `briefs_lease` served only the claim and the reclaim of expired leases, which are asked for one run and
-- are planned with its value (`run = $1`), so `briefs_run_status (run, status, created_at, ord)` answers
-- them in the same order.
DROP INDEX briefs_claimable;
DROP INDEX briefs_lease;
