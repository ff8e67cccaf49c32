-- agency blackboard, schema 3: claims have leases.
-- A claim records when it was taken and until when it holds; the worker renews it while it works, and
-- `reclaim_expired` returns running briefs whose lease ended to pending (their worker is presumed gone).
-- Briefs claimed before this migration have no lease and are never reclaimed.

ALTER TABLE briefs ADD COLUMN claimed_at TEXT;
ALTER TABLE briefs ADD COLUMN lease_until TEXT;

CREATE INDEX briefs_lease ON briefs (status, lease_until);
