// Package money validates and formats exact amounts: integer minor units of
// an ISO 4217 currency. There is no floating-point path anywhere.
package money
