package evidence

import (
	"fmt"
	"sync"

	"github.com/ambitkernel/ambit/sdk/expr"
)

// maxCompiled bounds the cache of compiled derived expressions; contracts
// declare few, so reaching it means churn, and the cache starts over.
const maxCompiled = 1024

// compiled caches derived-field expressions by source text: the kernel
// sends each read's expressions, and contracts repeat them.
type compiled struct {
	env *expr.Env

	mu    sync.Mutex
	progs map[string]*expr.Program
}

func newCompiled() *compiled {
	return &compiled{env: recordEnv(), progs: map[string]*expr.Program{}}
}

func (c *compiled) program(src string) (*expr.Program, error) {
	c.mu.Lock()
	p, ok := c.progs[src]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := c.env.Compile(src, expr.Scalar)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.progs) >= maxCompiled {
		c.progs = map[string]*expr.Program{}
	}
	c.progs[src] = p
	return p, nil
}

// derivation is one derived field a read must compute.
type derivation struct {
	name string
	prog *expr.Program
}

// derivations compiles the granted derived fields a read asks for and
// refuses one that reads a column the source does not declare: the
// record it would run on has no such column, and the contract asks for
// something this source cannot give.
func (c *compiled) derivations(source string, columns []string, wanted map[string]string) ([]derivation, error) {
	out := make([]derivation, 0, len(wanted))
	for _, name := range sortedNames(wanted) {
		p, err := c.program(wanted[name])
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrDerived, name, err)
		}
		if col, ok := undeclared(p, columns); ok {
			return nil, fmt.Errorf("%w: derived field %q reads column %q, which source %q does not declare", ErrUndeclaredColumn, name, col, source)
		}
		out = append(out, derivation{name: name, prog: p})
	}
	return out, nil
}

// derive computes each derivation on the record. An evaluation error is a
// refusal, never a default value; its cause is not kept, because a failed
// conversion quotes the value it failed on.
func derive(ds []derivation, values map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(ds))
	vars := expr.Vars{"record": values}
	for _, d := range ds {
		v, err := d.prog.Value(vars)
		if err != nil {
			return nil, fmt.Errorf("%w: %q (%s) does not evaluate on this record", ErrDerived, d.name, d.prog)
		}
		out[d.name] = v
	}
	return out, nil
}
