#!/usr/bin/env python3
"""Fills a blackboard up to N briefs by copying one brief `agency teachback start` wrote (so every column has
the exact format the store writes), each copy with a fresh id. Usage: seed.py DB BRIEF_ID N"""
import sqlite3
import sys
import uuid

db_path, brief, count = sys.argv[1], sys.argv[2].replace("-", ""), int(sys.argv[3])
db = sqlite3.connect(db_path)
columns = [row[1] for row in db.execute("PRAGMA table_info(briefs)")]
rest = ", ".join(c for c in columns if c != "id")
with db:
    for _ in range(count - 1):
        db.execute(f"INSERT INTO briefs (id, {rest}) SELECT ?, {rest} FROM briefs WHERE id = ?",
                   (uuid.uuid4().hex, brief))
print(db.execute("SELECT count(*) FROM briefs").fetchone()[0])
