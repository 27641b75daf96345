// Pins the upstream Go modules whose zips carry the CRD YAML files that
// schemas/crds.py lays out (same layout as shared/crds). Nothing here is built:
// schemas/crds.py runs `go mod download -json <module>...` in this folder, and go
// checks every zip against go.sum. Because this module is at go >= 1.17 the
// module graph is pruned, so only the .info/.mod/.zip of these requirements
// are fetched, never their own dependencies. Keep the versions equal to the
// tags in schemas/crds.py's SOURCES table (it checks).
//
// The Go module proxy reachable from this project's machines refuses these
// pinned versions ("403 This module version is not available"), so they are
// NOT required here; their files are kept in schemas/crds/off-proxy/ (byte for byte
// from the upstream tags, with their LICENSE) and checked against
// not-on-proxy.sha256:
//   github.com/envoyproxy/ai-gateway v1.1.0
//   github.com/crossplane-contrib/provider-helm v1.4.0   (.mod served, .zip refused)
//   github.com/kaito-project/kaito v0.12.0
//   github.com/ray-project/kuberay/ray-operator v1.7.0   (.mod served, .zip refused)
//   sigs.k8s.io/lws v0.10.0                              (.mod served, .zip refused)
//   github.com/llm-d/llm-d-router v0.10.0
// Requiring them would break every command that loads the module graph.

module fleetgate.dev/e2e/crds

go 1.25

require (
	github.com/cert-manager/cert-manager v1.21.2
	github.com/cert-manager/trust-manager v0.25.0
	github.com/crossplane-contrib/provider-kubernetes v1.2.1
	github.com/crossplane/crossplane/v2 v2.2.0
	github.com/envoyproxy/gateway v1.8.3
	github.com/kedacore/keda/v2 v2.20.0
	github.com/prometheus-operator/prometheus-operator v0.94.1
	sigs.k8s.io/gateway-api v1.5.1
	sigs.k8s.io/gateway-api-inference-extension v1.6.2
)
