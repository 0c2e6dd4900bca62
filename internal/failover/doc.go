// Package failover holds the database failover drill (failover_test.go): a
// real primary and a streaming standby from the installed PostgreSQL
// binaries, hoox pointed at both with target_session_attrs=read-write, the
// standby promoted under load. docs/FAILOVER.md has its figures and what
// each managed offering promises. There is no Go API here.
package failover
