-- agency blackboard, schema 7: two fewer indexes keyed by a brief's status.
-- Every status change rewrites a page (often two: the old key's and the new one's) of each index whose key
-- holds `status`, in every commit that moves a brief. `briefs_claimable (status, created_at)` and
-- `briefs_lease (status, lease_until)` served only the claim and the reclaim of expired leases, and both are
-- asked for one run, which `briefs_run_status (run, status, created_at)` answers in the same order; asked
-- for every run they go through `runs` to that index. `plans.rs` pins those plans.
DROP INDEX briefs_claimable;
DROP INDEX briefs_lease;
