package server

import (
	"context"
	"net"
	"testing"
)

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// serveLocal serves s on a loopback port until the test ends (then Serve
// must return nil) and returns the address.
func serveLocal(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}
