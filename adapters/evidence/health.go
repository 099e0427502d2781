package evidence

import (
	"context"
	"errors"
	"fmt"
)

// Check probes every source, each within the source timeout, and reports
// every one that cannot be read now. The process frame runs it as a
// health probe ([SourcesCheck]).
func (c *Core) Check(ctx context.Context) error {
	var errs []error
	for _, name := range sortedNames(c.d.Sources) {
		sctx, cancel := context.WithTimeout(ctx, c.d.SourceTimeout)
		err := c.d.Sources[name].Connector.Check(sctx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
