// Ambit's generated API (./gen, re-exported by path) and the small layer a
// TypeScript agent uses over it: dial, read, propose, execute, verify, do,
// exact money, refusal reasons and offline receipt verification.

export { Agent, Decision, NotAllowedError, dial } from "./agent.js";
export type { Addresses, AgentOptions, DialOptions, Evidence, Outcome, Proposal } from "./agent.js";
export { argumentsJson } from "./json.js";
export type { ArgumentValue } from "./json.js";
export { currencies, exponent, formatMoney, money, parseMoney } from "./money.js";
export type { Money } from "./money.js";
export { reason, reasonName } from "./reason.js";
export { ReceiptError, loadPublicKey, publicKeyFromBytes, signingInput, verifyReceipt } from "./receipt.js";
export { Role, certificateIdentity, channel } from "./transport.js";
export type { Channel } from "./transport.js";
