package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Figures from docs/BENCHMARKS.md that the resources are sized on.
const (
	// hoox's own CPU per new signal (median round of the suite).
	cpuPerSignal = 641 * time.Microsecond
	// the rate the latency figures are quoted at (README: Performance).
	benchRate = 300
	// resident memory at maximum closed-loop throughput: 35 MiB (--spawn),
	// 50 MiB in an earlier round; the larger is the floor of the request.
	measuredRSSMiB = 50
	// in-process memory under a 1,000/s overload, load generator
	// included: the limit must not kill a replica that sheds load.
	overloadMiB = 267
)

// manifests is one rendered overlay.
type manifests struct {
	t    *testing.T
	objs []object
}

// object is the part of a Kubernetes object these tests read.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec json.RawMessage   `json:"spec"`
	Data map[string]string `json:"data"`
}

// render runs kustomize on an overlay directory in-process (kustomize's Go
// API: no kubectl needed), as `kubectl kustomize deploy/<dir>` would.
func render(t *testing.T, dir string) *manifests {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize %s", dir)
	out := &manifests{t: t}
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		var o object
		require.NoError(t, json.Unmarshal(b, &o))
		out.objs = append(out.objs, o)
	}
	return out
}

func (m *manifests) find(kind, name string) (object, bool) {
	for _, o := range m.objs {
		if o.Kind == kind && (o.Metadata.Name == name || strings.HasPrefix(o.Metadata.Name, name+"-") && kind == "ConfigMap") {
			return o, true
		}
	}
	return object{}, false
}

func (m *manifests) get(kind, name string, into any) object {
	m.t.Helper()
	o, ok := m.find(kind, name)
	require.True(m.t, ok, "no %s %s rendered", kind, name)
	if into != nil {
		require.NoError(m.t, json.Unmarshal(o.Spec, into))
	}
	return o
}

type envVar struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"secretKeyRef"`
		ResourceFieldRef *struct {
			Resource string `json:"resource"`
		} `json:"resourceFieldRef"`
	} `json:"valueFrom"`
}

type probe struct {
	HTTPGet *struct {
		Path string          `json:"path"`
		Port json.RawMessage `json:"port"`
	} `json:"httpGet"`
}

type container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Args    []string `json:"args"`
	Command []string `json:"command"`
	Ports   []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	Env     []envVar `json:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `json:"name"`
		} `json:"configMapRef"`
		SecretRef *struct {
			Name string `json:"name"`
		} `json:"secretRef"`
	} `json:"envFrom"`
	Resources struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	ReadinessProbe  *probe `json:"readinessProbe"`
	LivenessProbe   *probe `json:"livenessProbe"`
	SecurityContext *struct {
		ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
		RunAsNonRoot             *bool `json:"runAsNonRoot"`
		RunAsUser                *int  `json:"runAsUser"`
		Capabilities             *struct {
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	} `json:"securityContext"`
	Lifecycle *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `json:"seconds"`
			} `json:"sleep"`
		} `json:"preStop"`
	} `json:"lifecycle"`
}

