package devstack

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangEnv makes this test binary a process that ignores SIGTERM and waits
// in a goroutine of its own (see TestHelperHang).
const hangEnv = "DEVSTACK_TEST_HANG"

// TestHelperHang is not a test: run with hangEnv set, it is the process
// TestStopQuitsAHungProcess stops.
func TestHelperHang(t *testing.T) {
	if os.Getenv(hangEnv) == "" {
		t.Skip("a helper process, not a test")
	}
	signal.Ignore(syscall.SIGTERM)
	os.Stdout.WriteString("serving\n")
	hangForever()
}

//go:noinline
func hangForever() { select {} }

// TestStopQuitsAHungProcess: a process that does not exit on SIGTERM is
// stopped with SIGQUIT, and the error shows its goroutines' stacks from
// its log, which name where it waited.
func TestStopQuitsAHungProcess(t *testing.T) {
	s := &Stack{Dir: t.TempDir(), died: make(chan string, 1), procs: map[string]*proc{}}
	if err := os.MkdirAll(s.logDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := s.spawn("hung", []string{os.Args[0], "-test.run=^TestHelperHang$"}, []string{hangEnv + "=1"})
	if err != nil {
		t.Fatal(err)
	}
	// Signals reach it only once it ignores SIGTERM.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.tail("hung"), "serving"); time.Sleep(pollEvery) {
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("the helper did not start:%s", s.tail("hung"))
		}
	}
	s.mu.Lock()
	p.asked = true
	s.mu.Unlock()
	err = s.stop("hung", p, 200*time.Millisecond, 5*time.Second)
	if err == nil {
		t.Fatal("stop reported a process that ignored SIGTERM as stopped cleanly")
	}
	for _, want := range []string{"hung did not stop within 200ms of SIGTERM; stopped with SIGQUIT", "SIGQUIT", "hangForever"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("stop's error lacks %q:\n%v", want, err)
		}
	}
	if !p.exited() {
		t.Error("the process still runs after stop")
	}
}

// TestStopCleanExit: a process that exits on SIGTERM stops without error.
func TestStopCleanExit(t *testing.T) {
	s := &Stack{Dir: t.TempDir(), died: make(chan string, 1), procs: map[string]*proc{}}
	if err := os.MkdirAll(s.logDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := s.spawn("sleeper", []string{"sleep", "60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	p.asked = true
	s.mu.Unlock()
	start := time.Now()
	if err := s.stop("sleeper", p, 10*time.Second, time.Second); err == nil || !strings.Contains(err.Error(), "signal: terminated") {
		// sleep dies of SIGTERM rather than exiting 0: reported as such.
		t.Errorf("stop = %v, want the exit by SIGTERM reported", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("stop waited %s for a process that exits on SIGTERM", time.Since(start))
	}
}
