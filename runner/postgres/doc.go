// Package postgres keeps runs on many runners apart when a contract's
// Terraform state lives in PostgreSQL (Terraform's pg backend): a session
// advisory lock per contract and environment, taken in the state's own
// database and held from before the run's plan until its outcome is
// recorded.
//
// Terraform's pg backend locks the state for one command at a time, and
// its lock error describes the run that asked, not the one holding the
// lock (advisory locks carry no data). Nova's lock names its holder through
// the holding session's application_name, which pg_stat_activity shows to
// every user of the database. A session lock dies with its connection, so
// a runner that crashes or is cancelled leaves nothing to clear.
//
// The connection string is the backend's own (conn_str, else PG_CONN_STR)
// and never appears in an error.
package postgres
