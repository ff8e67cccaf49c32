-- agency blackboard, schema 11: placement.
-- `placement_needs`: the labels a run's workstream needs of the runner that takes its briefs (team.yaml
-- `placement.labels`; the workstream '*' stands for every workstream of the run). A claim takes only briefs
-- whose every needed label the claimer offers.
-- `runner_offers`: what each runner of a run offers (its tiers and labels, as JSON) and when it last said
-- so; the driver reads the live ones to say why a brief nobody can take waits.

CREATE TABLE placement_needs (
    run         TEXT NOT NULL REFERENCES runs (id),
    workstream  TEXT NOT NULL,
    label       TEXT NOT NULL,
    PRIMARY KEY (run, workstream, label)
) STRICT;

CREATE TABLE runner_offers (
    run      TEXT NOT NULL REFERENCES runs (id),
    runner   TEXT NOT NULL,
    offer    TEXT NOT NULL,
    seen_at  TEXT NOT NULL,
    PRIMARY KEY (run, runner)
) STRICT;
