-- Why: the first schema. The raw log (messages) is the truth; sessions, prompt_turns, tool_calls,
-- tool_call_events and permission_requests are materialised from it by the recorder so they can
-- be queried without parsing JSON in SQL (one malformed row would fail a JSON query).
-- Times are integer microseconds since the Unix epoch (UTC).

CREATE TABLE connections (
    id               INTEGER PRIMARY KEY,
    label            TEXT,
    command          TEXT NOT NULL,          -- the agent's argv, as a JSON array
    cwd              TEXT,
    pid              INTEGER,                -- the agent's process id
    proxy_pid        INTEGER,
    started_at       INTEGER NOT NULL,
    ended_at         INTEGER,
    exit_code        INTEGER,                -- as acptap exits: the agent's status, 128+N for signal N
    exit_signal      INTEGER,
    protocol_version TEXT,                   -- JSON, as the agent answered initialize (else the client's)
    client_info      TEXT,                   -- JSON
    agent_info       TEXT,                   -- JSON
    complete         INTEGER NOT NULL DEFAULT 0,  -- 1 once the proxy ended having recorded every line
    lost_messages    INTEGER NOT NULL DEFAULT 0   -- lines that could not be recorded
);

CREATE TABLE messages (
    id            INTEGER PRIMARY KEY,
    connection_id INTEGER NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,          -- order of reading, across all three streams
    ts            INTEGER NOT NULL,
    direction     TEXT NOT NULL CHECK (direction IN ('c2a', 'a2c', 'stderr')),
    kind          TEXT NOT NULL,             -- request | response | notification | batch | invalid | stderr
    rpc_id        TEXT,                      -- the JSON-RPC id as JSON text: 3 or "abc"
    method        TEXT,                      -- for a response: the method of its request
    session_id    TEXT,
    tool_call_id  TEXT,
    reply_to_seq  INTEGER,                   -- for a response: the seq of its request
    raw           BLOB NOT NULL,             -- the exact bytes, line ending included
    size          INTEGER NOT NULL,          -- bytes on the wire (more than length(raw) if truncated)
    truncated     INTEGER NOT NULL DEFAULT 0,
    UNIQUE (connection_id, seq)
);
CREATE INDEX messages_session ON messages (session_id, connection_id, seq);
CREATE INDEX messages_method ON messages (method);

CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY,
    connection_id INTEGER NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    session_id    TEXT NOT NULL,
    cwd           TEXT,
    origin        TEXT NOT NULL,             -- new | load | seen
    created_at    INTEGER NOT NULL,
    UNIQUE (connection_id, session_id)
);
CREATE INDEX sessions_session_id ON sessions (session_id);

CREATE TABLE prompt_turns (
    id             INTEGER PRIMARY KEY,
    connection_id  INTEGER NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    session_id     TEXT,
    request_seq    INTEGER NOT NULL,
    response_seq   INTEGER,
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    duration_us    INTEGER,
    stop_reason    TEXT,
    error          TEXT,
    cancel_requested_at INTEGER,
    UNIQUE (connection_id, request_seq)
);

CREATE TABLE tool_calls (
    id              INTEGER PRIMARY KEY,
    connection_id   INTEGER NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    session_id      TEXT NOT NULL,
    tool_call_id    TEXT NOT NULL,
    title           TEXT,
    kind            TEXT,
    status          TEXT,
    content         TEXT,                    -- JSON array
    locations       TEXT,                    -- JSON array
    raw_input       TEXT,                    -- JSON
    raw_output      TEXT,                    -- JSON
    created_by      TEXT NOT NULL,           -- tool_call | tool_call_update | tool_call_content_chunk | request_permission
    first_seen_at   INTEGER NOT NULL,
    last_updated_at INTEGER NOT NULL,
    update_count    INTEGER NOT NULL,        -- messages that spoke about it, the first included
    UNIQUE (connection_id, session_id, tool_call_id)
);

CREATE TABLE tool_call_events (
    id             INTEGER PRIMARY KEY,
    tool_call_row  INTEGER NOT NULL REFERENCES tool_calls(id) ON DELETE CASCADE,
    message_id     INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    ts             INTEGER NOT NULL,
    update_kind    TEXT NOT NULL,
    changed        TEXT NOT NULL,            -- JSON array of the field names that changed
    status         TEXT                      -- the status after this update
);
CREATE INDEX tool_call_events_call ON tool_call_events (tool_call_row);

CREATE TABLE permission_requests (
    id                  INTEGER PRIMARY KEY,
    connection_id       INTEGER NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
    session_id          TEXT,
    tool_call_id        TEXT,
    request_seq         INTEGER NOT NULL,
    request_message_id  INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    response_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
    requested_at        INTEGER NOT NULL,
    decided_at          INTEGER,
    decision_us         INTEGER,             -- time to decision
    options             TEXT,                -- JSON array, as offered
    outcome             TEXT,                -- selected | cancelled | error | NULL while pending
    option_id           TEXT,
    option_kind         TEXT,                -- allow_once | allow_always | reject_once | reject_always | ...
    decided_by          TEXT,                -- client | policy | cancelled
    policy_rule         TEXT,
    policy_hash         TEXT,
    UNIQUE (connection_id, request_seq)
);
