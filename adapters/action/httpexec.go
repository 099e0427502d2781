package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/ambitkernel/ambit/sdk/expr"
)

// maxReply bounds the reply of an http executor's target that is read.
const maxReply = 1 << 20

// httpExecutor POSTs one JSON object per effect with the idempotency key
// in the Idempotency-Key header. The target deduplicates on the key, so
// an attempt left unfinished is simply sent again.
type httpExecutor struct {
	url       string
	body      map[string]*expr.Program
	recordRef *expr.Program
	client    *http.Client
}

var _ Executor = (*httpExecutor)(nil)

func newHTTPExecutor(c *compiled) *httpExecutor {
	return &httpExecutor{
		url:       c.url.String(),
		body:      c.mapped,
		recordRef: c.recordRef,
		client: &http.Client{
			Timeout: c.http.Timeout.D(DefaultExecutorTimeout),
			// A redirect would send the effect somewhere the
			// configuration does not name.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

func (x *httpExecutor) Kind() string { return "http" }

// Prepare builds the request body: the mapped object, or the call's
// canonical arguments without a mapping.
func (x *httpExecutor) Prepare(in Input) (Effect, error) {
	body := []byte(in.ArgsJSON)
	if len(x.body) > 0 {
		obj, err := plainMap("body", x.body, in)
		if err != nil {
			return nil, err
		}
		if body, err = json.Marshal(obj); err != nil {
			return nil, fmt.Errorf("%w (body: %v)", ErrArguments, err)
		}
	}
	return &httpEffect{x: x, in: in, body: body}, nil
}

type httpEffect struct {
	x    *httpExecutor
	in   Input
	body []byte
}

// Do sends the request: a 2xx reply is the effect done; 4xx the target's
// refusal, except those that ask to be sent again later (408, 425, 429)
// and 409, which may answer another attempt under the same key; anything
// else leaves it to a retry, which sends the same request with the same
// key.
func (e *httpEffect) Do(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.x.url, bytes.NewReader(e.body))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrTargetUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", e.in.Key)
	resp, err := e.x.client.Do(req)
	if err != nil {
		if isDialError(err) {
			return "", fmt.Errorf("%w: %w: %w", ErrTargetUnavailable, errNothingDone, err)
		}
		return "", fmt.Errorf("%w: %w", ErrTargetUnavailable, err)
	}
	defer func() { _ = resp.Body.Close() }()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooEarly || resp.StatusCode == http.StatusTooManyRequests:
		return "", fmt.Errorf("%w: %s answered %s", ErrTargetUnavailable, e.x.url, resp.Status)
	case resp.StatusCode == http.StatusConflict:
		return "", fmt.Errorf("%w: %s answered %s", ErrTargetRefused, e.x.url, resp.Status)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return "", fmt.Errorf("%w: %w: %s answered %s", ErrTargetRefused, errNothingDone, e.x.url, resp.Status)
	default:
		return "", fmt.Errorf("%w: %s answered %s", ErrTargetUnavailable, e.x.url, resp.Status)
	}
	if e.x.recordRef == nil {
		return e.in.EffectID, nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: read the reply: %w", ErrInDoubt, err)
	}
	if len(reply) > maxReply {
		return "", fmt.Errorf("%w: the reply is longer than %d bytes", ErrInDoubt, maxReply)
	}
	obj, err := replyObject(reply)
	if err != nil {
		return "", err
	}
	return recordRef(e.x.recordRef, e.in, obj)
}

// Resolve sends the request again with the same key: the target
// deduplicates.
func (e *httpEffect) Resolve(ctx context.Context) (string, error) { return e.Do(ctx) }

// isDialError reports whether err happened while connecting, before any
// byte of the request was sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
