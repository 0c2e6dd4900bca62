-- +goose Up
-- An exit leg carries its entry's strategy (exchange.Order.Strategy in its
-- order_spec), which a cancel naming a strategy reads (00046). Legs are
-- planned when the entry fills, from what its intent stored when it was
-- placed: an entry placed before 00046 (a resting limit, a fill not yet
-- recorded: its intent settled, so 00046 left its planned legs alone), or
-- by a replica of the release before during a rollout, planned its exits
-- without a strategy, and every strategy's cancel took them — another
-- strategy's stop-loss cancelled, or a shared Bybit trailing stop cleared.
-- A leg planned without one takes its entry's signal's strategy here, as
-- 00046 filled it in for what existed then; a signal without the key
-- (none read) leaves the leg as it was.
-- +goose StatementBegin
CREATE FUNCTION order_legs_strategy_of_signal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s text;
BEGIN
    IF jsonb_typeof(NEW.order_spec) = 'object' AND NOT NEW.order_spec ? 'Strategy' THEN
        SELECT i.signal->>'strategy' INTO s
        FROM dispatch_intents i
        WHERE i.client_order_id = NEW.parent_client_order_id AND i.signal ? 'strategy';
        IF FOUND THEN
            NEW.order_spec := NEW.order_spec || jsonb_build_object('Strategy', s);
        END IF;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER order_legs_strategy_of_signal BEFORE INSERT ON order_legs
    FOR EACH ROW EXECUTE FUNCTION order_legs_strategy_of_signal();

-- +goose Down
DROP TRIGGER order_legs_strategy_of_signal ON order_legs;
DROP FUNCTION order_legs_strategy_of_signal();
