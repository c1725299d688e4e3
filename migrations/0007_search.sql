-- Full-text search over what was recorded (`acptap search`). The index is filled by the search
-- itself (and by `acptap migrate`): each time, the messages past `search_indexed.last_message_id`,
-- so the recorder never pays for it and a database recorded before this version is indexed on
-- its first search. Contentless (it holds the tokens, not a second copy of the text), with
-- deletes by rowid, so pruning a connection takes its lines out of the index (the trigger).
-- The rowid of each entry is the message's id.

CREATE VIRTUAL TABLE IF NOT EXISTS search_text USING fts5(
    text,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE IF NOT EXISTS search_indexed (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    last_message_id INTEGER NOT NULL
);
INSERT OR IGNORE INTO search_indexed VALUES (1, 0);

CREATE TRIGGER IF NOT EXISTS messages_leave_search AFTER DELETE ON messages BEGIN
    DELETE FROM search_text WHERE rowid = old.id;
END;
