package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/nova-platform/nova/runner"
)

// classID is the first key of every advisory lock Nova takes ("NOVA").
// Terraform's pg backend locks with the one-bigint form, which PostgreSQL
// keeps apart from the two-int form used here, so the two never collide.
const classID = 0x4e4f5641

// initKey is the second key of the lock that keeps terraform inits of one
// database apart; contract keys are never 0.
const initKey = 0

// Lock is the cross-runner run lock in the pg backend's database.
type Lock struct {
	connStr string
}

var _ runner.StateLock = (*Lock)(nil)

// BackendLock returns the lock in the database the pg backend is
// configured with: conn_str among the -backend-config entries, else
// PG_CONN_STR in terraform's environment, as terraform reads them.
func BackendLock(backendConfig []string, env map[string]string) (*Lock, error) {
	conn := env["PG_CONN_STR"]
	for _, e := range backendConfig {
		if k, v, ok := strings.Cut(e, "="); ok && k == "conn_str" {
			conn = v
		}
	}
	if conn == "" {
		return nil, runner.Errorf(runner.BackendConfigInvalid, "the pg backend needs a connection string: --backend-config conn_str=… or PG_CONN_STR")
	}
	return &Lock{connStr: conn}, nil
}

// String keeps the connection string, which may hold a password, out of
// anything that prints a Lock.
func (l *Lock) String() string { return "postgres.Lock{" + l.where() + "}" }

// GoString is String, so %#v does not print the password either.
func (l *Lock) GoString() string { return l.String() }

// Lock implements runner.StateLock.
func (l *Lock) Lock(ctx context.Context, req runner.LockRequest) (func() error, error) {
	db, conn, err := l.connect(ctx, applicationName(req.Holder))
	if err != nil {
		return nil, err
	}
	fail := func(err error) (func() error, error) {
		conn.Close()
		db.Close()
		return nil, err
	}
	key := contractKey(req.Key)
	var ok bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, classID, key).Scan(&ok); err != nil {
		return fail(l.failed(ctx, "taking the run lock of "+req.Key, err))
	}
	if !ok {
		holder := l.holder(ctx, conn, key)
		if req.Wait <= 0 {
			return fail(locked(req.Key, holder, ""))
		}
		if req.Waiting != nil {
			req.Waiting(holder)
		}
		// The server waits, and ends the wait itself after lock_timeout:
		// the lock is taken the moment its holder lets go.
		if _, err := conn.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, false)`, strconv.FormatInt(max(req.Wait.Milliseconds(), 1), 10)); err != nil {
			return fail(l.failed(ctx, "setting the lock wait", err))
		}
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, classID, key); err != nil {
			var pe *pq.Error
			if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
				return fail(locked(req.Key, l.holder(context.WithoutCancel(ctx), conn, key), " after waiting "+req.Wait.String()))
			}
			return fail(l.failed(ctx, "waiting for the run lock of "+req.Key, err))
		}
		if _, err := conn.ExecContext(ctx, `SELECT set_config('lock_timeout', '0', false)`); err != nil {
			return fail(l.failed(ctx, "resetting the lock wait", err))
		}
	}
	return func() error {
		// Closing the session would release the lock too; unlocking first
		// makes the release not depend on how fast the server notices.
		_, uerr := conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, classID, key)
		cerr := conn.Close()
		db.Close()
		if err := errors.Join(uerr, cerr); err != nil {
			return fmt.Errorf("releasing the run lock of %s: %s", req.Key, l.scrub(err.Error()))
		}
		return nil
	}, nil
}

// SerializeInit runs init while no other run inits a backend of this
// database. The pg backend creates its schema, sequence and table with
// CREATE … IF NOT EXISTS, which PostgreSQL does not make safe against a
// concurrent twin: two first inits at once fail one of them with a
// duplicate key in pg_type.
func (l *Lock) SerializeInit(ctx context.Context, init func() error) error {
	db, conn, err := l.connect(ctx, "nova terraform init")
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, classID, initKey); err != nil {
		return l.failed(ctx, "waiting for other terraform inits of the database", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, classID, initKey)
	return init()
}

// connect opens one session, named for what it holds.
func (l *Lock) connect(ctx context.Context, name string) (*sql.DB, *sql.Conn, error) {
	connector, err := pq.NewConnector(l.connStr)
	if err != nil {
		return nil, nil, runner.Errorf(runner.BackendConfigInvalid, "reading the pg backend's connection string: %s", l.scrub(err.Error()))
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, l.failed(ctx, "connecting to the pg backend's database at "+l.where(), err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT set_config('application_name', $1, false)`, name); err != nil {
		conn.Close()
		db.Close()
		return nil, nil, l.failed(ctx, "naming the lock session", err)
	}
	return db, conn, nil
}

