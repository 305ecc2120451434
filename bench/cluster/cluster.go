package cluster

import (
	"context"
	"time"
)

// Endpoint is where one Weaviate node of the cluster and its inference
// sidecar answer.
type Endpoint struct {
	// Name is Weaviate's node name (node_name of a replica read).
	Name string `json:"name"`
	// HTTP is the base URL of its REST and GraphQL API.
	HTTP string `json:"http"`
	// Sidecar is the base URL of its sidecar's server (hybrank serve, or
	// the peer swapped in on the same port); Inference the base URL its
	// text2vec-transformers and reranker-transformers modules call (the
	// protocols' prefix on the sidecar).
	Sidecar   string `json:"sidecar"`
	Inference string `json:"inference"`
}

// Cluster is what the driver needs of a running cluster: its nodes, and
// killing and restarting a node or a sidecar. The lifecycle's state
// implements it (stateCluster); the tests use fakes. Starting returns once
// the process is started: the driver measures readiness itself.
// Implementations must be safe for use from one goroutine at a time.
type Cluster interface {
	Nodes() []Endpoint
	// KillNode SIGKILLs node i's Weaviate; StartNode starts it again
	// with its data.
	KillNode(i int) error
	StartNode(ctx context.Context, i int) error
	// KillSidecar SIGKILLs node i's sidecar; StartSidecar starts s on its
	// port (in place of what ran there).
	KillSidecar(i int) error
	StartSidecar(ctx context.Context, i int, s SidecarKind) error
}

// SidecarKind is what serves a node's inference protocols.
type SidecarKind string

const (
	// SidecarHybrank is hybrank serve as the cluster was started with it.
	SidecarHybrank SidecarKind = "hybrank"
	// SidecarHybrankInt8 is the same serve with int8 copies of its models
	// (--quantize int8).
	SidecarHybrankInt8 SidecarKind = "hybrank int8"
	// SidecarPeer is the Python peer (PeerCommand).
	SidecarPeer SidecarKind = "peer"
)

// cpuMeter is implemented by a Cluster that can read the CPU time its
// sidecars have used (user + system, every thread): the driver then
// reports the sidecars' CPU per request, which a machine shared with
// Weaviate does not distort as it does requests per second.
type cpuMeter interface {
	SidecarCPU(i int) (time.Duration, error)
}

// sidecarModels is implemented by a Cluster that knows its sidecars'
// model directories (the engine then runs on the same ones) and thread
// budget (intra-op threads per model call, calls at once; 0 when not
// set).
type sidecarModels interface {
	SidecarModels() (embed, rerank string)
	SidecarThreads() (threads, pool int)
}
