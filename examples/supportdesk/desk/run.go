package desk

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// Timeouts of the HTTP server.
const (
	readHeaderTimeout = 10 * time.Second
	shutdownGrace     = 5 * time.Second
)

// Run is the supportdesk-mcp command: it opens the database named by
// --db, seeds the demo rows (unless --seed=false) and serves the desk's
// tools until ctx ends — over stdio with --stdio, otherwise over
// streamable HTTP at http://--addr/mcp, a loopback address only. With
// --addr-file it writes {"mcp": "http://127.0.0.1:PORT/mcp"} there once
// it listens, so a ":0" port can be discovered.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("supportdesk-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("db", "", "the desk's database: an SQLite file path or sqlite:PATH (created if missing)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback host:port to serve streamable HTTP on (port 0 picks one)")
	addrFile := fs.String("addr-file", "", "write the endpoint's URL here as JSON once listening")
	stdio := fs.Bool("stdio", false, "serve over stdin and stdout instead of HTTP")
	seed := fs.Bool("seed", true, "insert the demo tickets and messages (never undoes a write)")
	level := fs.String("log-level", "info", "debug, info, warn or error (logs go to stderr)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *dsn == "":
		return errors.New("--db is required")
	case *stdio && *addrFile != "":
		return errors.New("--addr-file has no meaning with --stdio")
	}
	log, err := serve.NewLogger(*level)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	store, err := Open(ctx, *dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	if *seed {
		if err := store.Seed(ctx, DemoData()); err != nil {
			return err
		}
	}
	srv := NewServer(store, log)
	if *stdio {
		log.Info("serving over stdio")
		if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			return fmt.Errorf("serve stdio: %w", err)
		}
		return nil
	}
	return serveHTTP(ctx, log, srv, *addr, *addrFile)
}

func serveHTTP(ctx context.Context, log *zap.Logger, srv *mcp.Server, addr, addrFile string) error {
	if err := checkLoopback(addr); err != nil {
		return err
	}
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", Handler(srv))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout}
	url := "http://" + lis.Addr().String() + "/mcp"
	if addrFile != "" {
		if err := serve.WriteAddrFile(addrFile, map[string]string{"mcp": url}); err != nil {
			_ = lis.Close()
			return err
		}
	}
	log.Info("listening", zap.String("url", url))
	served := make(chan error, 1)
	go func() { served <- hs.Serve(lis) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	// Open event streams never end on their own: wait a little, then cut.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	log.Info("stopped")
	return nil
}

// checkLoopback refuses an address that is not on the loopback interface:
// the desk has no authentication of its own.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--addr %q: serve on a loopback address only (127.0.0.1, [::1] or localhost)", addr)
	}
	return nil
}
