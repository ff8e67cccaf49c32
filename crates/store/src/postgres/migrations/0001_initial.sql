-- agency blackboard on PostgreSQL, schema 1. The same records as the SQLite schema, in the same stored
-- forms, so both backends share their encoding code and their behaviour:
-- ids are 32 lower-case hex digits (a typed prefix is a LIKE prefix; COLLATE "C" lets the primary key's
-- index serve it); times are fixed-width RFC 3339 UTC text with nanoseconds (timestamptz keeps only
-- microseconds, and the round trip must be exact); JSON columns hold serde_json text.
-- `ord` is insertion order: ids are random, so "oldest first" breaks ties between records stamped in the
-- same instant on it.

CREATE TABLE runs (
    id          TEXT COLLATE "C" PRIMARY KEY,
    ord         BIGINT GENERATED ALWAYS AS IDENTITY,
    goal        TEXT NOT NULL,
    repo        TEXT NOT NULL,
    base_rev    TEXT,
    status      TEXT NOT NULL,
    config      TEXT NOT NULL,
    budgets     TEXT NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL,
    updated_at  TEXT COLLATE "C" NOT NULL
);

CREATE INDEX runs_created ON runs (created_at, ord);

CREATE TABLE briefs (
    id            TEXT COLLATE "C" PRIMARY KEY,
    ord           BIGINT GENERATED ALWAYS AS IDENTITY,
    run           TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    parent        TEXT COLLATE "C" REFERENCES briefs (id),
    tier          TEXT NOT NULL,
    workstream    TEXT NOT NULL,
    title         TEXT NOT NULL,
    personality   TEXT,
    goal_anchor   TEXT NOT NULL,
    instructions  TEXT NOT NULL,
    inputs        TEXT NOT NULL,
    variety       TEXT,
    contract      TEXT,
    retry_budget  BIGINT NOT NULL,
    attempt       BIGINT NOT NULL,
    depends_on    TEXT NOT NULL,
    branch        TEXT,
    worktree      TEXT,
    status        TEXT NOT NULL,
    teachback     TEXT NOT NULL,
    claimed_by    TEXT,
    created_at    TEXT COLLATE "C" NOT NULL,
    updated_at    TEXT COLLATE "C" NOT NULL
);

CREATE INDEX briefs_run ON briefs (run, created_at, ord);
CREATE INDEX briefs_claimable ON briefs (status, created_at, ord);

CREATE TABLE events (
    seq      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run      TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    ts       TEXT COLLATE "C" NOT NULL,
    brief    TEXT COLLATE "C",
    tier     TEXT,
    kind     TEXT NOT NULL,
    payload  TEXT NOT NULL
);

CREATE INDEX events_run ON events (run, seq);

CREATE TABLE gates (
    id          TEXT COLLATE "C" PRIMARY KEY,
    ord         BIGINT GENERATED ALWAYS AS IDENTITY,
    run         TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    kind        TEXT NOT NULL,
    tier        TEXT,
    brief       TEXT COLLATE "C" REFERENCES briefs (id),
    status      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    opened_at   TEXT COLLATE "C" NOT NULL,
    decided_at  TEXT COLLATE "C",
    decided_by  TEXT,
    note        TEXT
);

CREATE INDEX gates_run ON gates (run, status, opened_at, ord);

CREATE TABLE artifacts (
    id            TEXT COLLATE "C" PRIMARY KEY,
    ord           BIGINT GENERATED ALWAYS AS IDENTITY,
    run           TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    brief         TEXT COLLATE "C" REFERENCES briefs (id),
    name          TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size          BIGINT NOT NULL,
    bytes         BYTEA NOT NULL,
    created_at    TEXT COLLATE "C" NOT NULL
);

CREATE INDEX artifacts_run ON artifacts (run, name, created_at, ord);
