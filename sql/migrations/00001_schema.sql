-- +goose Up
-- trace_ids is the dedup record: one row per claimed signal, deleted by the
-- purge once expires_at has passed. Nothing here keys on a sequence shared with
-- another table, so trace_id can later be a distribution column.
CREATE TABLE trace_ids (
    trace_id        text        PRIMARY KEY,
    fingerprint     text        NOT NULL,
    mode            text        NOT NULL CHECK (mode IN ('live', 'test')),
    key_source      text        NOT NULL CHECK (key_source IN ('client', 'derived', 'window')),
    status          text        NOT NULL CHECK (status IN ('claimed', 'dispatched', 'rejected', 'reconciling', 'failed')),
    exchange        text        NOT NULL,
    symbol          text        NOT NULL,
    action          text        NOT NULL,
    client_order_id text,
    order_id        uuid,
    signal          jsonb       NOT NULL,
    source_ip       inet,
    signal_time     timestamptz,
    received_at     timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL
);
CREATE INDEX trace_ids_expires_at_idx ON trace_ids (expires_at);
CREATE INDEX trace_ids_window_idx ON trace_ids (fingerprint, received_at DESC) WHERE key_source = 'window';
CREATE INDEX trace_ids_received_at_idx ON trace_ids (received_at DESC, trace_id DESC);

-- orders outlive their trace: the purge never touches them.
CREATE TABLE orders (
    id                uuid           PRIMARY KEY,
    trace_id          text           NOT NULL,
    client_order_id   text           NOT NULL UNIQUE,
    exchange          text           NOT NULL,
    symbol            text           NOT NULL,
    action            text           NOT NULL,
    side              text           CHECK (side IN ('buy', 'sell')), -- null: a close refused before a side was known
    order_type        text           NOT NULL CHECK (order_type IN ('market', 'limit')),
    quantity          numeric(38,18) NOT NULL CHECK (quantity > 0),
    price             numeric(38,18) CHECK (price > 0),
    leverage          integer        CHECK (leverage BETWEEN 1 AND 125),
    mode              text           NOT NULL CHECK (mode IN ('live', 'test')),
    status            text           NOT NULL CHECK (status IN ('filled', 'open', 'rejected')),
    exchange_order_id text,
    fill_price        numeric(38,18),
    reject_reason     text,
    created_at        timestamptz    NOT NULL DEFAULT now()
);
CREATE INDEX orders_trace_id_idx ON orders (trace_id);
CREATE INDEX orders_created_at_idx ON orders (created_at DESC, id DESC);

-- trace_events is the append-only audit trail. Its id orders events of one
-- trace; it is not referenced from any other table.
CREATE TABLE trace_events (
    id        bigint      GENERATED ALWAYS AS IDENTITY,
    trace_id  text        NOT NULL,
    event     text        NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    source_ip inet,
    detail    jsonb       NOT NULL DEFAULT '{}',
    PRIMARY KEY (trace_id, id)
);
CREATE INDEX trace_events_at_idx ON trace_events (at);

-- settings hold what must survive restarts and be shared by every replica
-- (the kill switch).
CREATE TABLE settings (
    key        text        PRIMARY KEY,
    value      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text        NOT NULL DEFAULT ''
);

-- paper_orders is the paper venue's own book. The venue writes it on its own
-- connection, so a rolled-back gateway transaction does not undo a fill, just
-- as with a real exchange.
CREATE TABLE paper_orders (
    client_order_id   text           PRIMARY KEY,
    exchange_order_id text           NOT NULL UNIQUE,
    symbol            text           NOT NULL,
    side              text           NOT NULL,
    order_type        text           NOT NULL,
    quantity          numeric(38,18) NOT NULL,
    price             numeric(38,18),
    fill_price        numeric(38,18),
    status            text           NOT NULL,
    test              boolean        NOT NULL,
    created_at        timestamptz    NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE paper_orders;
DROP TABLE settings;
DROP TABLE trace_events;
DROP TABLE orders;
DROP TABLE trace_ids;
