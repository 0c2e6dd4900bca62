package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ObserveConfig says what to watch during one run.
type ObserveConfig struct {
	// DatabaseURL is the Postgres the run writes to.
	DatabaseURL string
	// PostmasterPID, when > 0, is the local cluster's postmaster: the CPU
	// of it and all its children (backends, WAL writer, checkpointer,
	// autovacuum) is counted.
	PostmasterPID int
	// HooxPID is the hoox process: 0 is this process (in-process hoox,
	// generator included), > 0 a child, < 0 none.
	HooxPID int
	// Pools are an in-process hoox's pools, by name, whose acquire waits
	// are reported.
	Pools map[string]*pgxpool.Pool
	// SampleEvery is how often pg_stat_activity is sampled (default 50
	// ms). Each sample costs its backend about 1 ms of CPU (Postgres
	// parses and plans the view's query for every sample, as a perf
	// profile of the observer's backend shows): every 10 ms it took
	// 10–12 % of a core from the run it measured.
	SampleEvery time.Duration
	// Statements reads pg_stat_statements (which the server must preload):
	// reset at the start, reported at the end.
	Statements bool
}

// StatementStat is one statement's share of a run, from pg_stat_statements.
type StatementStat struct {
	Query string
	Calls int64
	// Exec is the total execution time (planning excluded).
	Exec time.Duration
	Rows int64
	// WALBytes is the WAL the statement wrote (load-independent, unlike
	// Exec).
	WALBytes int64
}

// Observation is what Postgres, hoox's pools and the Go runtime did during
// one run: counters as differences between its start and its end, wait
// events as shares of the samples of active client backends.
type Observation struct {
	Elapsed time.Duration
	// PostgresCPU is the CPU time of the postmaster and its children.
	PostgresCPU time.Duration
	// HooxCPU is the CPU time of the hoox process (with the generator
	// when in-process).
	HooxCPU time.Duration
	// WALBytes is the distance the WAL insert position moved.
	WALBytes int64
	// WALRecords, WALFPI and WALSyncs come from pg_stat_wal.
	WALRecords, WALFPI, WALSyncs int64
	// Commits and RowsWritten (inserted, updated, deleted) come from
	// pg_stat_database (the observer itself works from another database).
	Commits, RowsWritten int64
	// CheckpointsTimed and CheckpointsReq come from pg_stat_bgwriter.
	CheckpointsTimed, CheckpointsReq int64
	// Samples is how many pg_stat_activity samples were taken;
	// AutovacuumSamples how many saw an autovacuum worker running.
	Samples, AutovacuumSamples int
	// ActiveSamples is the number of (sample, active client backend)
	// pairs; Waits counts them by "type:event" ("CPU" when not waiting).
	ActiveSamples int
	Waits         map[string]int
	// Pools are the in-process pools' acquire statistics.
	Pools []PoolObservation
	// GCCycles, GCPauseP99 and SchedLatencyP99 are the in-process Go
	// runtime's (zero for a child process).
	GCCycles        uint64
	GCPauseP99      time.Duration
	SchedLatencyP99 time.Duration
	// Calls is every statement executed (pg_stat_statements), and
	// Statements the costliest of them by execution time.
	Calls      int64
	Statements []StatementStat
	// MachineBusy, MachineIOWait and MachineSteal are shares of the
	// machine's CPU time over the run (/proc/stat): a round that ran while
	// the hypervisor took a fifth of the CPU (steal) is not comparable
	// with one that ran on the whole machine.
	MachineBusy, MachineIOWait, MachineSteal float64
	// Timeline is every sample, in order: what Postgres and the machine
	// were doing at each moment (PrintAround shows a run's slowest
	// stretch against it).
	Timeline []Tick
}

