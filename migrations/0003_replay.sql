-- Why: `acptap replay --as client` records the live run as a new connection; it names the
-- connection it replayed, so the two can be compared again later.

ALTER TABLE connections ADD COLUMN replay_of INTEGER REFERENCES connections(id) ON DELETE SET NULL;
