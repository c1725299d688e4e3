-- Why: every read of `messages` names its connection (`WHERE connection_id = ? ... ORDER BY seq`),
-- which the UNIQUE (connection_id, seq) index serves. The two other indexes were never used by a
-- query, yet each recorded line paid for them: they were half of the recorder's SQLite time
-- (issue 12's profile: 9.2 -> 5.8 µs per 1 KiB line without them).

DROP INDEX IF EXISTS messages_session;
DROP INDEX IF EXISTS messages_method;
