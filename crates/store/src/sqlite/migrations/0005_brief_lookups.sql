-- agency blackboard, schema 5: briefs by status, by parent and by workstream.
-- The runner's passes read the briefs in one status (`verifying`), a brief's children, and whether a
-- workstream still has open briefs, instead of the whole run.
CREATE INDEX briefs_run_status ON briefs (run, status, created_at);
CREATE INDEX briefs_parent ON briefs (parent, created_at);
CREATE INDEX briefs_workstream ON briefs (run, workstream, status);
