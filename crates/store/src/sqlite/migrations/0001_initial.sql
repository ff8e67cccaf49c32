-- agency blackboard, schema 1.
-- Ids are stored as 32 lower-case hex digits (UUID simple form), so a typed prefix is a GLOB prefix.
-- Times are RFC 3339 UTC with nanoseconds (fixed width, so text order is time order).
-- JSON columns hold serde_json text.

CREATE TABLE runs (
    id          TEXT PRIMARY KEY NOT NULL,
    goal        TEXT NOT NULL,
    repo        TEXT NOT NULL,
    base_rev    TEXT,
    status      TEXT NOT NULL,
    config      TEXT NOT NULL,
    budgets     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
) STRICT;

CREATE INDEX runs_created ON runs (created_at, id);

CREATE TABLE briefs (
    id            TEXT PRIMARY KEY NOT NULL,
    run           TEXT NOT NULL REFERENCES runs (id),
    parent        TEXT REFERENCES briefs (id),
    tier          TEXT NOT NULL,
    workstream    TEXT NOT NULL,
    title         TEXT NOT NULL,
    personality   TEXT,
    goal_anchor   TEXT NOT NULL,
    instructions  TEXT NOT NULL,
    inputs        TEXT NOT NULL,
    variety       TEXT,
    contract      TEXT,
    retry_budget  INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    depends_on    TEXT NOT NULL,
    branch        TEXT,
    worktree      TEXT,
    status        TEXT NOT NULL,
    teachback     TEXT NOT NULL,
    claimed_by    TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;

CREATE INDEX briefs_run ON briefs (run, created_at, id);
CREATE INDEX briefs_claimable ON briefs (status, created_at, id);

CREATE TABLE events (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    run      TEXT NOT NULL REFERENCES runs (id),
    ts       TEXT NOT NULL,
    brief    TEXT,
    tier     TEXT,
    kind     TEXT NOT NULL,
    payload  TEXT NOT NULL
) STRICT;

CREATE INDEX events_run ON events (run, seq);

CREATE TABLE gates (
    id          TEXT PRIMARY KEY NOT NULL,
    run         TEXT NOT NULL REFERENCES runs (id),
    kind        TEXT NOT NULL,
    tier        TEXT,
    brief       TEXT REFERENCES briefs (id),
    status      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    opened_at   TEXT NOT NULL,
    decided_at  TEXT,
    decided_by  TEXT,
    note        TEXT
) STRICT;

CREATE INDEX gates_run ON gates (run, status, opened_at, id);

CREATE TABLE artifacts (
    id            TEXT PRIMARY KEY NOT NULL,
    run           TEXT NOT NULL REFERENCES runs (id),
    brief         TEXT REFERENCES briefs (id),
    name          TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size          INTEGER NOT NULL,
    bytes         BLOB NOT NULL,
    created_at    TEXT NOT NULL
) STRICT;

CREATE INDEX artifacts_run ON artifacts (run, name, created_at, id);
