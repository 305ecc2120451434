package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench"
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
			// The peer's thread budget is the sidecar's: threads per call
			// × calls at once.
			threads, pool := sidecarThreads(c)
			budget := max(1, threads) * max(1, pool)
			if sc.peer, err = PeerCommand(strings.TrimPrefix(n.Sidecar.InferenceURL, n.Sidecar.URL), flagValue(c, "--rerank-model"), budget); err != nil {
				return nil, err
			}
		}
		c := n.Sidecar.Process.Command
		if isPeer(c) {
			return nil, fmt.Errorf("cluster: node %d's sidecar runs the Python peer (%s), not hybrank: an earlier run stopped before swapping hybrank back; restart the cluster (`make cluster-down && make cluster`)", i, c.Path)
		}
		sc.hybrank = append(sc.hybrank, withoutFlag(c, quantizeFlag))
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

// StartSidecar starts s in place of node i's sidecar: the peer, or
// hybrank's serve as the state first had it, with int8 models for
// SidecarHybrankInt8. The state file records the command.
func (sc *stateCluster) StartSidecar(_ context.Context, i int, s SidecarKind) error {
	if i < 0 || i >= len(sc.hybrank) {
		return fmt.Errorf("cluster: node %d of %d", i, len(sc.hybrank))
	}
	switch s {
	case SidecarPeer:
		return sc.s.ReplaceSidecar(i, sc.peer)
	case SidecarHybrankInt8:
		c := sc.hybrank[i]
		c.Args = append(slices.Clone(c.Args), quantizeFlag, "int8")
		return sc.s.ReplaceSidecar(i, c)
	case SidecarHybrank:
		return sc.s.ReplaceSidecar(i, sc.hybrank[i])
	}
	return fmt.Errorf("%w: cluster: unknown sidecar %q", bench.ErrBadOption, s)
}

// quantizeFlag is serve's flag for int8 models.
const quantizeFlag = "--quantize"

// withoutFlag is c without flag and its value (the int8 sidecar's
// --quantize, left in the state file by a run that stopped before
// restoring the float32 one).
func withoutFlag(c Command, flag string) Command {
	var args []string
	for i := 0; i < len(c.Args); i++ {
		if c.Args[i] == flag && i+1 < len(c.Args) {
			i++
			continue
		}
		args = append(args, c.Args[i])
	}
	c.Args = args
	return c
}

func (sc *stateCluster) SidecarCPU(i int) (time.Duration, error) { return sc.s.SidecarCPU(i) }

// SidecarThreads are hybrank's sidecars' --threads and --pool.
func (sc *stateCluster) SidecarThreads() (threads, pool int) {
	if len(sc.hybrank) == 0 {
		return 0, 0
	}
	return sidecarThreads(sc.hybrank[0])
}

// sidecarThreads are a serve command's --threads and --pool (0 when
// unset).
func sidecarThreads(c Command) (threads, pool int) {
	return atoi(flagValue(c, "--threads")), atoi(flagValue(c, "--pool"))
}

// SidecarModels are hybrank's sidecars' --embed-model and --rerank-model.
func (sc *stateCluster) SidecarModels() (embed, rerank string) {
	if len(sc.hybrank) == 0 {
		return "", ""
	}
	return flagValue(sc.hybrank[0], "--embed-model"), flagValue(sc.hybrank[0], "--rerank-model")
}
