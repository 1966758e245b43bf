// The MCP authorization server's state (mcp-auth/entries.ts) on each store target: what
// oidc-provider's adapter needs (find, consume, expiry, revocation by grant), and what the
// dashboard and /mcp read (a tenant's grants, a grant's tenant). Kept in the store, it outlives
// the process: a second handle on the same store sees the same tokens.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { and, eq } from "drizzle-orm";
import { adapterFor, DrizzleOAuthEntries } from "../../src/mcp-auth/entries.ts";
import { AccountService } from "../../src/services/accounts.ts";
import type { Store } from "../../src/store/open.ts";
import { oauthEntries } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";

describe.each(storeTargets())("OAuth entries on $name", (target) => {
  let store: Store;
  let clock = 1_800_000_000_000;
  const now = () => clock;
  let entries: DrizzleOAuthEntries;
  let alice: { userId: string; tenantId: string };
  let bob: { userId: string; tenantId: string };

  beforeAll(async () => {
    store = await target.open();
    entries = new DrizzleOAuthEntries(store.db, now);
    const accounts = new AccountService(store.db, 60_000);
    const signUp = async (email: string) => {
      const { me } = await accounts.signup({ email, password: "correct horse battery staple" });
      return { userId: me.user.id, tenantId: me.tenant.id };
    };
    alice = await signUp("alice@oauth.example");
    bob = await signUp("bob@oauth.example");
  });
  afterAll(() => store?.close());

  test("the adapter stores, finds, consumes and expires as oidc-provider expects", async () => {
    const codes = adapterFor(entries)("AuthorizationCode");
    await codes.upsert("code-1", { jti: "code-1", grantId: "g-1", accountId: alice.userId }, 60);
    expect(await codes.find("code-1")).toEqual({ jti: "code-1", grantId: "g-1", accountId: alice.userId });
    await codes.consume("code-1");
    // oidc-provider refuses a code used twice by this field (epoch seconds).
    expect((await codes.find("code-1"))?.consumed).toBe(Math.floor(clock / 1000));
    clock += 61_000;
    expect(await codes.find("code-1")).toBeUndefined();
    expect(await entries.purgeExpired(clock)).toBe(1);

    const interactions = adapterFor(entries)("Session");
    await interactions.upsert("s-1", { uid: "u-1", accountId: alice.userId }, 3600);
    expect(await interactions.findByUid("u-1")).toMatchObject({ uid: "u-1" });
    await interactions.destroy("s-1");
    expect(await interactions.findByUid("u-1")).toBeUndefined();
  });

  test("a tenant's grants are listed with their client; revoking one deletes its tokens, not others'", async () => {
    const clients = adapterFor(entries)("Client");
    await clients.upsert("client-1", { client_id: "client-1", client_name: "Claude" }, undefined);
    const grants = adapterFor(entries)("Grant");
    const iat = Math.floor(clock / 1000);
    await grants.upsert("g-a", { jti: "g-a", accountId: alice.userId, clientId: "client-1", iat }, 3600);
    await grants.upsert("g-b", { jti: "g-b", accountId: bob.userId, clientId: "client-1", iat }, 3600);
    const tokens = adapterFor(entries)("AccessToken");
    await tokens.upsert("at-a", { jti: "at-a", grantId: "g-a", accountId: alice.userId }, 600);
    await tokens.upsert("at-b", { jti: "at-b", grantId: "g-b", accountId: bob.userId }, 600);
    const refresh = adapterFor(entries)("RefreshToken");
    await refresh.upsert("rt-a", { jti: "rt-a", grantId: "g-a", accountId: alice.userId }, 3600);

    const listed = await entries.grantsOfTenant(alice.tenantId);
    expect(listed).toEqual([
      {
        id: "g-a",
        accountId: alice.userId,
        clientId: "client-1",
        createdAt: iat * 1000,
        expiresAt: clock + 3_600_000,
        lastUsedAt: null,
        indexes: null,
      },
    ]);
    expect((await entries.clients(["client-1"])).get("client-1")).toMatchObject({ client_name: "Claude" });
    expect(await entries.tenantOfGrant("g-a")).toEqual({
      tenantId: alice.tenantId,
      accountId: alice.userId,
      indexes: null,
    });
    // Limited at consent (D-399): what /mcp and the dashboard read.
    await entries.limitGrant("g-a", ["docs", "help_*"], 3600);
    expect((await entries.tenantOfGrant("g-a"))?.indexes).toEqual(["docs", "help_*"]);
    expect((await entries.grantsOfTenant(alice.tenantId))[0]?.indexes).toEqual(["docs", "help_*"]);
    await entries.touchGrant("g-a", clock);
    expect((await entries.grantsOfTenant(alice.tenantId))[0]?.lastUsedAt).toBe(clock);

    // A second handle on the same store: what a restarted process sees.
    const again = new DrizzleOAuthEntries(store.db, now);
    expect(await again.find("AccessToken", "at-a")).toMatchObject({ grantId: "g-a" });

    await again.revokeGrant("g-a");
    expect(await again.find("SiftGrantLimit", "g-a")).toBeUndefined();
    expect(await tokens.find("at-a")).toBeUndefined();
    expect(await refresh.find("rt-a")).toBeUndefined();
    expect(await grants.find("g-a")).toBeUndefined();
    expect(await entries.tenantOfGrant("g-a")).toBeUndefined();
    expect(await tokens.find("at-b")).toMatchObject({ grantId: "g-b" });
    expect(await entries.grantsOfTenant(alice.tenantId)).toEqual([]);
    expect(await entries.grantsOfTenant(bob.tenantId)).toHaveLength(1);
  });

  test("a registration that never connected is deleted a week on; one that connected is kept", async () => {
    const clients = adapterFor(entries)("Client");
    const grants = adapterFor(entries)("Grant");
    const issued = () => Math.floor(clock / 1000);
    await clients.upsert("lonely", { client_id: "lonely", client_id_issued_at: issued() }, undefined);
    await clients.upsert("used", { client_id: "used", client_id_issued_at: issued() }, undefined);
    await grants.upsert("g-used", { jti: "g-used", accountId: alice.userId, clientId: "used", iat: issued() }, 3600);
    // Registered before connections were marked: kept while it has a live grant.
    await clients.upsert("older", { client_id: "older", client_id_issued_at: issued() }, undefined);
    await grants.upsert(
      "g-older",
      { jti: "g-older", accountId: bob.userId, clientId: "older", iat: issued() },
      30 * 86_400,
    );
    await store.db
      .update(oauthEntries)
      .set({ lastUsedAt: null })
      .where(and(eq(oauthEntries.model, "Client"), eq(oauthEntries.id, "older")));

    clock += 6 * 86_400_000;
    await entries.purgeExpired(clock);
    expect(await clients.find("lonely")).toBeDefined();
    // Its connection expired, not its registration.
    expect(await grants.find("g-used")).toBeUndefined();

    clock += 2 * 86_400_000;
    // Only the client that never connected.
    expect(await entries.purgeExpired(clock)).toBe(1);
    expect(await clients.find("lonely")).toBeUndefined();
    expect(await clients.find("used")).toMatchObject({ client_id: "used" });
    expect(await clients.find("older")).toMatchObject({ client_id: "older" });
  });
});
