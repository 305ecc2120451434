package main

import (
	"strings"
	"testing"
)

func TestClusterUpBadOptions(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "0"},
		{"--http-ports", "80"},
		{"--raft-ports", "20000", "--http-ports", "20000"},
		{"--http-ports", "0,0,0,0"},
	} {
		dir := t.TempDir()
		code, _, stderr := run(t, append([]string{"cluster-up", "--dir", dir}, args...)...)
		if code != 2 || !strings.Contains(stderr, "invalid option") {
			t.Errorf("cluster-up %v: exit %d, stderr %q; want 2 and the option named", args, code, stderr)
		}
	}
}

func TestClusterDownWithoutCluster(t *testing.T) {
	code, stdout, stderr := run(t, "cluster-down", "--dir", t.TempDir())
	if code != 0 || !strings.Contains(stdout, "no cluster running") {
		t.Errorf("cluster-down on an empty folder: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
