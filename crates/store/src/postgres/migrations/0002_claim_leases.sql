-- agency blackboard on PostgreSQL, schema 2: claims have leases.
-- A claim records when it was taken and until when it holds; the worker renews it while it works, and
-- `reclaim_expired` returns running briefs whose lease ended to pending (their worker is presumed gone).

ALTER TABLE briefs ADD COLUMN claimed_at TEXT COLLATE "C";
ALTER TABLE briefs ADD COLUMN lease_until TEXT COLLATE "C";

CREATE INDEX briefs_lease ON briefs (status, lease_until);
