-- +goose Up
-- Issue 19: a signal's follow-up orders ("legs": the further parts of a
-- split close, …). The legs are planned once, before anything is sent, in
-- the primary order's intent (order_spec->'Legs'); each leg has its own
-- client order ID and, once planned, its own row here, which is its intent:
-- sent_at is set (durably) before the leg's order is sent, and outcome once
-- its order is recorded.
--
-- orders.role says what an order is to its trace: the signal's own order
-- (primary) or one of its legs.
ALTER TABLE orders ADD COLUMN role text NOT NULL DEFAULT 'primary'
    CHECK (role IN ('primary', 'close_part', 'take_profit', 'stop_loss', 'trailing_stop'));

CREATE TABLE order_legs (
    client_order_id        text        PRIMARY KEY,
    parent_client_order_id text        NOT NULL,
    seq                    integer     NOT NULL,
    role                   text        NOT NULL,
    trace_id               text        NOT NULL,
    lock_key               text        NOT NULL,
    exchange               text        NOT NULL,
    mode                   text        NOT NULL,
    order_spec             jsonb       NOT NULL,
    -- NULL: planned, never sent. Set (durably) before each send.
    sent_at                timestamptz,
    attempts               integer     NOT NULL DEFAULT 0,
    outcome                text        CHECK (outcome IN ('dispatched', 'rejected', 'not_placed', 'key_reused', 'failed')),
    created_at             timestamptz NOT NULL DEFAULT now(),
    settled_at             timestamptz,
    UNIQUE (parent_client_order_id, seq)
);
-- The sweeper's work list: legs not settled yet.
CREATE INDEX order_legs_open_idx ON order_legs (created_at) WHERE outcome IS NULL;

-- Every path that records a primary order (the gateway, the reconcile
-- job, the sweeper, a claim recovering an earlier window execution) plans
-- its legs in the same commit: a primary that filled and whose intent
-- carries legs gets one order_legs row per leg. A leg's own order row has
-- no intent in dispatch_intents, so it plans nothing.
-- +goose StatementBegin
CREATE FUNCTION plan_order_legs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.role = 'primary' AND NEW.status = 'filled' THEN
        INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
                                exchange, mode, order_spec)
        SELECT l.leg->'Order'->>'ClientOrderID', i.client_order_id, l.n::integer, l.leg->>'Role', NEW.trace_id,
               i.lock_key, i.exchange, i.mode, l.leg->'Order'
        FROM dispatch_intents i
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN i.order_spec->'Legs' ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS l(leg, n)
        WHERE i.client_order_id = NEW.client_order_id
        ON CONFLICT (client_order_id) DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER orders_plan_legs AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.role = 'primary' AND NEW.status = 'filled') EXECUTE FUNCTION plan_order_legs();

-- +goose Down
DROP TRIGGER orders_plan_legs ON orders;
DROP FUNCTION plan_order_legs();
DROP TABLE order_legs;
ALTER TABLE orders DROP COLUMN role;