// Tick is one pg_stat_activity sample and the machine's CPU since the
// sample before it.
type Tick struct {
	At time.Time
	// Autovacuum is what each autovacuum worker ran ("VACUUM
	// public.trace_ids"), joined by "; ".
	Autovacuum string
	// Active is the number of active client backends, Waits what they
	// were waiting on ("LWLock:WALWrite 3, CPU 2").
	Active int
	Waits  string
	// Busy, IOWait and Steal are shares of the machine's CPU time since
	// the sample before (/proc/stat; steal is time the hypervisor gave
	// to others).
	Busy, IOWait, Steal float64
	// Claims is the connections the claims pool had handed out.
	Claims int32
	// Hoox is the hoox process's share of the machine's CPU since the
	// sample before (the generator's too when in-process); -1 unknown.
	Hoox float64
}

// PoolObservation is one pool's acquire statistics over a run.
type PoolObservation struct {
	Name string
	// Acquires is how many connections were acquired; Empty how many of
	// those found no idle connection and waited (or dialled).
	Acquires, Empty int64
	// Wait is the total time spent in acquires that waited.
	Wait time.Duration
	// MaxConns is the pool's size.
	MaxConns int32
}

// Observer watches one run; Stop ends it.
type Observer struct {
	cfg    ObserveConfig
	conn   *pgx.Conn
	start  snapshot
	cancel context.CancelFunc
	done   chan struct{}
	// database is the workload's database.
	database string

	mu                sync.Mutex
	samples, autovac  int
	active            int
	waits             map[string]int
	sampleErr         error
	timeline          []Tick
	lastStat          cpuStat
	lastHoox          time.Duration
	lastAt            time.Time
	poolsBefore       map[string]*pgxpool.Stat
	runtimeBefore     []metrics.Sample
	sampleConnBackend int32
}

// snapshot is the counters at one moment.
type snapshot struct {
	at                               time.Time
	pgCPU, hooxCPU, observerCPU      time.Duration
	walLSN                           int64
	walRecords, walFPI, walSyncs     int64
	commits, rows                    int64
	checkpointsTimed, checkpointsReq int64
	// machine is /proc/stat's CPU line (zero where there is none).
	machine cpuStat
}

var runtimeMetricNames = []string{"/gc/cycles/total:gc-cycles", "/gc/pauses:seconds", "/sched/latencies:seconds"}

// StartObserve takes the first snapshot and starts sampling
// pg_stat_activity.
func StartObserve(ctx context.Context, cfg ObserveConfig) (*Observer, error) {
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = 50 * time.Millisecond
	}
	// The observer works from the postgres database, so its own
	// transactions never count in the workload's pg_stat_database row.
	cc, err := pgx.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	target := cc.Database
	cc.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	o := &Observer{cfg: cfg, conn: conn, database: target, waits: map[string]int{}, done: make(chan struct{}),
		poolsBefore: map[string]*pgxpool.Stat{}, sampleConnBackend: int32(conn.PgConn().PID())}
	for name, p := range cfg.Pools {
		o.poolsBefore[name] = p.Stat()
	}
	if cfg.HooxPID == 0 {
		o.runtimeBefore = readRuntime()
	}
	if o.start, err = o.snap(ctx); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if cfg.Statements {
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("observer: pg_stat_statements (start the server with shared_preload_libraries=pg_stat_statements): %w", err)
		}
		if _, err := conn.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("observer: %w", err)
		}
	}
	o.lastStat, _ = readCPUStat()
	sctx, cancel := context.WithCancel(ctx)
	o.cancel = cancel
	go o.sample(sctx)
	return o, nil
}

const activitySQL = `SELECT coalesce(backend_type, ''), coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''),
  CASE WHEN backend_type = 'autovacuum worker' THEN coalesce(query, '') ELSE '' END
FROM pg_stat_activity WHERE pid <> pg_backend_pid()`

