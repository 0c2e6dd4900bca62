-- +goose Up
-- How many spot closes of the entry wrote their intent: the version a
-- close reads under the ledger's lock (db.LockLedgerSQL) and bumps, by
-- compare-and-set, in the statement that writes its intent. The lock is
-- the claim's session's: should that session be lost while the close
-- reads the venue, another close may take the lock, read the same entry
-- and sell the holding; the first close's intent then finds the version
-- moved and is not written, so nothing is sent twice. A constant default:
-- no table rewrite.
ALTER TABLE spot_ledger ADD COLUMN closes bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE spot_ledger DROP COLUMN closes;