type podSpec struct {
	ServiceAccountName            string      `json:"serviceAccountName"`
	AutomountServiceAccountToken  *bool       `json:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds *int        `json:"terminationGracePeriodSeconds"`
	RestartPolicy                 string      `json:"restartPolicy"`
	Containers                    []container `json:"containers"`
	SecurityContext               *struct {
		RunAsNonRoot *bool `json:"runAsNonRoot"`
		RunAsUser    *int  `json:"runAsUser"`
	} `json:"securityContext"`
}

type podTemplate struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec podSpec `json:"spec"`
}

type deploymentSpec struct {
	Replicas *int `json:"replicas"`
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	Strategy struct {
		Type          string `json:"type"`
		RollingUpdate *struct {
			MaxUnavailable json.RawMessage `json:"maxUnavailable"`
		} `json:"rollingUpdate"`
	} `json:"strategy"`
	Template podTemplate `json:"template"`
}

type jobSpec struct {
	BackoffLimit *int        `json:"backoffLimit"`
	Template     podTemplate `json:"template"`
}

type pdbSpec struct {
	MaxUnavailable json.RawMessage `json:"maxUnavailable"`
	MinAvailable   json.RawMessage `json:"minAvailable"`
	Selector       struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
}

type serviceSpec struct {
	Selector map[string]string `json:"selector"`
	Ports    []struct {
		Name       string          `json:"name"`
		TargetPort json.RawMessage `json:"targetPort"`
	} `json:"ports"`
}

// overlays are every kustomization a platform team may apply.
var overlays = []string{"base", "overlays/production", "overlays/production-pgbouncer"}

func TestManifests(t *testing.T) {
	t.Parallel()
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			m := render(t, dir)
			checkDeployment(t, m)
			checkMigrateJob(t, m)
			checkNoLiteralSecrets(t, m)
			checkNamespaces(t, m, dir)
		})
	}
}

// hooxContainer is the Deployment's hoox container, its spec and pod.
func hooxDeployment(t *testing.T, m *manifests) (deploymentSpec, container) {
	t.Helper()
	var d deploymentSpec
	m.get("Deployment", "hoox", &d)
	require.Len(t, d.Template.Spec.Containers, 1, "one container: hoox")
	return d, d.Template.Spec.Containers[0]
}

func checkDeployment(t *testing.T, m *manifests) {
	d, c := hooxDeployment(t, m)
	pod := d.Template.Spec

	require.NotNil(t, d.Replicas)
	require.Equal(t, 3, *d.Replicas, "three replicas")
	require.Equal(t, "RollingUpdate", d.Strategy.Type)
	require.NotNil(t, d.Strategy.RollingUpdate)
	require.Contains(t, []string{`0`, `"0"`, `"0%"`}, string(d.Strategy.RollingUpdate.MaxUnavailable),
		"maxUnavailable must be 0: a rollout never lowers the ready replicas")

	// Non-root, read-only root filesystem, nothing to escalate to.
	require.NotNil(t, pod.SecurityContext)
	require.True(t, pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot, "runAsNonRoot")
	require.True(t, pod.SecurityContext.RunAsUser != nil && *pod.SecurityContext.RunAsUser != 0, "a numeric non-root uid (the image has no /etc/passwd)")
	checkContainerSecurity(t, c)
	require.False(t, pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken, "hoox needs no Kubernetes API token")

	// Probes: readiness is /readyz (database and schema), liveness /healthz
	// (the process only: a database outage must not restart every replica).
	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.LivenessProbe.HTTPGet)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	port := containerPort(t, c, c.ReadinessProbe.HTTPGet.Port)
	require.Equal(t, port, containerPort(t, c, c.LivenessProbe.HTTPGet.Port))

	// serve without migrating: the Job migrates once per release.
	require.Equal(t, "serve", c.Args[0])
	require.Contains(t, c.Args, "--no-migrate")

	// The listen address agrees with the probed port.
	cfg := configOf(t, m, c)
	if addr, ok := cfg["HOOX_ADDR"]; ok {
		require.True(t, strings.HasSuffix(addr, ":"+strconv.Itoa(port)), "HOOX_ADDR %s vs probed port %d", addr, port)
	}

	// The drain: terminationGracePeriodSeconds outlasts hoox's shutdown.
	require.NotNil(t, pod.TerminationGracePeriodSeconds)
	drain := drainBound(t, cfg, c)
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	require.Greater(t, grace, drain, "terminationGracePeriodSeconds %s must outlast hoox's drain %s", grace, drain)
	require.LessOrEqual(t, grace, 3*drain, "an absurd grace period only delays rollouts")

	// Resources from the benchmarks.
	checkResources(t, c)

	// Secrets come from a Secret.
	for _, name := range []string{"DATABASE_URL", "HOOX_WEBHOOK_SECRET", "HOOX_ADMIN_TOKEN"} {
		e := envNamed(c, name)
		require.NotNil(t, e, "%s is not set", name)
		require.True(t, e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil, "%s must come from a Secret", name)
	}

	// The PodDisruptionBudget covers these pods and lets a drain proceed
	// one at a time.
	var pdb pdbSpec
	m.get("PodDisruptionBudget", "hoox", &pdb)
	require.True(t, selects(pdb.Selector.MatchLabels, d.Template.Metadata.Labels), "the PDB selects the hoox pods")
	switch {
	case len(pdb.MaxUnavailable) > 0:
		require.Equal(t, "1", string(pdb.MaxUnavailable))
	default:
		n, err := strconv.Atoi(string(pdb.MinAvailable))
		require.NoError(t, err)
		require.Less(t, n, *d.Replicas, "minAvailable must let a drain evict one")
	}

	// The Service reaches the same pods on the probed port.
	var svc serviceSpec
	m.get("Service", "hoox", &svc)
	require.True(t, selects(svc.Selector, d.Template.Metadata.Labels))
	require.Equal(t, port, containerPort(t, c, svc.Ports[0].TargetPort))

	// Through the pooler, the budget fits PgBouncer's pool.
	if _, ok := m.find("Deployment", "hoox-pgbouncer"); ok {
		checkPooler(t, m, d, c, cfg)
	} else {
		require.Equal(t, "database-url", envNamed(c, "DATABASE_URL").ValueFrom.SecretKeyRef.Key)
		_, pooled := cfg["HOOX_TRANSACTION_POOLER"]
		require.False(t, pooled || envNamed(c, "HOOX_TRANSACTION_POOLER") != nil, "no pooler, no HOOX_TRANSACTION_POOLER")
	}
}

func checkContainerSecurity(t *testing.T, c container) {
	t.Helper()
	sc := c.SecurityContext
	require.NotNil(t, sc, "container %s has no securityContext", c.Name)
	require.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem", c.Name)
	require.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation false", c.Name)
	require.True(t, sc.Capabilities != nil && slices.Contains(sc.Capabilities.Drop, "ALL"), "%s: drop ALL capabilities", c.Name)
}

// drainBound is hoox's worst-case shutdown (internal/app.App.Close): the
// preStop pause; the HTTP server's shutdown (HOOX_SHUTDOWN_WAIT) while each
// signal already past its claim is recorded within HOOX_VENUE_TIMEOUT +
// 30 s of its start (gateway.Service.Close); then River's jobs, 2 ×
// HOOX_SHUTDOWN_WAIT + 5 s.
func drainBound(t *testing.T, cfg map[string]string, c container) time.Duration {
	t.Helper()
	dur := func(name string, def time.Duration) time.Duration {
		v, ok := cfg[name]
		if e := envNamed(c, name); e != nil && e.Value != "" {
			v, ok = e.Value, true
		}
		if !ok {
			return def
		}
		d, err := time.ParseDuration(v)
		require.NoError(t, err, name)
		return d
	}
	venue := dur("HOOX_VENUE_TIMEOUT", 10*time.Second)
	wait := dur("HOOX_SHUTDOWN_WAIT", 10*time.Second)
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	return preStop + max(wait, venue+30*time.Second) + 2*wait + 5*time.Second
}

func checkResources(t *testing.T, c container) {
	t.Helper()
	get := func(m map[string]string, k string) string {
		v, ok := m[k]
		require.True(t, ok, "%s: resources must set %s", c.Name, k)
		return v
	}
	reqCPU, limCPU := milliCPU(t, get(c.Resources.Requests, "cpu")), milliCPU(t, get(c.Resources.Limits, "cpu"))
	reqMem, limMem := bytesOf(t, get(c.Resources.Requests, "memory")), bytesOf(t, get(c.Resources.Limits, "memory"))
	// The request carries the benchmark's rate on one replica.
	need := time.Duration(benchRate) * cpuPerSignal // CPU-seconds per second
	require.GreaterOrEqual(t, reqCPU, need.Milliseconds(), "cpu request below %d signals/s × %s", benchRate, cpuPerSignal)
	require.GreaterOrEqual(t, limCPU, reqCPU)
	require.GreaterOrEqual(t, reqMem, int64(measuredRSSMiB)<<20, "memory request below the measured RSS")
	require.Greater(t, limMem, int64(overloadMiB)<<20, "memory limit below the measured overload footprint")
	// GOMEMLIMIT follows the limit, so Go collects before the kernel kills.
	e := envNamed(c, "GOMEMLIMIT")
	require.True(t, e != nil && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
		e.ValueFrom.ResourceFieldRef.Resource == "limits.memory", "GOMEMLIMIT from limits.memory")
}

// milliCPU reads a CPU quantity ("250m", "1", "1.5").
func milliCPU(t *testing.T, q string) int64 {
	t.Helper()
	if v, ok := strings.CutSuffix(q, "m"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, q)
		return n
	}
	f, err := strconv.ParseFloat(q, 64)
	require.NoError(t, err, q)
	return int64(f * 1000)
}

// bytesOf reads a memory quantity in the binary suffixes ("64Mi", "1Gi").
func bytesOf(t *testing.T, q string) int64 {
	t.Helper()
	for i, suffix := range []string{"Ki", "Mi", "Gi"} {
		if v, ok := strings.CutSuffix(q, suffix); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err, q)
			return n << (10 * (i + 1))
		}
	}
	n, err := strconv.ParseInt(q, 10, 64)
	require.NoError(t, err, "%s: use a plain byte count or Ki/Mi/Gi", q)
	return n
}

func checkPooler(t *testing.T, m *manifests, d deploymentSpec, c container, cfg map[string]string) {
	t.Helper()
	require.Equal(t, "true", envValue(c, cfg, "HOOX_TRANSACTION_POOLER"))
	require.Equal(t, "pooler-database-url", envNamed(c, "DATABASE_URL").ValueFrom.SecretKeyRef.Key)
	ini := m.get("ConfigMap", "hoox-pgbouncer", nil).Data["pgbouncer.ini"]
	require.NotEmpty(t, ini)
	setting := func(name string) string {
		mm := regexp.MustCompile(`(?m)^\s*` + name + `\s*=\s*(\S+)`).FindStringSubmatch(ini)
		require.NotNil(t, mm, "pgbouncer.ini has no %s", name)
		return mm[1]
	}
	require.Equal(t, "transaction", setting("pool_mode"))
	poolSize, err := strconv.Atoi(setting("default_pool_size"))
	require.NoError(t, err)
	maxConns, err := strconv.Atoi(envValue(c, cfg, "HOOX_DB_MAX_CONNS"))
	require.NoError(t, err)
	require.LessOrEqual(t, *d.Replicas*maxConns, poolSize,
		"replicas × HOOX_DB_MAX_CONNS must fit one PgBouncer's default_pool_size (README: Running in production)")

	var pg deploymentSpec
	m.get("Deployment", "hoox-pgbouncer", &pg)
	for _, pc := range pg.Template.Spec.Containers {
		checkContainerSecurity(t, pc)
	}
}

func checkMigrateJob(t *testing.T, m *manifests) {
	t.Helper()
	var j jobSpec
	m.get("Job", "hoox-migrate", &j)
	pod := j.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, []string{"migrate", "up"}, c.Args)
	require.Contains(t, []string{"Never", "OnFailure"}, pod.RestartPolicy)
	require.NotNil(t, j.BackoffLimit)
	require.True(t, pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot)
	checkContainerSecurity(t, c)
	// Straight to Postgres, whatever the replicas use: goose's lock is a
	// session lock, which a transaction pooler would not keep.
	e := envNamed(c, "DATABASE_URL")
	require.True(t, e != nil && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil)
	require.Equal(t, "database-url", e.ValueFrom.SecretKeyRef.Key)
	// The same image as the replicas: one release migrates its own schema.
	_, hc := hooxDeployment(t, m)
	require.Equal(t, hc.Image, c.Image)
}

// checkNoLiteralSecrets: no credential is written into a manifest.
func checkNoLiteralSecrets(t *testing.T, m *manifests) {
	t.Helper()
	secretish := regexp.MustCompile(`(^DATABASE_URL$|SECRET|TOKEN|PASSWORD|API_KEY|WEBHOOK_URL)`)
	for _, o := range m.objs {
		require.NotEqual(t, "Secret", o.Kind, "no Secret is shipped: the platform's secret manager creates it")
		if o.Kind == "ConfigMap" {
			for k := range o.Data {
				require.False(t, secretish.MatchString(k), "ConfigMap %s holds %s", o.Metadata.Name, k)
			}
		}
	}
	for _, kind := range []string{"Deployment", "Job"} {
		for _, o := range m.objs {
			if o.Kind != kind {
				continue
			}
			var spec struct {
				Template podTemplate `json:"template"`
			}
			require.NoError(t, json.Unmarshal(o.Spec, &spec))
			for _, c := range spec.Template.Spec.Containers {
				for _, e := range c.Env {
					if secretish.MatchString(e.Name) {
						require.Empty(t, e.Value, "%s %s: %s is a literal", kind, o.Metadata.Name, e.Name)
					}
				}
			}
		}
	}
}

// checkNamespaces: an overlay that sets a namespace puts every object in
// it, so nothing lands in default by accident.
func checkNamespaces(t *testing.T, m *manifests, dir string) {
	t.Helper()
	if dir == "base" {
		return
	}
	for _, o := range m.objs {
		require.Equal(t, "hoox", o.Metadata.Namespace, "%s %s", o.Kind, o.Metadata.Name)
	}
}

// TestServiceMonitor: the ServiceMonitor scrapes the hoox Service's named
// port at /metrics.
func TestServiceMonitor(t *testing.T) {
	t.Parallel()
	m := render(t, "overlays/production")
	var sm struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"endpoints"`
	}
	m.get("ServiceMonitor", "hoox", &sm)
	svc := m.get("Service", "hoox", nil)
	require.True(t, selects(sm.Selector.MatchLabels, svc.Metadata.Labels), "the ServiceMonitor selects the hoox Service")
	var spec serviceSpec
	require.NoError(t, json.Unmarshal(svc.Spec, &spec))
	require.Len(t, sm.Endpoints, 1)
	require.Equal(t, spec.Ports[0].Name, sm.Endpoints[0].Port)
	require.Equal(t, "/metrics", sm.Endpoints[0].Path)
	interval, err := time.ParseDuration(sm.Endpoints[0].Interval)
	require.NoError(t, err)
	timeout, err := time.ParseDuration(sm.Endpoints[0].ScrapeTimeout)
	require.NoError(t, err)
	require.LessOrEqual(t, timeout, interval)
	require.Greater(t, timeout, 3*time.Second, "hoox bounds its state read at 3 s; the scrape must wait longer")
}