// sample counts, every SampleEvery, what each active client backend is
// waiting on and whether autovacuum runs.
func (o *Observer) sample(ctx context.Context) {
	defer close(o.done)
	tick := time.NewTicker(o.cfg.SampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Not ctx: pgx closes a connection whose query is cancelled, and
		// Stop still needs it.
		rows, err := o.conn.Query(context.WithoutCancel(ctx), activitySQL)
		if err != nil {
			if ctx.Err() == nil {
				o.mu.Lock()
				o.sampleErr = err
				o.mu.Unlock()
			}
			return
		}
		var autovac bool
		var active int
		var workers []string
		waits := map[string]int{}
		for rows.Next() {
			var backendType, state, waitType, wait, query string
			if err := rows.Scan(&backendType, &state, &waitType, &wait, &query); err != nil {
				break
			}
			switch {
			case backendType == "autovacuum worker":
				autovac = true
				workers = append(workers, strings.TrimPrefix(query, "autovacuum: "))
			case backendType == "client backend" && state == "active":
				active++
				key := "CPU"
				if waitType != "" {
					key = waitType + ":" + wait
				}
				waits[key]++
			}
		}
		rows.Close()
		tick := Tick{At: time.Now(), Autovacuum: strings.Join(workers, "; "), Active: active, Waits: topWaits(waits, 3)}
		if st, err := readCPUStat(); err == nil {
			tick.Busy, tick.IOWait, tick.Steal = st.since(o.lastStat)
			o.lastStat = st
		}
		if p := o.cfg.Pools["claims"]; p != nil {
			tick.Claims = p.Stat().AcquiredConns()
		}
		tick.Hoox = -1
		if cpu, err := o.hooxCPU(); err == nil && !o.lastAt.IsZero() {
			tick.Hoox = float64(cpu-o.lastHoox) / float64(tick.At.Sub(o.lastAt)) / float64(runtime.NumCPU())
			o.lastHoox, o.lastAt = cpu, tick.At
		} else if err == nil {
			o.lastHoox, o.lastAt = cpu, tick.At
		}
		o.mu.Lock()
		o.timeline = append(o.timeline, tick)
		o.samples++
		if autovac {
			o.autovac++
		}
		o.active += active
		for k, v := range waits {
			o.waits[k] += v
		}
		o.mu.Unlock()
	}
}

const countersSQL = `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint,
  w.wal_records, w.wal_fpi, w.wal_sync,
  d.xact_commit, d.tup_inserted + d.tup_updated + d.tup_deleted,
  b.checkpoints_timed, b.checkpoints_req
FROM pg_stat_wal w, pg_stat_database d, pg_stat_bgwriter b
WHERE d.datname = $1`

// snap reads the counters. pg_stat_clear_snapshot makes each read see the
// statistics as they are now, not as this transaction first saw them.
func (o *Observer) snap(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now()}
	if _, err := o.conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return s, fmt.Errorf("observer: %w", err)
	}
	err := o.conn.QueryRow(ctx, countersSQL, o.database).Scan(&s.walLSN, &s.walRecords, &s.walFPI, &s.walSyncs,
		&s.commits, &s.rows, &s.checkpointsTimed, &s.checkpointsReq)
	if err != nil {
		return s, fmt.Errorf("observer: %w", err)
	}
	return s, o.readCPU(&s)
}

// readCPU fills in s's CPU times: Postgres' (and the observer's own
// backend's) and hoox's.
func (o *Observer) readCPU(s *snapshot) (err error) {
	s.machine, _ = readCPUStat()
	if o.cfg.PostmasterPID > 0 {
		if s.pgCPU, s.observerCPU, err = o.postgresCPU(); err != nil {
			return err
		}
	}
	if o.cfg.HooxPID >= 0 {
		s.hooxCPU, err = o.hooxCPU()
	}
	return err
}

// hooxCPU is the hoox process's CPU time so far.
func (o *Observer) hooxCPU() (time.Duration, error) {
	switch {
	case o.cfg.HooxPID == 0:
		return processCPU("self")
	case o.cfg.HooxPID > 0:
		return processCPU(strconv.Itoa(o.cfg.HooxPID))
	}
	return 0, errors.New("no hoox process")
}

