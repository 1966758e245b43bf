// MCP connections: what an OAuth grant is to the people using Sift. /mcp turns an access token
// into a principal here; the dashboard lists a tenant's connections and revokes them, which
// deletes the grant with every code and token issued under it (mcp-auth/entries.ts).
import type { OAuthPrincipal } from "../auth/principal.ts";
import { NotFoundError, UnauthenticatedError } from "../domain/errors.ts";
import type { OAuthEntries } from "./entries.ts";
import { type McpProviders, REFRESH_TOKEN_TTL_SECONDS } from "./provider.ts";

export interface McpConnection {
  id: string;
  clientId: string;
  clientName: string | null;
  clientUri: string | null;
  createdAt: number;
  lastUsedAt: number | null;
  /** When the connection ends unless its refresh token is used before (epoch ms). */
  expiresAt: number | null;
  indexes: string[] | null;
}

/** Last-use times are written at most this often per connection. */
const TOUCH_EVERY_MS = 60_000;

export class McpConnections {
  private readonly touched = new Map<string, number>();
  private readonly entries: OAuthEntries;
  private readonly providers: McpProviders;
  private readonly now: () => number;

  constructor(entries: OAuthEntries, providers: McpProviders, now: () => number = Date.now) {
    this.entries = entries;
    this.providers = providers;
    this.now = now;
  }

  /** The principal of an access token presented to `<issuer>/mcp`; 401 for anything else. */
  async authenticate(token: string, issuer: string): Promise<OAuthPrincipal> {
    const found = await this.providers.accessToken(issuer, token, `${issuer}/mcp`);
    // The grant and its user must still exist: revoking deletes the grant (and its tokens), and a
    // deleted user takes their connections along.
    const owner = found ? await this.entries.tenantOfGrant(found.grantId) : undefined;
    if (!found || !owner || owner.accountId !== found.accountId) {
      throw new UnauthenticatedError(
        "the access token is invalid, expired or revoked: the MCP host must refresh it or sign in again",
      );
    }
    const now = this.now();
    if (now - (this.touched.get(found.grantId) ?? 0) >= TOUCH_EVERY_MS) {
      this.touched.set(found.grantId, now);
      await this.entries.touchGrant(found.grantId, now);
    }
    return {
      kind: "oauth",
      tenantId: owner.tenantId,
      userId: owner.accountId,
      clientId: found.clientId,
      grantId: found.grantId,
      indexes: owner.indexes,
    };
  }

  async list(tenantId: string): Promise<McpConnection[]> {
    const grants = await this.entries.grantsOfTenant(tenantId);
    const clients = await this.entries.clients([...new Set(grants.map((g) => g.clientId))]);
    return grants.map((g) => {
      const client = clients.get(g.clientId);
      const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
      return {
        id: g.id,
        clientId: g.clientId,
        clientName: text(client?.client_name),
        clientUri: text(client?.client_uri),
        createdAt: g.createdAt,
        lastUsedAt: g.lastUsedAt,
        expiresAt: g.expiresAt,
        indexes: g.indexes,
      };
    });
  }

  /** Limits a new connection to these index patterns, for as long as it lives (D-399). */
  limitGrant(grantId: string, indexes: string[]): Promise<void> {
    return this.entries.limitGrant(grantId, indexes, REFRESH_TOKEN_TTL_SECONDS);
  }

  /** Ends a connection of the tenant now: its access and refresh tokens stop working at once. */
  async revoke(tenantId: string, id: string): Promise<void> {
    const owner = await this.entries.tenantOfGrant(id);
    if (!owner || owner.tenantId !== tenantId) throw new NotFoundError(`MCP connection "${id}" does not exist`);
    await this.entries.revokeGrant(id);
    this.touched.delete(id);
  }

  purgeExpired(): Promise<number> {
    return this.entries.purgeExpired(this.now());
  }
}
