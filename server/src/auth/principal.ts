// Who is calling. Resolved once per request by the authentication middleware.
import type { KeyType } from "./secrets.ts";

export type Principal =
  | { kind: "anonymous" }
  | { kind: "key"; keyId: string; tenantId: string; type: KeyType; userId: string | null }
  | { kind: "session"; tenantId: string; userId: string; tokenHash: string };

export type KeyPrincipal = Extract<Principal, { kind: "key" }>;
export type SessionPrincipal = Extract<Principal, { kind: "session" }>;

export const ANONYMOUS: Principal = { kind: "anonymous" };
