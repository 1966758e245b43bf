// Where oidc-provider's state lives: the `oauth_entries` table, through a small port so that the
// provider's adapter, the /mcp token check and the dashboard's connection list share one store.
// Works on PGlite and PostgreSQL alike (plain Drizzle, no dialect extensions).
import { and, eq, inArray, isNotNull, lt, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import type { Db } from "../store/open.ts";
import { oauthEntries, users } from "../store/schema.ts";

export type Payload = Record<string, unknown>;

/** A grant (an MCP host's connection) as the dashboard lists it. */
export interface GrantRow {
  id: string;
  accountId: string;
  clientId: string;
  createdAt: number;
  expiresAt: number | null;
  lastUsedAt: number | null;
  /** The index patterns the connection is limited to; null: every index. */
  indexes: string[] | null;
}

export interface OAuthEntries {
  upsert(model: string, id: string, payload: Payload, expiresInSeconds: number | undefined): Promise<void>;
  find(model: string, id: string): Promise<Payload | undefined>;
  findBy(model: string, column: "uid" | "userCode", value: string): Promise<Payload | undefined>;
  consume(model: string, id: string): Promise<void>;
  destroy(model: string, id: string): Promise<void>;
  /** Deletes the grant and every code and token issued under it. */
  revokeGrant(grantId: string): Promise<void>;
  /** The live grants of the tenant's users, newest first. */
  grantsOfTenant(tenantId: string): Promise<GrantRow[]>;
  /**
   * The tenant of a grant's user, and the indexes the connection is limited to (null: every
   * index); undefined when the grant or the user is gone.
   */
  tenantOfGrant(
    grantId: string,
  ): Promise<{ tenantId: string; accountId: string; indexes: string[] | null } | undefined>;
  /** Limits a grant to these index patterns, for as long as the grant lives (D-399). */
  limitGrant(grantId: string, indexes: string[], expiresInSeconds: number): Promise<void>;
  touchGrant(grantId: string, at: number): Promise<void>;
  /**
   * Deletes what expired, and the registrations of hosts that never connected within
   * UNUSED_CLIENT_MS of registering: registration is open to anyone, so they would pile up.
   */
  purgeExpired(now: number): Promise<number>;
  /** Registered clients' metadata by id, for naming connections. */
  clients(ids: string[]): Promise<Map<string, Payload>>;
}

/** Sift's own entry beside a grant: the index patterns its connection is limited to. */
const GRANT_LIMIT = "SiftGrantLimit";
/** A grant's limit entry, left-joined to the grant (`oauthEntries`) where one is read. */
const limitEntry = alias(oauthEntries, "limit_entry");
const limitOfGrant = and(eq(limitEntry.model, GRANT_LIMIT), eq(limitEntry.id, oauthEntries.id));
const indexesOf = (limit: Payload | null): string[] | null =>
  Array.isArray(limit?.indexes) ? limit.indexes.map(String) : null;

/** A registered client that has not connected this long after registering is deleted. */
export const UNUSED_CLIENT_MS = 7 * 24 * 3_600_000;

const live = (now: number) => or(sql`${oauthEntries.expiresAt} is null`, sql`${oauthEntries.expiresAt} > ${now}`);

export class DrizzleOAuthEntries implements OAuthEntries {
  private readonly db: Db;
  private readonly now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.db = db;
    this.now = now;
  }

  async upsert(model: string, id: string, payload: Payload, expiresInSeconds: number | undefined): Promise<void> {
    const row = {
      payload,
      grantId: typeof payload.grantId === "string" ? payload.grantId : null,
      accountId: typeof payload.accountId === "string" ? payload.accountId : null,
      uid: typeof payload.uid === "string" ? payload.uid : null,
      userCode: typeof payload.userCode === "string" ? payload.userCode : null,
      expiresAt: expiresInSeconds === undefined ? null : this.now() + expiresInSeconds * 1000,
    };
    await this.db
      .insert(oauthEntries)
      .values({ model, id, ...row })
      .onConflictDoUpdate({ target: [oauthEntries.model, oauthEntries.id], set: row });
    // A grant means its client connected: its registration is kept from then on (purgeExpired).
    if (model === "Grant" && typeof payload.clientId === "string") {
      await this.db
        .update(oauthEntries)
        .set({ lastUsedAt: this.now() })
        .where(and(eq(oauthEntries.model, "Client"), eq(oauthEntries.id, payload.clientId)));
    }
  }

  async find(model: string, id: string): Promise<Payload | undefined> {
    const [row] = await this.db
      .select()
      .from(oauthEntries)
      .where(and(eq(oauthEntries.model, model), eq(oauthEntries.id, id), live(this.now())));
    return row ? withConsumed(row) : undefined;
  }

  async findBy(model: string, column: "uid" | "userCode", value: string): Promise<Payload | undefined> {
    const [row] = await this.db
      .select()
      .from(oauthEntries)
      .where(and(eq(oauthEntries.model, model), eq(oauthEntries[column], value), live(this.now())));
    return row ? withConsumed(row) : undefined;
  }

  async consume(model: string, id: string): Promise<void> {
    await this.db
      .update(oauthEntries)
      .set({ consumedAt: this.now() })
      .where(and(eq(oauthEntries.model, model), eq(oauthEntries.id, id)));
  }

  async destroy(model: string, id: string): Promise<void> {
    await this.db.delete(oauthEntries).where(and(eq(oauthEntries.model, model), eq(oauthEntries.id, id)));
  }

  async revokeGrant(grantId: string): Promise<void> {
    await this.db
      .delete(oauthEntries)
      .where(or(eq(oauthEntries.grantId, grantId), and(eq(oauthEntries.model, "Grant"), eq(oauthEntries.id, grantId))));
  }

  async grantsOfTenant(tenantId: string): Promise<GrantRow[]> {
    const rows = await this.db
      .select({
        id: oauthEntries.id,
        accountId: oauthEntries.accountId,
        payload: oauthEntries.payload,
        expiresAt: oauthEntries.expiresAt,
        lastUsedAt: oauthEntries.lastUsedAt,
        limit: limitEntry.payload,
      })
      .from(oauthEntries)
      .innerJoin(users, eq(users.id, oauthEntries.accountId))
      .leftJoin(limitEntry, limitOfGrant)
      .where(and(eq(oauthEntries.model, "Grant"), eq(users.tenantId, tenantId), live(this.now())));
    return rows
      .map((r) => ({
        id: r.id,
        accountId: r.accountId!,
        clientId: String(r.payload.clientId),
        // oidc-provider stamps `iat` in epoch seconds.
        createdAt: Number(r.payload.iat) * 1000,
        expiresAt: r.expiresAt,
        lastUsedAt: r.lastUsedAt,
        indexes: indexesOf(r.limit),
      }))
      .sort((a, b) => b.createdAt - a.createdAt);
  }

  async tenantOfGrant(
    grantId: string,
  ): Promise<{ tenantId: string; accountId: string; indexes: string[] | null } | undefined> {
    const [row] = await this.db
      .select({ tenantId: users.tenantId, accountId: users.id, limit: limitEntry.payload })
      .from(oauthEntries)
      .innerJoin(users, eq(users.id, oauthEntries.accountId))
      .leftJoin(limitEntry, limitOfGrant)
      .where(and(eq(oauthEntries.model, "Grant"), eq(oauthEntries.id, grantId), live(this.now())));
    return row && { tenantId: row.tenantId, accountId: row.accountId, indexes: indexesOf(row.limit) };
  }

  async limitGrant(grantId: string, indexes: string[], expiresInSeconds: number): Promise<void> {
    // Its grantId column makes revoking the grant delete it too (revokeGrant).
    await this.upsert(GRANT_LIMIT, grantId, { grantId, indexes }, expiresInSeconds);
  }

  async touchGrant(grantId: string, at: number): Promise<void> {
    await this.db
      .update(oauthEntries)
      .set({ lastUsedAt: at })
      .where(and(eq(oauthEntries.model, "Grant"), eq(oauthEntries.id, grantId)));
  }

  async purgeExpired(now: number): Promise<number> {
    const gone = await this.db
      .delete(oauthEntries)
      .where(and(isNotNull(oauthEntries.expiresAt), lt(oauthEntries.expiresAt, now)))
      .returning({ id: oauthEntries.id });
    // oidc-provider stamps `client_id_issued_at` in epoch seconds. A client with a live grant is
    // kept whatever its mark says (one registered before the mark existed).
    const unused = await this.db
      .delete(oauthEntries)
      .where(
        and(
          eq(oauthEntries.model, "Client"),
          sql`${oauthEntries.lastUsedAt} is null`,
          sql`(${oauthEntries.payload}->>'client_id_issued_at')::bigint * 1000 < ${now - UNUSED_CLIENT_MS}`,
          sql`not exists (select 1 from ${oauthEntries} g where g.model = 'Grant'
            and g.payload->>'clientId' = ${oauthEntries}.id)`,
        ),
      )
      .returning({ id: oauthEntries.id });
    return gone.length + unused.length;
  }

  async clients(ids: string[]): Promise<Map<string, Payload>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db
      .select({ id: oauthEntries.id, payload: oauthEntries.payload })
      .from(oauthEntries)
      .where(and(eq(oauthEntries.model, "Client"), inArray(oauthEntries.id, ids)));
    return new Map(rows.map((r) => [r.id, r.payload]));
  }
}

/** oidc-provider reads `consumed` (epoch seconds) to refuse a code or refresh token used twice. */
function withConsumed(row: { payload: Payload; consumedAt: number | null }): Payload {
  return row.consumedAt === null ? row.payload : { ...row.payload, consumed: Math.floor(row.consumedAt / 1000) };
}

/** The oidc-provider adapter (its documented Adapter interface) over the entries. */
export function adapterFor(entries: OAuthEntries) {
  return (model: string) => ({
    upsert: (id: string, payload: Payload, expiresIn?: number) => entries.upsert(model, id, payload, expiresIn),
    find: (id: string) => entries.find(model, id),
    findByUid: (uid: string) => entries.findBy(model, "uid", uid),
    findByUserCode: (userCode: string) => entries.findBy(model, "userCode", userCode),
    consume: (id: string) => entries.consume(model, id),
    destroy: (id: string) => entries.destroy(model, id),
    revokeByGrantId: (grantId: string) => entries.revokeGrant(grantId),
  });
}
