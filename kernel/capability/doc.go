// Package capability holds the life cycle of a one-time capability and its
// commitment as one table: issued (AUTHORISED) → redeemed → effected →
// verified or failed, or revoked / expired before redemption. [Next] is a
// pure function of the current status and an event; the kernel consults it
// for every change, so the rules live here and nowhere else.
package capability
