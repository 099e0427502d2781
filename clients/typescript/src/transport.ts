// Mutually authenticated gRPC transports from a key folder.
//
// `ambitctl dev init DIR` gives each identity a folder DIR/<identity>
// holding its TLS certificate and key (<identity>.pem, <identity>.key) and
// the CA certificate (ca.pem). Every Ambit server requires a client
// certificate signed by that CA and carries its role in its own certificate
// as the URI SAN ambit://role/<role>. With a role given, the transport
// checks it inside every TLS handshake (after the usual name check), so a
// process pointed at the wrong port or another identity is refused before
// any request is sent; without one, any server the CA signed is accepted.

import type { Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { checkServerIdentity, type PeerCertificate } from "node:tls";

/** The roles of an Ambit deployment, as certificates carry them. */
export const Role = {
  Kernel: "kernel",
  Agent: "agent",
  Evidence: "evidence-adapter",
  Action: "action-adapter",
  Verifier: "verifier",
  Governance: "governance",
} as const;
export type Role = (typeof Role)[keyof typeof Role];

const ROLE_PREFIX = "ambit://role/";

/** A transport and the HTTP/2 session behind it. */
export interface Channel {
  readonly transport: Transport;
  /** Closes the connection; calls in flight fail. */
  close(): void;
}

/** The Ambit identity a certificate carries: its common name and its one role. */
export function certificateIdentity(cert: PeerCertificate): { name: string; role: string } {
  const name = typeof cert.subject?.CN === "string" ? cert.subject.CN : "";
  const roles = (cert.subjectaltname ?? "")
    .split(", ")
    .filter((san) => san.startsWith("URI:" + ROLE_PREFIX))
    .map((san) => san.slice("URI:".length + ROLE_PREFIX.length));
  if (name === "" || roles.length !== 1) {
    throw new Error(`certificate carries no single Ambit identity (name ${JSON.stringify(name)}, roles ${JSON.stringify(roles)})`);
  }
  return { name, role: roles[0] };
}

/**
 * A gRPC transport to address (HOST:PORT) as identity, with its key folder;
 * with role, the server's certificate must carry that role.
 */
export function channel(address: string, identityDir: string, identity: string, role?: Role): Channel {
  const baseUrl = `https://${address}`;
  const session = new Http2SessionManager(baseUrl, undefined, {
    ca: readFileSync(join(identityDir, "ca.pem")),
    cert: readFileSync(join(identityDir, `${identity}.pem`)),
    key: readFileSync(join(identityDir, `${identity}.key`)),
    minVersion: "TLSv1.3",
    checkServerIdentity(host: string, cert: PeerCertificate): Error | undefined {
      const err = checkServerIdentity(host, cert);
      if (err !== undefined || role === undefined) {
        return err;
      }
      try {
        const id = certificateIdentity(cert);
        return id.role === role ? undefined : new Error(`server ${address} (${id.name}) has role ${id.role}, want ${role}`);
      } catch (e) {
        return new Error(`server ${address}: ${(e as Error).message}`);
      }
    },
  });
  return {
    transport: createGrpcTransport({ baseUrl, sessionManager: session }),
    close: () => session.abort(),
  };
}
