// Who is calling. Resolved once per request by the authentication middleware.
import type { KeyType } from "./secrets.ts";

export type Principal =
  | { kind: "anonymous" }
  | {
      kind: "key";
      keyId: string;
      tenantId: string;
      type: KeyType;
      userId: string | null;
      /** Restrictions of the key (auth/restrictions.ts); absent or null where it has none. */
      expiresAt?: number | null;
      indexes?: readonly string[] | null;
      referrers?: readonly string[] | null;
    }
  | { kind: "session"; tenantId: string; userId: string; tokenHash: string }
  /**
   * An MCP host holding an OAuth access token (mcp-auth/): read-only, on /mcp only, for the
   * tenant of the user who consented. `grantId` names the connection the dashboard lists.
   */
  | {
      kind: "oauth";
      tenantId: string;
      userId: string;
      clientId: string;
      grantId: string;
      /** The index patterns the person limited the connection to at consent; null: every index. */
      indexes?: readonly string[] | null;
    };

export type KeyPrincipal = Extract<Principal, { kind: "key" }>;
export type SessionPrincipal = Extract<Principal, { kind: "session" }>;
export type OAuthPrincipal = Extract<Principal, { kind: "oauth" }>;

export const ANONYMOUS: Principal = { kind: "anonymous" };
