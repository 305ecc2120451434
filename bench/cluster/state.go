package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/bench/peers"
)

// stateCluster drives the cluster of a state file through the lifecycle's
// State: it is the driver's Cluster.
type stateCluster struct {
	s *State
	// hybrank is each node's sidecar command as the state had it when
	// opened (hybrank serve), to start again after the peer; peer is the
	// peer's command.
	hybrank []Command
	peer    Command
}

// OpenState reads the state file of a running cluster (`make cluster`
// writes it) as the driver's Cluster; the peer runs PeerCommand. A missing
// file is an error that says to run `make cluster`.
func OpenState(path string) (Cluster, error) {
	s, err := ReadState(path)
	if errors.Is(err, ErrNoState) {
		return nil, fmt.Errorf("no running cluster: %w; start one with `make cluster`", err)
	}
	if err != nil {
		return nil, err
	}
	sc := &stateCluster{s: s}
	for i, n := range s.Nodes {
		if i == 0 {
			c := n.Sidecar.Process.Command
			if sc.peer, err = PeerCommand(strings.TrimPrefix(n.Sidecar.InferenceURL, n.Sidecar.URL), flagValue(c, "--rerank-model"), max(1, atoi(flagValue(c, "--threads")))); err != nil {
				return nil, err
			}
		}
		c := n.Sidecar.Process.Command
		if isPeer(c) {
			return nil, fmt.Errorf("cluster: node %d's sidecar runs the Python peer (%s), not hybrank: an earlier run stopped before swapping hybrank back; restart the cluster (`make cluster-down && make cluster`)", i, c.Path)
		}
		sc.hybrank = append(sc.hybrank, c)
	}
	return sc, nil
}

// flagValue is the value of flag in a serve command ("" when it has
// none).
func flagValue(c Command, flag string) string {
	for i, a := range c.Args {
		if a == flag && i+1 < len(c.Args) {
			return c.Args[i+1]
		}
	}
	return ""
}

// atoi is s as an int, 0 when it is not one.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// isPeer reports whether c runs the Python peer.
func isPeer(c Command) bool {
	return strings.HasPrefix(filepath.Base(c.Path), "python") || strings.Contains(strings.Join(c.Args, " "), peers.InferenceScript)
}

func (sc *stateCluster) Nodes() []Endpoint {
	out := make([]Endpoint, len(sc.s.Nodes))
	for i := range sc.s.Nodes {
		n := &sc.s.Nodes[i]
		out[i] = Endpoint{Name: n.Name, HTTP: n.URL(), Sidecar: n.Sidecar.URL, Inference: n.Sidecar.InferenceURL}
	}
	return out
}

func (sc *stateCluster) KillNode(i int) error { return sc.s.KillNode(i) }

func (sc *stateCluster) StartNode(_ context.Context, i int) error { return sc.s.StartNode(i) }

func (sc *stateCluster) KillSidecar(i int) error { return sc.s.KillSidecar(i) }

// StartSidecar starts the peer, or hybrank's serve as the state first
// had it (replacing the peer's command when the peer ran last).
func (sc *stateCluster) StartSidecar(_ context.Context, i int, peer bool) error {
	if i < 0 || i >= len(sc.hybrank) {
		return fmt.Errorf("cluster: node %d of %d", i, len(sc.hybrank))
	}
	cur := sc.s.Nodes[i].Sidecar.Process.Command
	switch {
	case peer:
		return sc.s.ReplaceSidecar(i, sc.peer)
	case isPeer(cur):
		return sc.s.ReplaceSidecar(i, sc.hybrank[i])
	}
	return sc.s.StartSidecar(i)
}

// SidecarModels are hybrank's sidecars' --embed-model and --rerank-model.
func (sc *stateCluster) SidecarModels() (embed, rerank string) {
	if len(sc.hybrank) == 0 {
		return "", ""
	}
	return flagValue(sc.hybrank[0], "--embed-model"), flagValue(sc.hybrank[0], "--rerank-model")
}
