-- +goose Up
-- A per-installation random value that namespaces client order IDs:
-- SHA-256(deployment ‖ lock key ‖ n). Two installations trading on one
-- venue account (staging and production) then never derive the same ID,
-- so neither adopts the other's order. Created once, here, and never
-- changed: a changed value would make a resend derive a new ID. Intents
-- already open keep their stored IDs (a resend reuses the stored ID).
INSERT INTO settings (key, value, updated_by)
VALUES ('deployment', jsonb_build_object('id', replace(gen_random_uuid()::text, '-', '')), 'migration')
ON CONFLICT (key) DO NOTHING;

-- +goose Down
DELETE FROM settings WHERE key = 'deployment';