// configOf is the container's settings from its ConfigMaps.
func configOf(t *testing.T, m *manifests, c container) map[string]string {
	t.Helper()
	cfg := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		var o object
		for _, x := range m.objs {
			if x.Kind == "ConfigMap" && x.Metadata.Name == ef.ConfigMapRef.Name {
				o = x
			}
		}
		require.NotEmpty(t, o.Metadata.Name, "ConfigMap %s is not rendered", ef.ConfigMapRef.Name)
		for k, v := range o.Data {
			require.True(t, k == "DATABASE_URL" || strings.HasPrefix(k, "HOOX_"), "%s is not a hoox setting", k)
			cfg[k] = v
		}
	}
	return cfg
}

func envNamed(c container, name string) *envVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// envValue is a setting's literal value, from env or the ConfigMap.
func envValue(c container, cfg map[string]string, name string) string {
	if e := envNamed(c, name); e != nil {
		return e.Value
	}
	return cfg[name]
}

// containerPort resolves a probe's or a Service's port (a number or a
// port name) to the container's port number.
func containerPort(t *testing.T, c container, raw json.RawMessage) int {
	t.Helper()
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n
	}
	var name string
	require.NoError(t, json.Unmarshal(raw, &name))
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %s", c.Name, name)
	return 0
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// readFile reads a file of this directory.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	require.NoError(t, err)
	return b
}
