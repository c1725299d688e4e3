-- Why: `policy replay` decides again on exactly what the live tap decided on (the merged tool
-- call, the session's cwd, the agent's name), so an unchanged policy reproduces every recorded
-- decision. JSON of `policy::DecisionInput`; NULL for requests recorded before this column.

ALTER TABLE permission_requests ADD COLUMN policy_input TEXT;
