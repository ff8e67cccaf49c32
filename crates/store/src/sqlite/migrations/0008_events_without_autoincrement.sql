-- agency blackboard, schema 8: `events.seq` is the plain rowid key, without AUTOINCREMENT.
-- AUTOINCREMENT keeps the highest seq ever handed out in `sqlite_sequence`, so every commit that appended
-- an event also rewrote that table's page: one page in nine of all the runner wrote. Events are never
-- deleted, so the plain key (the highest seq so far, plus one) hands out the same numbers, strictly
-- increasing; a transaction that rolls back gives its numbers back either way. The table is copied once,
-- seqs and all.
CREATE TABLE events_v8 (
    seq      INTEGER PRIMARY KEY,
    run      TEXT NOT NULL REFERENCES runs (id),
    ts       TEXT NOT NULL,
    brief    TEXT,
    tier     TEXT,
    kind     TEXT NOT NULL,
    payload  TEXT NOT NULL
) STRICT;
INSERT INTO events_v8 (seq, run, ts, brief, tier, kind, payload)
    SELECT seq, run, ts, brief, tier, kind, payload FROM events ORDER BY seq;
DROP TABLE events;
ALTER TABLE events_v8 RENAME TO events;
CREATE INDEX events_run ON events (run, seq);
