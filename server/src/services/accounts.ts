// Dashboard accounts: users, tenants and sessions. A session cookie carries a random token; the
// store keeps only its SHA-256 with an expiry, so a leaked database cannot be replayed.
import { and, eq, gt, lt } from "drizzle-orm";
import type { components } from "@sift/contract";
import type { SessionAuthenticator } from "../auth/credentials.ts";
import { LoginThrottle } from "../auth/login-throttle.ts";
import type { SessionPrincipal } from "../auth/principal.ts";
import { hashPassword, newId, newSessionToken, sha256, verifyPassword } from "../auth/secrets.ts";
import { ConflictError, RateLimitedError, UnauthenticatedError } from "../domain/errors.ts";
import { isUniqueViolation } from "../store/errors.ts";
import type { Db } from "../store/open.ts";
import { oauthIdentities, sessions, tenants, users } from "../store/schema.ts";

export type Me = components["schemas"]["Me"];

export interface SignedIn {
  me: Me;
  /** The cookie value; shown to the browser once, stored only hashed. */
  token: string;
  expiresAt: number;
}

export class AccountService implements SessionAuthenticator {
  private readonly db: Db;
  private readonly sessionTtlMs: number;
  private readonly now: () => number;
  private readonly throttle: LoginThrottle;

  constructor(db: Db, sessionTtlMs: number, now: () => number = Date.now) {
    this.db = db;
    this.sessionTtlMs = sessionTtlMs;
    this.now = now;
    this.throttle = new LoginThrottle(db, now);
  }

  async signup(input: { email: string; password: string; tenantName?: string }): Promise<SignedIn> {
    const email = input.email.trim().toLowerCase();
    const passwordHash = await hashPassword(input.password);
    const userId = await this.createUser(email, passwordHash, input.tenantName ?? email.split("@")[1] ?? email);
    return this.startSession(userId);
  }

  /** `address`: the client's, for the per-address part of the throttle (auth/login-throttle.ts). */
  async login(input: { email: string; password: string }, address?: string): Promise<SignedIn> {
    const email = input.email.trim().toLowerCase();
    const wait = await this.throttle.waitMs(email, address);
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      throw new RateLimitedError(`too many failed log-ins: try again in ${seconds} s`, seconds);
    }
    const [user] = await this.db.select().from(users).where(eq(users.email, email)).limit(1);
    const ok = await verifyPassword(input.password, user?.passwordHash ?? null);
    if (!user || !ok) {
      await this.throttle.failed(email, address);
      throw new UnauthenticatedError("the e-mail or the password is not right");
    }
    await this.throttle.succeeded(email);
    return this.startSession(user.id);
  }

  /** Signs in (creating the user on first visit) the owner of an identity proven by an OAuth provider. */
  async oauthSignIn(provider: string, subject: string, email: string | undefined): Promise<SignedIn> {
    const [linked] = await this.db
      .select({ userId: oauthIdentities.userId })
      .from(oauthIdentities)
      .where(and(eq(oauthIdentities.provider, provider), eq(oauthIdentities.subject, subject)))
      .limit(1);
    if (linked) return this.startSession(linked.userId);
    // Never link to an existing account by e-mail: not every provider verifies addresses, and
    // linking would hand the account to whoever registered that address there.
    const address = (email ?? `${subject}@${provider}.oauth.invalid`).toLowerCase();
    const userId = await this.createUser(address, null, address.split("@")[1] ?? provider);
    await this.db
      .insert(oauthIdentities)
      .values({ provider, subject, userId, createdAt: this.now() })
      .onConflictDoNothing();
    return this.startSession(userId);
  }

  async logout(tokenHash: string): Promise<void> {
    await this.db.delete(sessions).where(eq(sessions.tokenHash, tokenHash));
  }

  async session(token: string): Promise<SessionPrincipal | undefined> {
    const tokenHash = sha256(token);
    const [row] = await this.db
      .select()
      .from(sessions)
      .where(and(eq(sessions.tokenHash, tokenHash), gt(sessions.expiresAt, this.now())))
      .limit(1);
    return row ? { kind: "session", tenantId: row.tenantId, userId: row.userId, tokenHash } : undefined;
  }

  async me(userId: string): Promise<Me> {
    const [row] = await this.db
      .select({ user: users, tenant: tenants })
      .from(users)
      .innerJoin(tenants, eq(tenants.id, users.tenantId))
      .where(eq(users.id, userId))
      .limit(1);
    if (!row) throw new UnauthenticatedError("the session's user no longer exists");
    return {
      user: { id: row.user.id, email: row.user.email, createdAt: row.user.createdAt },
      tenant: { id: row.tenant.id, name: row.tenant.name },
    };
  }

  /** For the MCP authorization server: only existing users hold grants. */
  async userExists(userId: string): Promise<boolean> {
    const [row] = await this.db.select({ id: users.id }).from(users).where(eq(users.id, userId)).limit(1);
    return row !== undefined;
  }

  async purgeExpiredSessions(): Promise<void> {
    await this.db.delete(sessions).where(lt(sessions.expiresAt, this.now()));
  }

  private async createUser(email: string, passwordHash: string | null, tenantName: string): Promise<string> {
    const now = this.now();
    const tenantId = newId("ten");
    const userId = newId("usr");
    try {
      await this.db.transaction(async (tx) => {
        await tx.insert(tenants).values({ id: tenantId, name: tenantName, createdAt: now });
        await tx.insert(users).values({ id: userId, tenantId, email, passwordHash, createdAt: now });
      });
    } catch (error) {
      if (isUniqueViolation(error))
        throw new ConflictError("an account with this e-mail already exists: log in instead");
      throw error;
    }
    return userId;
  }

  private async startSession(userId: string): Promise<SignedIn> {
    const me = await this.me(userId);
    const token = newSessionToken();
    const now = this.now();
    const expiresAt = now + this.sessionTtlMs;
    await this.db
      .insert(sessions)
      .values({ tokenHash: sha256(token), userId, tenantId: me.tenant.id, createdAt: now, expiresAt });
    return { me, token, expiresAt };
  }
}
