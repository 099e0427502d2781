package gateway

import (
	"errors"
	"fmt"
	"github.com/ambitkernel/ambit/sdk/serve"
	"net"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Defaults of the configuration.
const (
	// DefaultIdentity is the identity an unset identity becomes.
	DefaultIdentity = "agent"
	// DefaultCallTimeout bounds one tool call: the read, or the proposal,
	// execution and readback together.
	DefaultCallTimeout = 30 * time.Second
	// maxTaskField is the longest task id and purpose the kernel takes.
	maxTaskField = 256
)

// Config is ambit-mcp's YAML configuration: the keys every process has
// ([service.Common]; identity and pki_dir are the agent's own), the four
// addresses the agent talks to, the task the gateway serves and where it
// serves streamable HTTP.
type Config struct {
	service.Common `json:",inline"`
	// Kernel is the host:port of the kernel's agent listener.
	Kernel string `json:"kernel"`
	// Evidence, Action and Verifier are the host:port of the agent's
	// evidence adapter, action adapter and verifier.
	Evidence string `json:"evidence"`
	Action   string `json:"action"`
	Verifier string `json:"verifier"`
	// TaskID is the task the gateway works on; governance binds it to a
	// contract for this agent.
	TaskID string `json:"task_id"`
	// Purpose is the purpose the agent reads and proposes under; it must
	// be the task's.
	Purpose string `json:"purpose"`
	// Listen is the loopback host:port the streamable HTTP endpoint is
	// served on, at /mcp (unused with --stdio). Anyone who reaches it acts
	// as the agent, so it is never served beyond loopback.
	Listen string `json:"listen"`
	// CallTimeout bounds one tool call.
	CallTimeout config.Duration `json:"call_timeout"`
}

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() {
	c.Common.ApplyDefaults(DefaultIdentity)
	if c.Listen == "" {
		c.Listen = service.DefaultListen
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = config.Duration(DefaultCallTimeout)
	}
}

// Validate reports every problem of c at once, each naming its key.
func (c *Config) Validate() error {
	errs := []error{c.Common.Validate()}
	for _, a := range []struct{ key, addr string }{
		{"kernel", c.Kernel}, {"evidence", c.Evidence}, {"action", c.Action}, {"verifier", c.Verifier},
	} {
		if a.addr == "" {
			errs = append(errs, fmt.Errorf("%s is required (host:port)", a.key))
		} else if err := serve.CheckAddrs(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.key, err))
		}
	}
	for _, f := range []struct{ key, value string }{{"task_id", c.TaskID}, {"purpose", c.Purpose}} {
		if f.value == "" || len(f.value) > maxTaskField {
			errs = append(errs, fmt.Errorf("%s is required (1 to %d bytes)", f.key, maxTaskField))
		}
	}
	if err := checkLoopback(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %w", err))
	}
	// The gateway serves no gRPC: these keys of the process frame would
	// do nothing, and a key that silently does nothing is a trap.
	if c.Reflection {
		errs = append(errs, errors.New("reflection: ambit-mcp serves no gRPC listener to reflect"))
	}
	if c.HealthListen != "" {
		errs = append(errs, errors.New("health_listen: ambit-mcp serves no gRPC health listener"))
	}
	return errors.Join(errs...)
}

// checkLoopback refuses an address that is not on the loopback interface:
// the gateway authenticates no MCP client, it acts as the agent for
// whoever connects.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: serve on a loopback address only (127.0.0.1, [::1] or localhost)", addr)
	}
	return nil
}