// statsSettle is how long a backend may hold its statistics before it
// reports them (PGSTAT_MIN_INTERVAL is 1 s) once it goes idle.
const statsSettle = 1200 * time.Millisecond

// Stop ends the run's observation and reports it. It waits statsSettle for
// the backends to flush their statistics, so call it after the load ended.
func (o *Observer) Stop(ctx context.Context) (Observation, error) {
	defer o.conn.Close(context.WithoutCancel(ctx))
	end := time.Now()
	o.cancel()
	<-o.done
	var obs Observation
	pools := make([]PoolObservation, 0, len(o.cfg.Pools))
	for name, p := range o.cfg.Pools {
		after, before := p.Stat(), o.poolsBefore[name]
		pools = append(pools, PoolObservation{Name: name, Acquires: after.AcquireCount() - before.AcquireCount(),
			Empty: after.EmptyAcquireCount() - before.EmptyAcquireCount(),
			Wait:  after.EmptyAcquireWaitTime() - before.EmptyAcquireWaitTime(), MaxConns: after.MaxConns()})
	}
	slices.SortFunc(pools, func(a, b PoolObservation) int { return strings.Compare(a.Name, b.Name) })
	obs.Pools = pools
	if o.cfg.HooxPID == 0 {
		obs.GCCycles, obs.GCPauseP99, obs.SchedLatencyP99 = runtimeDelta(o.runtimeBefore, readRuntime())
	}
	// CPU is read at the run's end, before the settle wait.
	var cpuEnd snapshot
	if err := o.readCPU(&cpuEnd); err != nil {
		return obs, err
	}
	select {
	case <-time.After(statsSettle):
	case <-ctx.Done():
		return obs, ctx.Err()
	}
	last, err := o.snap(ctx)
	if err != nil {
		return obs, err
	}
	if o.cfg.Statements {
		if obs.Calls, obs.Statements, err = o.statements(ctx); err != nil {
			return obs, err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sampleErr != nil {
		return obs, fmt.Errorf("observer: sample pg_stat_activity: %w", o.sampleErr)
	}
	s := o.start
	obs.Elapsed = end.Sub(s.at)
	// The observer's own backend (sampling pg_stat_activity) is not the
	// workload's.
	obs.PostgresCPU = (cpuEnd.pgCPU - s.pgCPU) - (cpuEnd.observerCPU - s.observerCPU)
	obs.HooxCPU = cpuEnd.hooxCPU - s.hooxCPU
	obs.MachineBusy, obs.MachineIOWait, obs.MachineSteal = cpuEnd.machine.since(s.machine)
	obs.WALBytes = last.walLSN - s.walLSN
	obs.WALRecords, obs.WALFPI, obs.WALSyncs = last.walRecords-s.walRecords, last.walFPI-s.walFPI, last.walSyncs-s.walSyncs
	obs.Commits = last.commits - s.commits
	obs.RowsWritten = last.rows - s.rows
	obs.CheckpointsTimed, obs.CheckpointsReq = last.checkpointsTimed-s.checkpointsTimed, last.checkpointsReq-s.checkpointsReq
	obs.Samples, obs.AutovacuumSamples, obs.ActiveSamples = o.samples, o.autovac, o.active
	obs.Waits = o.waits
	obs.Timeline = o.timeline
	return obs, nil
}

const statementsSQL = `SELECT query, calls, total_exec_time, rows, wal_bytes::bigint, sum(calls) OVER ()
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
  AND query NOT LIKE '%pg_stat%'
ORDER BY total_exec_time DESC`

// statements reads every statement's calls and the costliest ones.
func (o *Observer) statements(ctx context.Context) (int64, []StatementStat, error) {
	rows, err := o.conn.Query(ctx, statementsSQL, o.database)
	if err != nil {
		return 0, nil, fmt.Errorf("observer: pg_stat_statements: %w", err)
	}
	defer rows.Close()
	var total int64
	var top []StatementStat
	for rows.Next() {
		var st StatementStat
		var ms float64
		if err := rows.Scan(&st.Query, &st.Calls, &ms, &st.Rows, &st.WALBytes, &total); err != nil {
			return 0, nil, err
		}
		st.Exec = time.Duration(ms * float64(time.Millisecond))
		if len(top) < 10 {
			top = append(top, st)
		}
	}
	return total, top, rows.Err()
}

// postgresCPU is the CPU of the postmaster's tree and of the observer's
// own backend within it.
func (o *Observer) postgresCPU() (tree, observer time.Duration, err error) {
	if tree, err = treeCPU(o.cfg.PostmasterPID); err != nil {
		return 0, 0, err
	}
	observer, _ = processCPU(strconv.Itoa(int(o.sampleConnBackend)))
	return tree, observer, nil
}

// MicrosPer is d in µs per unit of work (0 without units).
func MicrosPer(d time.Duration, units int) float64 { return per(d.Microseconds(), units) }

func per(x int64, units int) float64 {
	if units <= 0 {
		return 0
	}
	return float64(x) / float64(units)
}

// PostgresCPUPer is Postgres' CPU µs per unit of work.
func (o Observation) PostgresCPUPer(units int) float64 {
	return MicrosPer(o.PostgresCPU, units)
}

// HooxCPUPer is the hoox process's CPU µs per unit of work.
func (o Observation) HooxCPUPer(units int) float64 { return MicrosPer(o.HooxCPU, units) }

// WALBytesPer is the WAL written per unit of work.
func (o Observation) WALBytesPer(units int) float64 { return per(o.WALBytes, units) }

// WALRecordsPer is the WAL records per unit of work.
func (o Observation) WALRecordsPer(units int) float64 { return per(o.WALRecords, units) }

// CommitsPer is the committed transactions per unit of work.
func (o Observation) CommitsPer(units int) float64 { return per(o.Commits, units) }

// RowsWrittenPer is the rows inserted, updated or deleted per unit of work.
func (o Observation) RowsWrittenPer(units int) float64 { return per(o.RowsWritten, units) }

// Print writes the observation in a few lines, per unit where it is a cost.
func (o Observation) Print(w io.Writer, units int, unit string) {
	if o.Elapsed == 0 {
		return
	}
	fmt.Fprintf(w, "postgres per %s: CPU %.0f µs, WAL %.0f bytes (%.1f records, %.2f full pages), %.2f commits, %.1f rows written; WAL syncs %d",
		unit, o.PostgresCPUPer(units), o.WALBytesPer(units), o.WALRecordsPer(units), per(o.WALFPI, units),
		o.CommitsPer(units), o.RowsWrittenPer(units), o.WALSyncs)
	if o.HooxCPU > 0 {
		fmt.Fprintf(w, "; hoox CPU %.0f µs per %s", o.HooxCPUPer(units), unit)
	}
	fmt.Fprintln(w)
	autovac := 0.0
	if o.Samples > 0 {
		autovac = 100 * float64(o.AutovacuumSamples) / float64(o.Samples)
	}
	if o.MachineBusy+o.MachineIOWait+o.MachineSteal > 0 {
		fmt.Fprintf(w, "machine during the run: CPU busy %.0f%% (steal %.0f%% of the machine's time), iowait %.0f%%\n", 100*o.MachineBusy, 100*o.MachineSteal, 100*o.MachineIOWait)
	}
	fmt.Fprintf(w, "postgres during the run: checkpoints %d timed, %d requested; autovacuum running in %.0f%% of %d samples",
		o.CheckpointsTimed, o.CheckpointsReq, autovac, o.Samples)
	if o.ActiveSamples > 0 {
		type kv struct {
			k string
			v int
		}
		var top []kv
		for k, v := range o.Waits {
			top = append(top, kv{k, v})
		}
		slices.SortFunc(top, func(a, b kv) int { return b.v - a.v })
		fmt.Fprintf(w, "; active backends (%.1f on average) were:", float64(o.ActiveSamples)/float64(max(o.Samples, 1)))
		for i, e := range top {
			if i == 6 {
				break
			}
			fmt.Fprintf(w, " %s %.0f%%", e.k, 100*float64(e.v)/float64(o.ActiveSamples))
		}
	}
	fmt.Fprintln(w)
	if len(o.Pools) > 0 {
		fmt.Fprintf(w, "pools:")
		for _, p := range o.Pools {
			mean := time.Duration(0)
			if p.Empty > 0 {
				mean = p.Wait / time.Duration(p.Empty)
			}
			fmt.Fprintf(w, " %s %d acquires, %d found none idle (mean wait %s, size %d);", p.Name, p.Acquires, p.Empty, mean.Round(time.Microsecond), p.MaxConns)
		}
		fmt.Fprintln(w)
	}
	if o.Calls > 0 {
		fmt.Fprintf(w, "statements: %.1f per %s; the costliest by execution time (µs per %s, calls per %s, WAL bytes per %s):\n", per(o.Calls, units), unit, unit, unit, unit)
		for _, st := range o.Statements {
			q := strings.Join(strings.Fields(st.Query), " ")
			if len(q) > 110 {
				q = q[:110] + "…"
			}
			fmt.Fprintf(w, "  %7.1f µs  %5.2f×  %6.0f B  %s\n", per(st.Exec.Microseconds(), units), per(st.Calls, units), per(st.WALBytes, units), q)
		}
	}
	if o.GCCycles > 0 || o.SchedLatencyP99 > 0 {
		fmt.Fprintf(w, "go runtime: %d GC cycles, GC pause p99 %s, goroutine scheduling latency p99 %s\n",
			o.GCCycles, o.GCPauseP99.Round(time.Microsecond), o.SchedLatencyP99.Round(time.Microsecond))
	}
}

// PostmasterPID reads the postmaster's PID from its data directory.
func PostmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("postmaster pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("postmaster pid: %w", err)
	}
	return pid, nil
}

// clockTick is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTick = 100

// processStat reads a process's own user and system time, its reaped
// children's, and its parent from /proc/<pid>/stat.
func processStat(pid string) (self, reaped time.Duration, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, 0, err
	}
	// The command name is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields after the name: state(0) ppid(1) … utime(11) stime(12)
	// cutime(13) cstime(14).
	if len(f) < 15 {
		return 0, 0, 0, errors.New("short /proc stat")
	}
	ticks := func(s string) time.Duration {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * time.Second / clockTick
	}
	ppid, _ = strconv.Atoi(f[1])
	return ticks(f[11]) + ticks(f[12]), ticks(f[13]) + ticks(f[14]), ppid, nil
}

