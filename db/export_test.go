package db

// StrandedIntentsSQL and LeftOpenIntentsSQL expose the sweeper's scans for
// their plan test.
const (
	StrandedIntentsSQL = strandedIntentsSQL
	LeftOpenIntentsSQL = leftOpenIntentsSQL
)

// The audit trail's readers, for their plan test.
const (
	TraceEventsSQL  = traceEventsSQL
	StatsEventsSQL  = statsEventsSQL
	SeriesCountsSQL = seriesCountsSQL
)

// The purge's page sweep, for its plan test.
const PurgeTracePagesSQL = purgeTracePagesSQL

// MaxDirtyPages is about the most heap pages one purge transaction deletes from.
const MaxDirtyPages = maxDirtyPages

// The purge's pass in expiry order, for its plan test.
const PurgeTracesSQL = purgeTracesSQL

// PurgeAuditSQL is the audit-retention purge of one audit table.
func PurgeAuditSQL(table string) string { return purgeAuditSQL(table) }

// The readers of the reconciling traces (the sweeper's, a scrape's), for
// their plan test.
const (
	OrphanReconcilingSQL = orphanReconcilingSQL
	StateSQL             = stateSQL
)

// SymbolKeySQL is exchange.SymbolKey in SQL, for its test.
func SymbolKeySQL(col string) string { return symbolKeySQL(col) }
