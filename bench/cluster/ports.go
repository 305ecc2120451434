package cluster

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ports are one node's ports: Weaviate's REST (HTTP) and gRPC APIs, the
// memberlist gossip port (TCP and UDP) and the internal data port, Raft
// and its RPC port, Prometheus metrics, Go profiling, and the node's
// inference sidecar. Zero means "pick a free one".
//
// Weaviate on one host (CLUSTER_IN_LOCALHOST) reaches a peer's Raft RPC
// port at its Raft port + 1, so RaftRPC is always Raft+1; the data port is
// picked as Gossip+1, the port memberlist falls back to without metadata.
type Ports struct {
	HTTP      int `json:"http"`
	GRPC      int `json:"grpc"`
	Gossip    int `json:"gossip"`
	Data      int `json:"data"`
	Raft      int `json:"raft"`
	RaftRPC   int `json:"raft_rpc"`
	Metrics   int `json:"metrics"`
	Profiling int `json:"profiling"`
	Sidecar   int `json:"sidecar"`
}

// portField names one field of Ports, for errors and for picking.
type portField struct {
	name string
	ptr  func(*Ports) *int
}

var portFields = []portField{
	{"http", func(p *Ports) *int { return &p.HTTP }},
	{"grpc", func(p *Ports) *int { return &p.GRPC }},
	{"gossip", func(p *Ports) *int { return &p.Gossip }},
	{"data", func(p *Ports) *int { return &p.Data }},
	{"raft", func(p *Ports) *int { return &p.Raft }},
	{"raft-rpc", func(p *Ports) *int { return &p.RaftRPC }},
	{"metrics", func(p *Ports) *int { return &p.Metrics }},
	{"profiling", func(p *Ports) *int { return &p.Profiling }},
	{"sidecar", func(p *Ports) *int { return &p.Sidecar }},
}

// validatePorts checks the given ports of every node: each 0 or in
// 1024-65535, no port given twice, and a Raft RPC port given beside its
// Raft port equal to Raft+1.
func validatePorts(given []Ports) error {
	seen := map[int]string{}
	for i := range given {
		p := &given[i]
		for _, f := range portFields {
			v := *f.ptr(p)
			if v == 0 {
				continue
			}
			what := fmt.Sprintf("node %d %s port %d", i, f.name, v)
			if v < 1024 || v > 65535 {
				return fmt.Errorf("%s: want 1024-65535 (or 0: pick a free one)", what)
			}
			if prev, dup := seen[v]; dup {
				return fmt.Errorf("%s is also %s", what, prev)
			}
			seen[v] = what
		}
		if p.Raft != 0 && p.RaftRPC != 0 && p.RaftRPC != p.Raft+1 {
			return fmt.Errorf("node %d raft-rpc port %d: Weaviate on one host reaches a peer's Raft RPC port at its Raft port + 1 (%d)", i, p.RaftRPC, p.Raft+1)
		}
	}
	return nil
}

