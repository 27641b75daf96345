// Pins KEDA, the event-driven autoscaler that scales a workload cluster's model servers to
// zero and wakes them on demand (plane/keda.py). Its go.mod replaces k8s.io/* and
// controller-runtime, which a requiring module would not honour, so the operator is built in
// KEDA's own module directory (tools/keda/keda.mk); this file only pins the tag, and go.sum
// checksums its zip.
module fleetgate.dev/tools/keda

go 1.26.0

require github.com/kedacore/keda/v2 v2.20.0
