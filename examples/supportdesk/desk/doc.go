// Package desk is the supportdesk example's upstream system: a small
// customer-support desk kept in SQLite and served as an MCP server, the
// shape of tool an agent platform typically puts behind Ambit.
//
// The desk enforces the integrity of its own data — a ticket exists and
// is open, an amount is positive and in the desk's currency, an
// idempotency key names one write — and nothing else: it would credit any
// customer or close any ticket it is asked to. What an agent may do is the
// contract's business, not the desk's, which is what the example shows.
//
// Every write is idempotent per key (the same key and arguments answer the
// first result again; the same key with other arguments is refused) and
// bumps the ticket's version, so a ticket's state version moves with each
// effect.
//
// Entry points:
//
//   - [Open] opens (and creates) the desk's database; [Store.Seed] inserts rows
//     without undoing a write; [DemoData] are the example's rows.
//   - [Store] reads and writes tickets, customer messages, replies and
//     credits.
//   - [NewServer] serves a Store's tools over MCP; [Handler] is its
//     streamable HTTP endpoint.
package desk
