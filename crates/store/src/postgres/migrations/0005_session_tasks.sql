-- agency blackboard on PostgreSQL, schema 5: session tasks.
-- A task a plain client session created (Claude Code's TaskCreate, validated by `agency hook`) is opened as
-- a brief; this records which, so the agent that takes the task (its `TaskUpdate` to in_progress) can be
-- bound to that brief. `task` is the client's task id within the session.

CREATE TABLE session_tasks (
    session   TEXT NOT NULL,
    task      TEXT NOT NULL,
    brief     TEXT COLLATE "C" NOT NULL REFERENCES briefs (id),
    bound_at  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session, task)
);
