// Package deploy holds hoox's Kubernetes manifests (a kustomize base,
// components for PgBouncer and monitoring, example overlays) and the tests
// that render them and check what a platform team relies on: replicas,
// probes, security context, the drain bound, resources, secrets, the
// migration Job, and that every metric the alerts and the dashboard name is
// one hoox exports. There is no Go API here.
package deploy
