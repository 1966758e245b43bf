// API key lifecycle (docs/api-keys.md): plaintext returned once, only a hash stored,
// revocation irreversible. Verified keys are cached briefly because every search may carry one;
// revocation evicts at once, on every node (NodeNotices), expiry is checked on every use (cached
// or not), and lastUsedAt is written at most once a minute per key.
import { and, desc, eq, gt, isNull } from "drizzle-orm";
import type { components } from "@sift/contract";
import type { ApiKeyAuthenticator } from "../auth/credentials.ts";
import type { KeyPrincipal } from "../auth/principal.ts";
import { checkRestrictions } from "../auth/restrictions.ts";
import {
  constantTimeEqual,
  DISPLAY_PREFIX_LENGTH,
  generateApiKey,
  looksLikeApiKey,
  newId,
  sha256,
  type KeyType,
} from "../auth/secrets.ts";
import { NotFoundError, UnauthenticatedError } from "../domain/errors.ts";
import { isStoreUnreachable, storeWithin } from "../store/errors.ts";
import type { Logger } from "../log.ts";
import { type NodeNotices, noNotices } from "../ports/node-notices.ts";
import { LOOKUP_WAIT_MS, type Lookup, primaryOnly } from "../store/lookup.ts";
import type { Db } from "../store/open.ts";
import { apiKeys, users } from "../store/schema.ts";

type ApiKey = components["schemas"]["ApiKey"];
type ApiKeyCreated = components["schemas"]["ApiKeyCreated"];
type KeyRow = typeof apiKeys.$inferSelect;

const CACHE_TTL_MS = 30_000;
/** The same while this node cannot hear the other nodes' revocations (D-347). */
const NOT_HEARING_TTL_MS = 2_000;
/** How long a verification is still used when the store cannot be asked again. */
const STALE_IF_ERROR_MS = 15 * 60_000;
const LAST_USED_EVERY_MS = 60_000;
/** Revoked keys remembered (the newest): a read replica that trails the primary still shows them usable. */
const REVOKED_KEPT = 100_000;
/** At a start, the revocations of this long before it are read from the primary (rememberRecentRevocations). */
const RECENT_REVOCATIONS_MS = 60 * 60_000;

const toMetadata = (row: KeyRow): ApiKey => ({
  id: row.id,
  type: row.type,
  name: row.name,
  displayPrefix: row.displayPrefix,
  createdAt: row.createdAt,
  lastUsedAt: row.lastUsedAt,
  revokedAt: row.revokedAt,
  expiresAt: row.expiresAt,
  indexes: row.indexes,
  referrers: row.referrers,
});

export class ApiKeyService implements ApiKeyAuthenticator {
  /** `heardAs`: the count of hearing changes when it was cached (hearingChanges). */
  private readonly cache = new Map<string, { principal: KeyPrincipal; until: number; at: number; heardAs: number }>();
  private readonly lastUsedWritten = new Map<string, number>();
  /** Hashes of the keys revoked since this process started, here or on another node (see REVOKED_KEPT). */
  private readonly revoked = new Set<string>();
  private notices: NodeNotices = noNotices;
  /**
   * Counts each time this node stops or starts hearing the other nodes' notices: a verification
   * cached before is checked again, since a revocation may have been missed meanwhile (D-347).
   */
  private hearingChanges = 0;
  private hearing = true;

  private readonly db: Db;
  /** Key verification: the region's read replica first (store/lookup.ts). */
  private readonly lookup: Lookup;
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(db: Db, log: Logger, now: () => number = Date.now, lookup: Lookup = primaryOnly(db)) {
    this.db = db;
    this.log = log;
    this.now = now;
    this.lookup = lookup;
  }

  async create(
    tenantId: string,
    userId: string,
    input: { type: KeyType; name: string; expiresAt?: number; indexes?: string[]; referrers?: string[] },
  ): Promise<ApiKeyCreated> {
    const restrictions = checkRestrictions(input, this.now());
    const key = generateApiKey(input.type);
    const row = {
      id: newId("key"),
      tenantId,
      userId: input.type === "pat" ? userId : null,
      type: input.type,
      name: input.name,
      keyHash: sha256(key),
      displayPrefix: key.slice(0, DISPLAY_PREFIX_LENGTH),
      createdAt: this.now(),
      ...restrictions,
    };
    await this.db.insert(apiKeys).values(row);
    return {
      id: row.id,
      type: row.type,
      name: row.name,
      key,
      displayPrefix: row.displayPrefix,
      createdAt: row.createdAt,
      ...restrictions,
    };
  }

  async list(tenantId: string): Promise<ApiKey[]> {
    const rows = await this.db
      .select()
      .from(apiKeys)
      .where(eq(apiKeys.tenantId, tenantId))
      .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
    return rows.map(toMetadata);
  }

  /** Tells the other nodes of each revocation made here, and heeds theirs (docs/api-keys.md, Revocation). */
  useNotices(notices: NodeNotices): void {
    this.notices = notices;
    notices.listen((notice) => {
      if (notice.kind === "key-revoked") this.forget(notice.keyHash);
    });
    notices.watchHearing?.((hearing) => {
      this.hearing = hearing;
      this.hearingChanges++;
    });
  }

  /** A cached verification used without asking the store (see CACHE_TTL_MS, NOT_HEARING_TTL_MS). */
  private fresh(entry: { until: number; at: number; heardAs: number }, now: number): boolean {
    if (entry.until <= now || entry.heardAs !== this.hearingChanges) return false;
    return this.hearing || now - entry.at < NOT_HEARING_TTL_MS;
  }

