-- agency blackboard, schema 10: claims have generations (fenced writes).
-- Every claim of a brief takes the next generation. A claim holder's writes for its brief check, in the
-- same transaction, that the brief is still claimed by it in that generation: a runner woken after its
-- claim was taken back (and maybe claimed again, even by itself) writes nothing more for the brief.
-- Briefs of older blackboards start at generation 0; their next claim takes 1.

ALTER TABLE briefs ADD COLUMN claim_generation INTEGER NOT NULL DEFAULT 0;
