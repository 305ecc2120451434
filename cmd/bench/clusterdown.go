package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hybrank/hybrank/bench/cluster"
)

func init() {
	register(subcommand{
		name:    "cluster-down",
		summary: "stop exactly the processes cluster-up started (by its state file); --wipe removes the nodes' data (make cluster-down)",
		run:     runClusterDown,
	})
}

func runClusterDown(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("cluster-down")
	dir := fs.String("dir", cluster.DefaultOptions().Dir, "cluster folder (its "+cluster.StateFile+" lists the processes)")
	var o cluster.DownOptions
	fs.BoolVar(&o.Wipe, "wipe", false, "also remove the nodes' data folders")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", cluster.DefaultOptions().StopTimeout, "grace between SIGTERM and SIGKILL")
	var out output
	out.registerJSON(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	o.Log = cl.stderr
	path := filepath.Join(*dir, cluster.StateFile)
	err := cluster.Down(path, o)
	stopped := err == nil
	if err != nil && !errors.Is(err, cluster.ErrNoState) {
		return err
	}
	switch {
	case out.json:
		return json.NewEncoder(cl.stdout).Encode(map[string]any{"state": path, "stopped": stopped, "wiped": stopped && o.Wipe})
	case stopped:
		fmt.Fprintln(cl.stdout, "cluster stopped")
	default:
		fmt.Fprintf(cl.stdout, "no cluster running (%v)\n", err)
	}
	return nil
}
