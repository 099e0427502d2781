package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
)

// Listener is a named address to serve a [Server] on. Several listeners may
// share a server.
type Listener struct {
	Name   string
	Addr   string // host:port; port 0 picks a free port
	Server *Server
}

// Run serves every listener until ctx is cancelled or one of them fails.
//
// It first binds all addresses; only when all are bound does it call ready
// (if not nil) with each listener's name and actual address, so ":0" ports
// can be reported (see [WriteAddrFile]). Then it serves. On cancellation, or
// when one server fails, every server drains: health NOT_SERVING,
// GracefulStop so in-flight calls finish, and Stop once grace has passed to
// bound the wait. Run returns after every server has stopped: the first
// serve error, or nil on a clean shutdown. Run owns the servers: they are
// stopped when it returns, also when the listeners are refused or binding
// fails.
func Run(ctx context.Context, log *zap.Logger, grace time.Duration, ready func(map[string]string), ls ...Listener) error {
	servers, err := checkListeners(ls)
	if err != nil {
		for _, l := range ls {
			if l.Server != nil {
				l.Server.GRPC.Stop()
			}
		}
		return err
	}
	lis := make([]net.Listener, 0, len(ls))
	addrs := make(map[string]string, len(ls))
	var lc net.ListenConfig
	for _, l := range ls {
		nl, err := lc.Listen(ctx, "tcp", l.Addr)
		if err != nil {
			for _, bound := range lis {
				_ = bound.Close()
			}
			for _, s := range servers {
				s.GRPC.Stop()
			}
			return fmt.Errorf("run: listen %s on %s: %w", l.Name, l.Addr, err)
		}
		lis = append(lis, nl)
		addrs[l.Name] = nl.Addr().String()
		log.Info("listening", zap.String("listener", l.Name), zap.String("addr", addrs[l.Name]))
	}
	if ready != nil {
		ready(addrs)
	}

	g, gctx := errgroup.WithContext(ctx)
	for i, l := range ls {
		g.Go(func() error {
			err := l.Server.GRPC.Serve(lis[i])
			// ErrServerStopped: the drain below ran before Serve started.
			if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				return fmt.Errorf("run: serve %s: %w", l.Name, err)
			}
			return nil
		})
	}
	// The drain ends every Serve above, so this group always finishes.
	g.Go(func() error {
		<-gctx.Done()
		log.Info("draining", zap.Duration("grace", grace))
		drain(log, grace, servers)
		return nil
	})
	err = g.Wait()
	log.Info("stopped", zap.Error(err))
	return err
}

func checkListeners(ls []Listener) ([]*Server, error) {
	if len(ls) == 0 {
		return nil, errors.New("run: no listeners")
	}
	names := make(map[string]bool, len(ls))
	seen := make(map[*Server]bool, len(ls))
	var servers []*Server
	for _, l := range ls {
		if l.Name == "" || names[l.Name] {
			return nil, fmt.Errorf("run: listener name %q is empty or repeated", l.Name)
		}
		names[l.Name] = true
		if l.Server == nil || l.Server.GRPC == nil || l.Server.Health == nil {
			return nil, fmt.Errorf("run: listener %s has no server", l.Name)
		}
		if !seen[l.Server] {
			seen[l.Server] = true
			servers = append(servers, l.Server)
		}
	}
	return servers, nil
}

// drain stops all servers concurrently, each within grace.
func drain(log *zap.Logger, grace time.Duration, servers []*Server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			// Shutdown also ignores later SetServingStatus calls, so a
			// handler cannot flip a draining server back to SERVING.
			s.Health.Shutdown()
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				s.GRPC.GracefulStop()
			}()
			timer := time.NewTimer(grace)
			defer timer.Stop()
			select {
			case <-stopped:
			case <-timer.C:
				log.Warn("grace period over, closing remaining calls", zap.Duration("grace", grace))
				s.GRPC.Stop()
				// Stop closes every connection, which ends GracefulStop.
				<-stopped
			}
		})
	}
	wg.Wait()
}
