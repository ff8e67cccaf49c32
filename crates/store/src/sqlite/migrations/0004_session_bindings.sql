-- agency blackboard, schema 4: session bindings.
-- A plain Claude Code session (no runner) — or one sub-agent in it — is bound to the brief it works on, so
-- `agency hook` can find the teachback state from the event's session_id / agent_id. `agent` is '' for a
-- binding of the whole session.

CREATE TABLE session_bindings (
    session   TEXT NOT NULL,
    agent     TEXT NOT NULL,
    brief     TEXT NOT NULL REFERENCES briefs (id),
    bound_at  TEXT NOT NULL,
    PRIMARY KEY (session, agent)
) STRICT;
