// Package localpg runs a PostgreSQL cluster from the server binaries
// installed on the machine, listening on a unix socket only. `hoox dev` keeps
// a persistent cluster under ./.hoox/pg with it, and the test harness starts
// throwaway clusters in temp dirs, so neither needs Docker nor a configured
// server.
package localpg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// serverBinaries are the programs a cluster needs; a directory is only
// usable when it holds all of them, because pg_ctl looks for postgres beside
// itself.
var serverBinaries = [...]string{"initdb", "pg_ctl", "postgres"}

// ErrNoBinaries reports that no PostgreSQL server binaries were found. Client
// packages (psql) are not enough: the server package provides initdb.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries (initdb, pg_ctl, postgres) found on PATH or under /usr/lib/postgresql/*/bin; install them, e.g. `apt-get install postgresql`")

// FindBinDir returns the directory holding initdb, pg_ctl and postgres: the
// one on PATH first (so an operator can pick a version), else the highest
// version under the Debian (/usr/lib/postgresql/N/bin) or RHEL
// (/usr/pgsql-N/bin) layout.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		// Debian links pg_ctl into /usr/bin through a wrapper or a symlink;
		// the resolved directory is the one that has postgres beside it.
		candidates := []string{filepath.Dir(p)}
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append([]string{filepath.Dir(resolved)}, candidates...)
		}
		for _, dir := range candidates {
			if hasServerBinaries(dir) {
				return dir, nil
			}
		}
	}
	var dirs []string
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"} {
		matches, _ := filepath.Glob(pattern) // the patterns are constant and valid
		dirs = append(dirs, matches...)
	}
	sort.SliceStable(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func hasServerBinaries(dir string) bool {
	for _, name := range serverBinaries {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionOf extracts the major version from .../postgresql/15/bin or
// /usr/pgsql-15/bin so that 15 sorts above 9.6 (a string sort would not).
func versionOf(binDir string) float64 {
	name := filepath.Base(filepath.Dir(binDir))
	name = strings.TrimPrefix(name, "pgsql-")
	v, err := strconv.ParseFloat(name, 64)
	if err != nil {
		return 0
	}
	return v
}

// errNoBinariesIn wraps ErrNoBinaries for an explicitly configured directory.
func errNoBinariesIn(dir string) error {
	return fmt.Errorf("%s lacks initdb, pg_ctl or postgres: %w", dir, ErrNoBinaries)
}
