// Command serve runs hybrank's HTTP endpoint (package server): flags fill a
// backend.Config over an optional JSON config file (backend.LoadConfig:
// server.Config's keys, and engine.Config's under "engine"; flags given
// explicitly win), and backend.Run loads the models with ONNX Runtime and
// serves until SIGTERM or SIGINT, then drains, snapshots the index and
// exits. serve -h lists the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/server/backend"
)

func main() {
	cfg, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		go func() {
			// The first signal drains; the default action is restored, so
			// a second one ends the process at once (acknowledged writes
			// are in the index's log; only the closing snapshot is lost).
			<-ctx.Done()
			stop()
		}()
		err = backend.Run(ctx, cfg, ort.NewCrossEncoder, ort.NewBiEncoder)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// parse parses args over the defaults and, with --config, again over the
// file, so that only the flags given override it. It does not validate:
// backend.Run does.
func parse(args []string) (backend.Config, error) {
	cfg := backend.DefaultConfig()
	fs, path := flags(&cfg)
	if err := parseAll(fs, args); err != nil || *path == "" {
		return cfg, err
	}
	cfg, err := backend.LoadConfig(*path)
	if err != nil {
		return cfg, err
	}
	fs, _ = flags(&cfg)
	return cfg, parseAll(fs, args)
}

// parseAll parses args and refuses any left over: the flag package stops
// at the first argument that is not a flag and drops the rest without a
// word ("--memory-index false --index /data" set the in-memory index, the
// "false" ended the parse, and --index was never read).
func parseAll(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; a boolean flag takes its value as --flag=false)", fs.Arg(0))
	}
	return nil
}

func flags(cfg *backend.Config) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "", `JSON config file: server.Config's keys, and engine.Config's under "engine"; flags given explicitly override it`)
	cfg.RegisterFlags(fs)
	return fs, path
}