  /**
   * Remembers the keys revoked in the last hour, as the primary has them: a node started while its
   * region's read replica trails would otherwise accept a key revoked before it started, which no
   * notice will tell it of again. Returns how many.
   */
  async rememberRecentRevocations(): Promise<number> {
    const rows = await this.db
      .select({ hash: apiKeys.keyHash })
      .from(apiKeys)
      .where(gt(apiKeys.revokedAt, this.now() - RECENT_REVOCATIONS_MS));
    for (const row of rows) this.forget(row.hash);
    return rows.length;
  }

  /** A revoked key: out of the cache, and refused from now on whatever a lookup finds. */
  private forget(hash: string): void {
    this.cache.delete(hash);
    this.revoked.add(hash);
    if (this.revoked.size > REVOKED_KEPT) this.revoked.delete(this.revoked.values().next().value!);
  }

  /** 404 for an unknown id, another tenant's key, or one already revoked (docs/api-keys.md, Revocation). */
  async revoke(tenantId: string, keyId: string): Promise<ApiKey> {
    const [row] = await this.db
      .update(apiKeys)
      .set({ revokedAt: this.now() })
      .where(and(eq(apiKeys.id, keyId), eq(apiKeys.tenantId, tenantId), isNull(apiKeys.revokedAt)))
      .returning();
    if (!row) throw new NotFoundError(`API key ${keyId} does not exist or is already revoked`);
    this.forget(row.keyHash);
    this.notices.send({ kind: "key-revoked", keyHash: row.keyHash });
    return toMetadata(row);
  }

  /** Resolves a Bearer credential; 401 for anything but an active key. */
  async authenticate(plaintext: string): Promise<KeyPrincipal> {
    if (!looksLikeApiKey(plaintext)) {
      throw new UnauthenticatedError("the Bearer credential is not a Sift API key (sk-sift-… or pk-sift-srh-…)");
    }
    const hash = sha256(plaintext);
    const now = this.now();
    const cached = this.cache.get(hash);
    if (cached && this.fresh(cached, now)) {
      // Checked on each use: a cached verification must not outlive the key.
      if (isExpired(cached.principal, now)) {
        this.cache.delete(hash);
        throw expired(cached.principal);
      }
      await this.touch(cached.principal.keyId, now);
      return cached.principal;
    }
    let found: { key: typeof apiKeys.$inferSelect; userId: string | null } | undefined;
    try {
      found = await this.lookup((db) =>
        db
          .select({ key: apiKeys, userId: users.id })
          .from(apiKeys)
          .leftJoin(users, eq(users.id, apiKeys.userId))
          .where(eq(apiKeys.keyHash, hash))
          .limit(1)
          .then((rows) => rows[0]),
      );
    } catch (error) {
      // The store is unreachable: a key verified before keeps working for a while (a revocation
      // made meanwhile cannot be seen until the store answers again). Otherwise the error goes
      // on, and is a 503 (http/problem.ts).
      const usable =
        cached &&
        now - cached.until < STALE_IF_ERROR_MS &&
        !isExpired(cached.principal, now) &&
        !this.revoked.has(hash);
      if (!usable || !isStoreUnreachable(error)) throw error;
      this.log.warn("the store did not answer; using a cached key verification", { error: (error as Error).message });
      return cached.principal;
    }
    if (!found || !constantTimeEqual(found.key.keyHash, hash))
      throw new UnauthenticatedError("the API key is not valid");
    // Revoked as this node heard, though the lookup (a read replica that trails) says otherwise.
    if (found.key.revokedAt !== null || this.revoked.has(hash)) {
      throw new UnauthenticatedError("the API key has been revoked");
    }
    // A pat acts as its user and dies with them.
    if (found.key.type === "pat" && found.userId === null)
      throw new UnauthenticatedError("the API key's user no longer exists");
    const principal: KeyPrincipal = {
      kind: "key",
      keyId: found.key.id,
      tenantId: found.key.tenantId,
      type: found.key.type,
      userId: found.key.userId,
      expiresAt: found.key.expiresAt,
      indexes: found.key.indexes,
      referrers: found.key.referrers,
    };
    if (isExpired(principal, now)) throw expired(principal);
    this.cache.set(hash, { principal, until: now + CACHE_TTL_MS, at: now, heardAs: this.hearingChanges });
    await this.touch(principal.keyId, now);
    return principal;
  }

  /** Awaited, so a list right after a use shows it; a failure is logged, never fails the request. */
  private async touch(keyId: string, now: number): Promise<void> {
    if ((this.lastUsedWritten.get(keyId) ?? 0) > now - LAST_USED_EVERY_MS) return;
    this.lastUsedWritten.set(keyId, now);
    try {
      // Bounded: a store that hangs must not hold the request it is part of (D-350).
      await storeWithin(
        LOOKUP_WAIT_MS,
        "recording a key's use",
        this.db.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, keyId)),
      );
    } catch (error) {
      this.log.warn("could not record key use", { keyId, error: (error as Error).message });
    }
  }
}

const isExpired = (p: KeyPrincipal, now: number): boolean =>
  p.expiresAt !== null && p.expiresAt !== undefined && p.expiresAt <= now;

const expired = (p: KeyPrincipal): UnauthenticatedError =>
  new UnauthenticatedError(
    `the API key expired at ${new Date(p.expiresAt!).toISOString()}: create a new key in the dashboard`,
  );
