-- Why: policies answer permission requests. Lines acptap writes itself (its answers) and lines it
-- withheld from the other side (the requests it answered) are marked, and every permission request
-- keeps what the policy said about it, even when the user decided (ask, --shadow).

ALTER TABLE messages ADD COLUMN origin TEXT NOT NULL DEFAULT 'peer';   -- peer | acptap
ALTER TABLE messages ADD COLUMN forwarded INTEGER NOT NULL DEFAULT 1;  -- 0: withheld

ALTER TABLE permission_requests ADD COLUMN policy_decision TEXT;   -- allow | deny | ask
ALTER TABLE permission_requests ADD COLUMN policy_reason TEXT;
ALTER TABLE permission_requests ADD COLUMN policy_option_id TEXT;  -- the option it chose
ALTER TABLE permission_requests ADD COLUMN policy_shadow INTEGER;  -- 1: --shadow, forwarded anyway
