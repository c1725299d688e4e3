-- Why: a connection without `ended_at` is either still being recorded or its proxy died (kill -9,
-- a crash, a reboot). The proxy's pid alone cannot tell (pids are reused); the pid with the
-- boot and the process's start time can: `BOOT_ID:START_TICKS` of the recording process.

ALTER TABLE connections ADD COLUMN proxy_identity TEXT;
