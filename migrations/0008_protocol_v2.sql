-- ACP v2 permission requests (issue 26): v2 drops the v1 `toolCall` and gives the prompt's
-- `title`, an optional `description` and a `subject` (`command`, `tool_call`, or another type,
-- kept raw as JSON). NULL for a v1 request. `tool_call_id` is the subject's tool call when it
-- names one (a `tool_call` subject's `toolCall.toolCallId`, a `command` subject's `toolCallId`).
ALTER TABLE permission_requests ADD COLUMN title TEXT;
ALTER TABLE permission_requests ADD COLUMN description TEXT;
ALTER TABLE permission_requests ADD COLUMN subject TEXT;

-- A v2 turn ends with the session's `idle` state update, not with the prompt's answer: the turn
-- that a line ended is found by its `response_seq` (`acptap tail`).
CREATE INDEX prompt_turns_response ON prompt_turns (connection_id, response_seq);
