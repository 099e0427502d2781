package action

import (
	"context"
	"errors"
	"io"
)

// OpenExecutors builds every configured executor and checks what only the
// target can tell: an sql executor's table, columns and unique key column
// (its database is opened through dbs, so one that is the adapter's own
// shares its handle). Every problem is reported at once, naming its key
// path (e.g. "executors.notify.http.url"). mcp servers are
// dialled at their first call, as client; close the executors with
// [CloseExecutors].
func OpenExecutors(ctx context.Context, cfgs map[string]ExecutorConfig, dbs *Databases, client string) (map[string]Executor, error) {
	out := make(map[string]Executor, len(cfgs))
	var errs []error
	for _, tool := range sortedKeys(cfgs) {
		path := "executors." + tool
		c, err := cfgs[tool].compile(path, tool)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case c.sql != nil:
			x, err := openSQLExecutor(ctx, path+".sql", c, dbs)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[tool] = x
		case c.http != nil:
			out[tool] = newHTTPExecutor(c)
		default:
			out[tool] = newMCPExecutor(c, client)
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = CloseExecutors(out)
		return nil, err
	}
	return out, nil
}

// CloseExecutors closes the executors that hold a connection of their own
// (mcp sessions); databases are closed with their [Databases].
func CloseExecutors(executors map[string]Executor) error {
	var errs []error
	for _, x := range executors {
		if c, ok := x.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// OpenStateChecks opens every configured state check read-only, checking
// its table and columns; every problem is reported at once, naming its key
// path. On error nothing is left open.
func OpenStateChecks(ctx context.Context, cfgs map[string]StateCheckConfig) (map[string]*StateCheck, error) {
	out := make(map[string]*StateCheck, len(cfgs))
	var errs []error
	for _, source := range sortedKeys(cfgs) {
		path := "state_checks." + source
		c, err := cfgs[source].compile(path, source)
		if err == nil {
			out[source], err = openStateCheck(ctx, path, c)
		}
		if err != nil {
			delete(out, source)
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = CloseStateChecks(out)
		return nil, err
	}
	return out, nil
}

// CloseStateChecks closes every state check's database.
func CloseStateChecks(checks map[string]*StateCheck) error {
	var errs []error
	for _, c := range checks {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
