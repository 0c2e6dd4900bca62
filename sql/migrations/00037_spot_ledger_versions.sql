-- +goose Up
-- The spot ledger's version (00033's spot_ledger.closes) moves to a table
-- of its own. A close bumps it, by compare-and-set, in the statement that
-- writes its intent, on another session than its claim's; the entry's own
-- row is also updated by the fill trigger, inside whichever transaction
-- records a fill. When that transaction is the close's own claim (a
-- window-mode execution recovering the earlier execution's sell before it
-- sizes), the intent's write waited on its own claim's row lock until its
-- lock_timeout and answered 503 on every resend. The version row is
-- touched by nothing but closes' intents, so they wait only for each other.
-- A row exists once a close of the entry wrote its intent; none reads as
-- version 0.
CREATE TABLE spot_ledger_versions (
    exchange text   NOT NULL,
    mode     text   NOT NULL,
    symbol   text   NOT NULL,
    strategy text   NOT NULL,
    closes   bigint NOT NULL,
    PRIMARY KEY (exchange, mode, symbol, strategy)
);
INSERT INTO spot_ledger_versions (exchange, mode, symbol, strategy, closes)
SELECT exchange, mode, symbol, strategy, closes FROM spot_ledger WHERE closes > 0;
-- Dropped, not left behind: a replica of the previous release still running
-- during a rolling deploy fails its spot closes (503, nothing placed)
-- instead of comparing a version no new replica moves.
ALTER TABLE spot_ledger DROP COLUMN closes;

-- +goose Down
ALTER TABLE spot_ledger ADD COLUMN closes bigint NOT NULL DEFAULT 0;
UPDATE spot_ledger l SET closes = v.closes
FROM spot_ledger_versions v
WHERE v.exchange = l.exchange AND v.mode = l.mode AND v.symbol = l.symbol AND v.strategy = l.strategy;
DROP TABLE spot_ledger_versions;
