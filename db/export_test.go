package db

// StrandedIntentsSQL exposes the sweeper's scan for its plan test.
const StrandedIntentsSQL = strandedIntentsSQL
