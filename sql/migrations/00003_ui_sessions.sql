-- +goose Up
-- ui_sessions are the operator page's logins. Only a SHA-256 hash of the
-- cookie's token is stored, so a read of this table (a backup, a replica)
-- cannot be replayed as a login. Stored in Postgres so sessions survive a
-- restart and every replica accepts them.
CREATE TABLE ui_sessions (
    token_hash   bytea       PRIMARY KEY CHECK (length(token_hash) = 32),
    csrf_token   text        NOT NULL,
    source_ip    inet,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX ui_sessions_expires_at_idx ON ui_sessions (expires_at);

-- ui_login_failures throttle guessing of the admin token per client address,
-- shared by every replica.
CREATE TABLE ui_login_failures (
    client_ip       text        PRIMARY KEY,
    failures        integer     NOT NULL,
    last_failure_at timestamptz NOT NULL,
    blocked_until   timestamptz
);

-- +goose Down
DROP TABLE ui_login_failures;
DROP TABLE ui_sessions;
