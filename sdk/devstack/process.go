package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ambitkernel/ambit/sdk/serve"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// proc is one started process. Its waiting goroutine owns cmd.Wait and
// closes done when the process has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// asked is set before the stack itself signals the process, so that
	// its exit is not reported as a death.
	asked bool
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// spawn starts argv as the process called name, its output appended to
// LogPath(name), with env added to this process's environment.
func (s *Stack) spawn(name string, argv, env []string) (*proc, error) {
	logf, err := os.OpenFile(s.LogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("devstack: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("devstack: start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = logf.Close()
		s.mu.Lock()
		p.err = err
		asked := p.asked
		s.mu.Unlock()
		close(p.done)
		if !asked {
			select {
			case s.died <- name:
			default:
			}
		}
	}()
	s.mu.Lock()
	s.procs[name] = p
	s.mu.Unlock()
	return p, nil
}

// run runs a command to completion, its output appended to LogPath(name).
func (s *Stack) run(ctx context.Context, name string, argv []string) error {
	logf, err := os.OpenFile(s.LogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w%s", strings.Join(argv, " "), err, s.tail(name))
	}
	return nil
}

// tail is the end of a process's log, to make a start-up failure
// readable where it is reported.
func (s *Stack) tail(name string) string { return s.tailLines(name, 10) }

// tailLines is the last n lines of a process's log.
func (s *Stack) tailLines(name string, n int) string {
	data, err := os.ReadFile(s.LogPath(name))
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("; the end of %s:\n\t%s", s.LogPath(name), strings.Join(lines, "\n\t"))
}

// waitAddrs waits for a process's address file.
func (s *Stack) waitAddrs(ctx context.Context, name string, p *proc) (map[string]string, error) {
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	addrs, err := serve.WaitAddrFile(wctx, s.addrPath(name), p.done, pollEvery)
	switch {
	case errors.Is(err, serve.ErrExited):
		return nil, fmt.Errorf("devstack: %s exited during start-up (%v)%s", name, p.err, s.tail(name))
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("devstack: %s did not report its addresses within %s%s", name, startWait, s.tail(name))
	case err != nil:
		return nil, fmt.Errorf("devstack: %s: %w%s", name, err, s.tail(name))
	}
	return addrs, nil
}

// waitServing waits until a TLS listener's health check answers SERVING,
// asked as the first agent.
func (s *Stack) waitServing(ctx context.Context, name, addr string, p *proc) error {
	conn, err := s.dial(ctx, addr, s.Agents[0])
	if err != nil {
		return fmt.Errorf("devstack: %s: %w", name, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(startWait)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("health %s", resp.GetStatus())
		}
		select {
		case <-p.done:
			return fmt.Errorf("devstack: %s exited (%v)%s", name, p.err, s.tail(name))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devstack: %s at %s not SERVING within %s: %v%s", name, addr, startWait, err, s.tail(name))
		}
	}
}

// Died reports the name of each process that exited without the stack
// asking it to (Stop, Kill, Restart): a crash, or a failpoint.
func (s *Stack) Died() <-chan string { return s.died }

// Kill sends SIGKILL to a process and waits for it to die.
func (s *Stack) Kill(name string) {
	s.mu.Lock()
	p := s.procs[name]
	if p != nil {
		p.asked = true
	}
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits for a process to exit on its own (e.g. at a failpoint).
func (s *Stack) Wait(ctx context.Context, name string) error {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Restart starts one of the stack's processes again, on the addresses it
// had, killing it first if it still runs; env replaces its extra
// environment.
func (s *Stack) Restart(ctx context.Context, name string, env []string) error {
	if _, ok := s.member(name); !ok {
		return fmt.Errorf("devstack: %s cannot be restarted: only %s can", name, strings.Join(s.names(), ", "))
	}
	s.Kill(name)
	s.mu.Lock()
	if s.opts.Env == nil {
		s.opts.Env = map[string][]string{}
	}
	s.opts.Env[name] = env
	s.mu.Unlock()
	if err := s.startProcess(ctx, name); err != nil {
		return err
	}
	return s.writeInfo()
}

// Stop closes the connections handed out, sends SIGTERM to the stack's
// processes in the reverse of their start order (the sidecars, then the
// kernel), then to the examples' servers, each given ten seconds to exit,
// and removes stack.json. A process still running then gets SIGQUIT, which
// makes it write its goroutines' stacks to its log, and SIGKILL if that
// does not end it. Stop reports every process that did not exit cleanly,
// with the end of the log of one that had to be stopped so. Stopping a
// stopped stack does nothing.
func (s *Stack) Stop() error {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, conn := range conns {
		_ = conn.Close()
	}
	order := s.names()
	slices.Reverse(order)
	for i := len(s.Examples) - 1; i >= 0; i-- {
		for j := len(s.Examples[i].Servers) - 1; j >= 0; j-- {
			order = append(order, s.Examples[i].Servers[j].Name)
		}
	}
	var errs []error
	for _, name := range order {
		s.mu.Lock()
		p := s.procs[name]
		delete(s.procs, name)
		if p != nil {
			p.asked = true
		}
		s.mu.Unlock()
		if p == nil || p.exited() {
			continue // never started, or already gone (killed by a test)
		}
		if err := s.stop(name, p, stopWait, quitWait); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(s.InfoPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stop sends SIGTERM to the running process p and waits up to wait for it
// to exit. One still running then gets SIGQUIT, which makes a Go process
// write every goroutine's stack to its log (what it was waiting for), and
// SIGKILL if it outlives quit too.
func (s *Stack) stop(name string, p *proc, wait, quit time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s exited with %v after SIGTERM; see %s", name, p.err, s.LogPath(name))
		}
		return nil
	case <-time.After(wait):
	}
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	how := "SIGQUIT"
	select {
	case <-p.done:
	case <-time.After(quit):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		how = "SIGKILL after SIGQUIT"
	}
	return fmt.Errorf("%s did not stop within %s of SIGTERM; stopped with %s%s", name, wait, how, s.tailLines(name, quitLines))
}

// names are the stack's processes' names, in start order.
func (s *Stack) names() []string {
	out := make([]string, len(s.members))
	for i, m := range s.members {
		out[i] = m.name
	}
	return out
}