// pickPorts fills every zero port of want (one entry per node) with a
// free one outside the kernel's ephemeral range (see randomPort), preferring the port of prefer (the last run's, when there was
// one) where it is free, and checks that the ports given are free. Ports
// are probed on all interfaces (some of Weaviate's listeners bind there)
// and held until every port is chosen, so no port is chosen twice; they
// are released before pickPorts returns, so another program may take one
// before Weaviate binds it (Up then fails with the node's log).
func pickPorts(want, prefer []Ports) ([]Ports, error) {
	out := make([]Ports, len(want))
	copy(out, want)
	if err := validatePorts(out); err != nil {
		return nil, err
	}
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	taken := map[int]bool{}
	for _, p := range out {
		for _, f := range portFields {
			if v := *f.ptr(&p); v != 0 {
				taken[v] = true
			}
		}
	}
	// hold binds port (TCP, and UDP with udp) and keeps it until return.
	hold := func(port int, udp bool) error {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		if udp {
			u, err := net.ListenPacket("udp", ":"+strconv.Itoa(port))
			if err != nil {
				l.Close()
				return err
			}
			held = append(held, u)
		}
		held = append(held, l)
		taken[port] = true
		return nil
	}
	// free picks a free port, or a pair port, port+1, both free, at
	// random outside the ephemeral range.
	free := func(pair, udp bool) (int, error) {
		for range 500 {
			port := randomPort()
			if taken[port] || pair && (port+1 > 65535 || taken[port+1]) {
				continue
			}
			if hold(port, udp) != nil {
				continue
			}
			if !pair {
				return port, nil
			}
			if hold(port+1, false) != nil {
				continue // port stays held and taken: not picked again
			}
			return port, nil
		}
		return 0, errors.New("no free port found in 500 tries")
	}

	for i := range out {
		p := &out[i]
		var pre Ports
		if i < len(prefer) {
			pre = prefer[i]
		}
		// Explicit ports first: they must be free.
		for _, f := range portFields {
			if v := *f.ptr(p); v != 0 {
				if err := hold(v, f.name == "gossip"); err != nil {
					return nil, fmt.Errorf("node %d %s port %d is not free: %w", i, f.name, v, err)
				}
			}
		}
		// Pairs: gossip+data, raft+raft-rpc.
		pairs := []struct {
			name       string
			lo, hi     *int
			preLo      int
			udp, fixed bool // fixed: hi must be lo+1
		}{
			{"gossip", &p.Gossip, &p.Data, pre.Gossip, true, false},
			{"raft", &p.Raft, &p.RaftRPC, pre.Raft, false, true},
		}
		for _, pr := range pairs {
			switch {
			case *pr.lo != 0 && *pr.hi != 0:
			case *pr.lo != 0: // hi follows lo
				if err := hold(*pr.lo+1, false); err != nil {
					return nil, fmt.Errorf("node %d %s port %d given: port %d, which Weaviate uses beside it, is not free: %w", i, pr.name, *pr.lo, *pr.lo+1, err)
				}
				*pr.hi = *pr.lo + 1
			case *pr.hi != 0: // a data port given alone (raft-rpc alone fixes raft)
				if pr.fixed {
					if err := hold(*pr.hi-1, false); err != nil {
						return nil, fmt.Errorf("node %d raft-rpc port %d given: raft port %d is not free: %w", i, *pr.hi, *pr.hi-1, err)
					}
					*pr.lo = *pr.hi - 1
					continue
				}
				v, err := free(false, pr.udp)
				if err != nil {
					return nil, fmt.Errorf("node %d %s port: %w", i, pr.name, err)
				}
				*pr.lo = v
			default:
				if pr.preLo != 0 && !taken[pr.preLo] && !taken[pr.preLo+1] && hold(pr.preLo, pr.udp) == nil {
					if hold(pr.preLo+1, false) == nil {
						*pr.lo, *pr.hi = pr.preLo, pr.preLo+1
						continue
					}
				}
				v, err := free(true, pr.udp)
				if err != nil {
					return nil, fmt.Errorf("node %d %s ports: %w", i, pr.name, err)
				}
				*pr.lo, *pr.hi = v, v+1
			}
		}
		for _, f := range portFields {
			ptr := f.ptr(p)
			if *ptr != 0 {
				continue
			}
			if v := *f.ptr(&pre); v != 0 && !taken[v] && hold(v, false) == nil {
				*ptr = v
				continue
			}
			v, err := free(false, false)
			if err != nil {
				return nil, fmt.Errorf("node %d %s port: %w", i, f.name, err)
			}
			*ptr = v
		}
	}
	return out, nil
}

// pickFrom is the range ports are picked from: the kernel hands out its
// ephemeral range (ip_local_port_range) as the local ports of outgoing
// connections, so a node's port picked there may be taken by one while
// the node is down for a restart — and Weaviate ignores a failed bind of
// its data port and runs on without it. The ports above the ephemeral
// range and those from 15000 up to it are never handed out that way.
var pickFrom = sync.OnceValue(func() [][2]int {
	lo, hi := 32768, 60999 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			l, err1 := strconv.Atoi(f[0])
			h, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && l <= h {
				lo, hi = l, h
			}
		}
	}
	var out [][2]int
	if lo-1 >= 15000 {
		out = append(out, [2]int{15000, lo - 1})
	}
	if hi+1 <= 65535-1 {
		out = append(out, [2]int{hi + 1, 65535 - 1}) // -1: room for a pair's port+1
	}
	if len(out) == 0 { // the ephemeral range covers everything: pick in it
		out = append(out, [2]int{1024, 65534})
	}
	return out
})

// randomPort returns a random port of pickFrom's ranges, each port
// equally likely.
func randomPort() int {
	ranges := pickFrom()
	n := 0
	for _, r := range ranges {
		n += r[1] - r[0] + 1
	}
	k := rand.IntN(n)
	for _, r := range ranges {
		size := r[1] - r[0] + 1
		if k < size {
			return r[0] + k
		}
		k -= size
	}
	return ranges[0][0]
}

// checkFree reports the first of n's Weaviate ports that another process
// holds (probed on all interfaces, gossip on UDP too), so that a restart
// does not start a node that cannot bind it.
func (n *Node) checkFree() error {
	for _, f := range portFields {
		if f.name == "sidecar" {
			continue
		}
		port := *f.ptr(&n.Ports)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err == nil && f.name == "gossip" {
			var u net.PacketConn
			if u, err = net.ListenPacket("udp", ":"+strconv.Itoa(port)); err == nil {
				u.Close()
			}
		}
		if l != nil {
			l.Close()
		}
		if err != nil {
			return fmt.Errorf("%s %s port %d is taken: %w", n.Name, f.name, port, err)
		}
	}
	return nil
}

// checkListening reports a port of n that refuses connections once the
// node says it is ready: Weaviate ignores a failed bind of its data port
// (the node runs on, unreachable by its peers) and of its gRPC port.
func (n *Node) checkListening() error {
	for _, c := range []struct {
		what string
		port int
	}{{"data", n.Ports.Data}, {"grpc", n.Ports.GRPC}} {
		conn, err := net.DialTimeout("tcp", addr(c.port), time.Second)
		if err != nil {
			return fmt.Errorf("%s is ready but its %s port %d is not listening (Weaviate runs on without it; another process may have taken it): %w", n.Name, c.what, c.port, err)
		}
		conn.Close()
	}
	return nil
}
