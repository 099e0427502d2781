package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"sync"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// MaxCited is how many receipts a proposal may cite (the kernel's bound).
const MaxCited = 16

// Session is what one MCP session keeps: the signed receipts of its
// reads, newest first, at most [MaxCited]. It is safe for concurrent
// use.
type Session struct {
	mu       sync.Mutex
	receipts []*receiptv1.Envelope
}

// Add keeps a read's signed receipt as the newest, dropping the oldest
// beyond [MaxCited].
func (s *Session) Add(env *receiptv1.Envelope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receipts = append([]*receiptv1.Envelope{env}, s.receipts...)
	if len(s.receipts) > MaxCited {
		s.receipts = s.receipts[:MaxCited]
	}
}

// Cited returns the receipts a proposal cites: every kept read, newest
// first.
func (s *Session) Cited() []*receiptv1.Envelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.receipts)
}

// RequestID is the request id of a proposal: a hash of the task, the call
// (tool and canonical arguments), the approval cited, the call's round
// (see [Remembered]) and the payloads of the receipts cited, in order.
// The same call made again with nothing new — a client's retry after a
// lost reply, say — gets the kernel's first answer, and on ALLOW the same
// capability, which executes once; a new read, an approval or a new
// round makes it a new proposal.
func RequestID(task string, call *toolcall.Call, approvalID string, round int, cited []*receiptv1.Envelope) string {
	return requestID(append([]string{"ambit-mcp-request-v1", task, call.Hash(), approvalID, strconv.Itoa(round)}, hashes(cited)...)...)
}

// AfterRefusal is the request id of a call proposed afresh because the
// capability the request id refused obtained was refused by its target:
// as stable as requestID, so that a retry of the new proposal repeats it.
func AfterRefusal(refused, capabilityID string) string {
	return requestID("ambit-mcp-after-refusal-v1", refused, capabilityID)
}

// requestID is a request id made of parts: "mcp-" and their hash, each
// part ended by a zero byte.
func requestID(parts ...string) string {
	h := sha256.New()
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "mcp-" + hex.EncodeToString(h.Sum(nil))
}

func hashes(envs []*receiptv1.Envelope) []string {
	out := make([]string, len(envs))
	for i, e := range envs {
		out[i] = envelope.Hash(e)
	}
	return out
}