// processCPU is a process's own user and system time.
func processCPU(pid string) (time.Duration, error) {
	self, _, _, err := processStat(pid)
	if err != nil {
		return 0, fmt.Errorf("process cpu: %w", err)
	}
	return self, nil
}

// treeCPU is the CPU time of a process, its live children and the
// children it has reaped (Postgres backends are the postmaster's direct
// children).
func treeCPU(root int) (time.Duration, error) {
	self, reaped, _, err := processStat(strconv.Itoa(root))
	if err != nil {
		return 0, fmt.Errorf("postgres cpu: %w", err)
	}
	total := self + reaped
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("postgres cpu: %w", err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cpu, _, ppid, err := processStat(e.Name())
		if err != nil || ppid != root {
			continue // gone, or not a child
		}
		total += cpu
	}
	return total, nil
}

func readRuntime() []metrics.Sample {
	s := make([]metrics.Sample, len(runtimeMetricNames))
	for i, n := range runtimeMetricNames {
		s[i].Name = n
	}
	metrics.Read(s)
	runtime.KeepAlive(s)
	return s
}

// runtimeDelta is the GC cycles and the p99 of the GC pauses and of the
// scheduling latencies observed between two reads.
func runtimeDelta(before, after []metrics.Sample) (cycles uint64, gcP99, schedP99 time.Duration) {
	if len(before) != len(after) || len(after) < 3 {
		return 0, 0, 0
	}
	if after[0].Value.Kind() == metrics.KindUint64 {
		cycles = after[0].Value.Uint64() - before[0].Value.Uint64()
	}
	return cycles, histP99(before[1], after[1]), histP99(before[2], after[2])
}

