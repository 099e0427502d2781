package service

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// FailpointEnv is the environment variable that arms failpoints in a
// process, for crash tests: a comma-separated list of [Failpoints] names,
// each optionally followed by "@N" to fire at its Nth occurrence instead
// of its first, e.g. "reply:SubmitProposal@3,call:RecordEffect".
const FailpointEnv = "AMBIT_FAILPOINT"

// The points the frame itself places, as name prefixes; the rest of the
// name is a gRPC method's short name, e.g. "reply:SubmitProposal".
const (
	// FailReply fires when a served call has succeeded (whatever its
	// handler wrote is committed) and before its answer is sent.
	FailReply = "reply:"
	// FailCall fires before an outgoing call (e.g. to the kernel) is sent.
	FailCall = "call:"
	// FailAnswer fires when an outgoing call has succeeded and before its
	// answer is used.
	FailAnswer = "answer:"
)

// Failpoints are the points at which a process kills itself with SIGKILL
// when [FailpointEnv] arms them: the frame's own, at the edges of every
// call ([FailReply], [FailCall], [FailAnswer]), and a process's own
// (e.g. "action.after-commit"), which it claims with [Failpoints.Hook] and
// calls where the crash matters. A nil *Failpoints arms nothing, and a
// process without failpoints installs no interceptor at all. It is safe
// for concurrent use.
type Failpoints struct {
	mu     sync.Mutex
	points map[string]*failpoint
	// kill ends the process; tests replace it.
	kill func(name string)
}

type failpoint struct {
	// at is the occurrence that fires, seen those reached so far.
	at, seen int
	// claimed is set when the process placed the point (its own names).
	claimed bool
}

var (
	methodName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	ownName    = regexp.MustCompile(`^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`)
)

// ParseFailpoints parses the value of [FailpointEnv]. Empty arms nothing
// and returns nil.
func ParseFailpoints(spec string) (*Failpoints, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	f := &Failpoints{points: map[string]*failpoint{}, kill: func(string) { killSelf() }}
	var errs []error
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		name, count, counted := strings.Cut(item, "@")
		at := 1
		if counted {
			n, err := strconv.Atoi(count)
			if err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%q: the occurrence after @ must be a positive integer", item))
				continue
			}
			at = n
		}
		if err := checkFailpointName(name); err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", item, err))
			continue
		}
		if _, dup := f.points[name]; dup {
			errs = append(errs, fmt.Errorf("%q is armed twice", name))
			continue
		}
		f.points[name] = &failpoint{at: at}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", FailpointEnv, err)
	}
	return f, nil
}

func checkFailpointName(name string) error {
	for _, kind := range []string{FailReply, FailCall, FailAnswer} {
		if method, ok := strings.CutPrefix(name, kind); ok {
			if !methodName.MatchString(method) {
				return fmt.Errorf("%s needs a gRPC method's short name, e.g. %sSubmitProposal", kind, kind)
			}
			return nil
		}
	}
	if !ownName.MatchString(name) {
		return errors.New("a failpoint is reply:<Method>, call:<Method>, answer:<Method> or a process's own lowercase dotted name")
	}
	return nil
}

// Armed lists the armed failpoints as they were given, sorted.
func (f *Failpoints) Armed() []string {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.points))
	for name, p := range f.points {
		if p.at > 1 {
			name += "@" + strconv.Itoa(p.at)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Hook claims a process's own failpoint and returns what the process
// calls at that point: it kills the process when name is armed and its
// occurrence has come. It is nil when name is not armed.
func (f *Failpoints) Hook(name string) func() {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.points[name]
	if !ok {
		return nil
	}
	p.claimed = true
	return func() { f.reach(name) }
}

// reach counts an occurrence of name and kills the process at the armed
// one.
func (f *Failpoints) reach(name string) {
	f.mu.Lock()
	p, ok := f.points[name]
	fire := false
	if ok {
		p.seen++
		fire = p.seen == p.at
	}
	kill := f.kill
	f.mu.Unlock()
	if fire {
		kill(name)
	}
}

// armed reports whether any failpoint of kind is armed.
func (f *Failpoints) armed(kind string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.points {
		if strings.HasPrefix(name, kind) {
			return true
		}
	}
	return false
}

// shortMethod is the method's name without its service:
// "/pkg.Service/Method" → "Method".
func shortMethod(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}

// unaryServer fires the [FailReply] points: after the handler succeeded,
// before the answer leaves. Nil when none is armed.
func (f *Failpoints) unaryServer() grpc.UnaryServerInterceptor {
	if !f.armed(FailReply) {
		return nil
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err == nil {
			f.reach(FailReply + shortMethod(info.FullMethod))
		}
		return resp, err
	}
}

// unaryClient fires the [FailCall] and [FailAnswer] points around an
// outgoing call. Nil when none is armed.
func (f *Failpoints) unaryClient() grpc.UnaryClientInterceptor {
	if !f.armed(FailCall) && !f.armed(FailAnswer) {
		return nil
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		name := shortMethod(method)
		f.reach(FailCall + name)
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil {
			f.reach(FailAnswer + name)
		}
		return err
	}
}

// check refuses an armed failpoint that can never fire, so that a typo
// does not quietly disarm a crash test: a [FailReply] point whose method
// no server of the process serves (served holds short method names), a
// [FailCall] or [FailAnswer] point whose method no known service has, or
// a process's own point the process never claimed.
func (f *Failpoints) check(served map[string]bool) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var known map[string]bool
	var errs []error
	for _, name := range sortedNames(f.points) {
		switch {
		case strings.HasPrefix(name, FailReply):
			if !served[strings.TrimPrefix(name, FailReply)] {
				errs = append(errs, fmt.Errorf("%s: this process serves no method %s", name, strings.TrimPrefix(name, FailReply)))
			}
		case strings.HasPrefix(name, FailCall), strings.HasPrefix(name, FailAnswer):
			if known == nil {
				known = registeredMethods()
			}
			_, method, _ := strings.Cut(name, ":")
			if !known[method] {
				errs = append(errs, fmt.Errorf("%s: no known service has a method %s", name, method))
			}
		case !f.points[name].claimed:
			errs = append(errs, fmt.Errorf("%s: this process has no such failpoint", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", FailpointEnv, err)
	}
	return nil
}

func sortedNames(m map[string]*failpoint) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// registeredMethods are the short names of every method of every service
// linked into the program.
func registeredMethods() map[string]bool {
	out := map[string]bool{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			ms := fd.Services().Get(i).Methods()
			for j := range ms.Len() {
				out[string(ms.Get(j).Name())] = true
			}
		}
		return true
	})
	return out
}
