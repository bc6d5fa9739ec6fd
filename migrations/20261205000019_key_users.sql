-- A key may be bound to one end user of its tenant: it then reaches that user only.
ALTER TABLE api_keys ADD COLUMN user_id text;