// holder names the session holding the lock of key, from its
// application_name (see applicationName).
func (l *Lock) holder(ctx context.Context, conn *sql.Conn, key int32) string {
	var name string
	var since time.Time
	err := conn.QueryRowContext(ctx, `SELECT a.application_name, a.backend_start
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = $1 AND l.objid::bigint = $2 AND l.objsubid = 2`,
		classID, key).Scan(&name, &since)
	if err != nil {
		return "another session (its name cannot be read: " + l.scrub(err.Error()) + ")"
	}
	h, ok := parseApplicationName(name)
	if !ok {
		return fmt.Sprintf("a session named %q (not a nova run)", name)
	}
	if h.Since.IsZero() {
		h.Since = since
	}
	return h.String()
}

func locked(key, holder, waited string) error {
	return runner.Errorf(runner.StateLocked, "contract and environment %s are locked by %s on another runner%s; it is released when that run ends (pass --lock-timeout to wait for it)", key, holder, waited)
}

// failed reports a database error without the connection string.
func (l *Lock) failed(ctx context.Context, activity string, err error) error {
	if ctx.Err() != nil {
		return runner.Errorf(runner.RunCancelled, "%s: %w", activity, ctx.Err())
	}
	return runner.Errorf(runner.StateLockFailed, "%s: %s", activity, l.scrub(err.Error()))
}

// scrub removes the password from a message, should a driver repeat it.
func (l *Lock) scrub(msg string) string {
	if pw := l.password(); pw != "" {
		msg = strings.ReplaceAll(msg, pw, "***")
	}
	return msg
}

func (l *Lock) password() string {
	if u, err := url.Parse(l.connStr); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		return pw
	}
	for _, f := range strings.Fields(l.connStr) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// where names the database without credentials.
func (l *Lock) where() string {
	if u, err := url.Parse(l.connStr); err == nil && u.Host != "" {
		return u.Host + u.Path
	}
	return "the configured database"
}

// contractKey maps a contract and environment to the lock's second key:
// 31 bits of FNV-1a, never 0 (initKey). Two keys that collide only make
// their runs wait for each other.
func contractKey(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	k := int32(h.Sum32() & 0x7fffffff)
	if k == initKey {
		k = 1
	}
	return k
}

// applicationName is how a holder names itself to other runners:
// "nova <run id> <pid> <host>", cut to the 63 bytes PostgreSQL keeps.
func applicationName(h runner.LockHolder) string {
	s := fmt.Sprintf("nova %s %d %s", orUnknown(h.RunID), h.PID, orUnknown(h.Host))
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

func parseApplicationName(s string) (runner.LockHolder, bool) {
	f := strings.Fields(s)
	if len(f) != 4 || f[0] != "nova" {
		return runner.LockHolder{}, false
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil {
		return runner.LockHolder{}, false
	}
	return runner.LockHolder{RunID: f[1], PID: pid, Host: f[3]}, true
}

func orUnknown(s string) string {
	if s == "" || strings.ContainsAny(s, " \t") {
		return "unknown"
	}
	return s
}
