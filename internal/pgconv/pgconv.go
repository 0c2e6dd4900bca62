// Package pgconv hands pgx its own binary-encodable types for the values
// hoox writes on the hot path.
package pgconv

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"
)

// decimal.Decimal and uuid.UUID reach pgx as driver.Valuers, which pgx
// turns into text and parses again: on the hot path that was 8% of hoox's
// CPU. These functions hand pgx its own binary-encodable types instead.

// UUID encodes id for pgx.
func UUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

// UUIDPtr encodes id, NULL when nil.
func UUIDPtr(id *uuid.UUID) pgtype.UUID {
	if id == nil {
		return pgtype.UUID{}
	}
	return UUID(*id)
}

// Numeric encodes d exactly, as coefficient and exponent.
func Numeric(d decimal.Decimal) pgtype.Numeric {
	return pgtype.Numeric{Int: d.Coefficient(), Exp: d.Exponent(), Valid: true}
}

// NullNumeric encodes d, NULL when not valid.
func NullNumeric(d decimal.NullDecimal) pgtype.Numeric {
	if !d.Valid {
		return pgtype.Numeric{}
	}
	return Numeric(d.Decimal)
}
