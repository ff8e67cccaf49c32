-- agency blackboard, schema 2: "oldest first" ties break on insertion order.
-- Ids are random (UUIDv4), so (created_at, id) no longer orders rows stamped in the same instant as they
-- were written. Every list now orders by (time, rowid): the rowid SQLite gives each row in these tables
-- grows with every insert (nothing is ever deleted), and a VACUUM that renumbers rowids copies rows in
-- rowid order, so their relative order, which is all the queries use, survives.
-- An index's entries end with the rowid, so dropping `id` from the keys makes them serve the new order.

DROP INDEX runs_created;
CREATE INDEX runs_created ON runs (created_at);

DROP INDEX briefs_run;
CREATE INDEX briefs_run ON briefs (run, created_at);
DROP INDEX briefs_claimable;
CREATE INDEX briefs_claimable ON briefs (status, created_at);

DROP INDEX gates_run;
CREATE INDEX gates_run ON gates (run, status, opened_at);

DROP INDEX artifacts_run;
CREATE INDEX artifacts_run ON artifacts (run, name, created_at);
