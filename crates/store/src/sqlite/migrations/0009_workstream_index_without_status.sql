-- agency blackboard, schema 9: `briefs_workstream` keyed by creation time instead of status.
-- No statement searched it by status (a count's statuses are a list it filters on the rows), yet a key
-- holding `status` moves on every status change: a page of this index rewritten in most commits that
-- move a brief, about one WAL frame in twenty. Keyed `(run, workstream, created_at)` it changes only
-- when a brief is made, and it hands a workstream's briefs out in the order they are listed.
DROP INDEX briefs_workstream;
CREATE INDEX briefs_workstream ON briefs (run, workstream, created_at);