func histP99(before, after metrics.Sample) time.Duration {
	if before.Value.Kind() != metrics.KindFloat64Histogram || after.Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	b, a := before.Value.Float64Histogram(), after.Value.Float64Histogram()
	if len(a.Counts) != len(b.Counts) {
		return 0
	}
	var total uint64
	delta := make([]uint64, len(a.Counts))
	for i := range a.Counts {
		delta[i] = a.Counts[i] - b.Counts[i]
		total += delta[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(float64(total) * 0.99)
	var seen uint64
	for i, c := range delta {
		seen += c
		if seen > rank {
			upper := a.Buckets[i+1]
			if upper > 1e9 { // +Inf
				upper = a.Buckets[i]
			}
			return time.Duration(upper * float64(time.Second))
		}
	}
	return 0
}

// topWaits formats the n commonest waits, commonest first ("CPU 2,
// LWLock:WALWrite 1").
func topWaits(waits map[string]int, n int) string {
	keys := make([]string, 0, len(waits))
	for k := range waits {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := waits[b] - waits[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for i, k := range keys {
		if i == n {
			break
		}
		parts = append(parts, k+" "+strconv.Itoa(waits[k]))
	}
	return strings.Join(parts, ", ")
}

// cpuStat is the machine's CPU time from /proc/stat's first line, in
// clock ticks.
type cpuStat struct{ total, idle, iowait, steal uint64 }

func readCPUStat() (cpuStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuStat{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuStat{}, errors.New("/proc/stat: no cpu line")
	}
	var st cpuStat
	for i, x := range f[1:] {
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return cpuStat{}, err
		}
		// user nice system idle iowait irq softirq steal (guest time is
		// inside user).
		if i < 8 {
			st.total += v
		}
		switch i {
		case 3:
			st.idle = v
		case 4:
			st.iowait = v
		case 7:
			st.steal = v
		}
	}
	return st, nil
}

// since returns the shares of CPU time busy (neither idle nor iowait),
// in iowait and stolen between before and s.
func (s cpuStat) since(before cpuStat) (busy, iowait, steal float64) {
	d := float64(s.total - before.total)
	if d <= 0 || before.total == 0 {
		return 0, 0, 0
	}
	idle := float64(s.idle - before.idle)
	io := float64(s.iowait - before.iowait)
	return (d - idle - io) / d, io / d, float64(s.steal-before.steal) / d
}

// PrintAround writes the samples taken from `from` to `to`: what Postgres
// and the machine were doing during a run's slowest stretch.
func (o Observation) PrintAround(w io.Writer, began, from, to time.Time) {
	for _, t := range o.Timeline {
		if t.At.Before(from) || t.At.After(to) {
			continue
		}
		hoox := "   -"
		if t.Hoox >= 0 {
			hoox = fmt.Sprintf("%3.0f%%", 100*t.Hoox)
		}
		fmt.Fprintf(w, "  +%6.2fs  cpu busy %3.0f%% (hoox %s) iowait %2.0f%% steal %2.0f%%  claims %2d  active %2d  %s", t.At.Sub(began).Seconds(),
			100*t.Busy, hoox, 100*t.IOWait, 100*t.Steal, t.Claims, t.Active, t.Waits)
		if t.Autovacuum != "" {
			fmt.Fprintf(w, "  [autovacuum: %s]", t.Autovacuum)
		}
		fmt.Fprintln(w)
	}
}
