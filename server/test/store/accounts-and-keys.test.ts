// Accounts, sessions and API keys against each store target (PGlite always, PostgreSQL in CI).
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { problemFor } from "../../src/http/problem.ts";
import { createLogger } from "../../src/log.ts";
import { AccountService } from "../../src/services/accounts.ts";
import { ApiKeyService } from "../../src/services/api-keys.ts";
import type { Store } from "../../src/store/open.ts";
import { apiKeys, users } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";

const log = createLogger("silent");

/** Rejects as the API would answer: with the problem (status, message) the service's error maps to. */
const answered = <T>(promise: Promise<T>): Promise<T> =>
  promise.catch((error: unknown) => {
    throw problemFor(error) ?? error;
  });

describe.each(storeTargets())("store on $name", (target) => {
  let store: Store;
  let clock = Date.now();
  const now = () => clock;
  let accounts: AccountService;
  let keys: ApiKeyService;

  beforeAll(async () => {
    store = await target.open();
    accounts = new AccountService(store.db, 60_000, now);
    keys = new ApiKeyService(store.db, log, now);
  });
  afterAll(() => store?.close());

  test("migrations create every table of the schema", async () => {
    const rows = await store.db.execute<{ table_name: string }>(
      sql`select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
    );
    const names = (Array.isArray(rows) ? rows : (rows as { rows: { table_name: string }[] }).rows).map(
      (r) => r.table_name,
    );
    expect(names).toEqual(
      expect.arrayContaining([
        "api_keys",
        "indexes",
        "oauth_identities",
        "services",
        "sessions",
        "tenants",
        "tombstones",
        "uploads",
        "users",
        "versions",
      ]),
    );
  });

  test("sign-up creates a tenant and a session; the password is stored only as a salted scrypt hash", async () => {
    const signed = await accounts.signup({ email: "Ada@Example.com", password: "correct horse battery" });
    expect(signed.me.user.email).toBe("ada@example.com");
    expect(signed.me.tenant.name).toBe("example.com");
    const [row] = await store.db.select().from(users).where(eq(users.email, "ada@example.com"));
    expect(row!.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(row!.passwordHash).not.toContain("correct horse");
    const session = await accounts.session(signed.token);
    expect(session).toMatchObject({ kind: "session", userId: signed.me.user.id, tenantId: signed.me.tenant.id });
  });

  test("the same e-mail cannot sign up twice, and two users with one password get different hashes", async () => {
    await expect(
      answered(accounts.signup({ email: "ada@example.com", password: "another password" })),
    ).rejects.toMatchObject({ status: 409 });
    await accounts.signup({ email: "bob@example.com", password: "correct horse battery" });
    const rows = await store.db.select({ h: users.passwordHash }).from(users);
    expect(new Set(rows.map((r) => r.h)).size).toBe(rows.length);
  });

  test("log-in checks the password; a wrong one is 401 without saying which part was wrong", async () => {
    const ok = await accounts.login({ email: "ADA@example.com", password: "correct horse battery" });
    expect(ok.me.user.email).toBe("ada@example.com");
    const wrong = accounts.login({ email: "ada@example.com", password: "wrong password!" });
    await expect(answered(wrong)).rejects.toMatchObject({
      status: 401,
      message: "the e-mail or the password is not right",
    });
    await expect(
      answered(accounts.login({ email: "nobody@example.com", password: "whatever123" })),
    ).rejects.toMatchObject({ status: 401 });
  });

  test("sessions expire and log-out ends them", async () => {
    const signed = await accounts.login({ email: "bob@example.com", password: "correct horse battery" });
    expect(await accounts.session(signed.token)).toBeDefined();
    clock += 61_000;
    expect(await accounts.session(signed.token)).toBeUndefined();
    const again = await accounts.login({ email: "bob@example.com", password: "correct horse battery" });
    const principal = (await accounts.session(again.token))!;
    await accounts.logout(principal.tokenHash);
    expect(await accounts.session(again.token)).toBeUndefined();
  });

  test("API key lifecycle: plaintext once, hash only at rest, newest first, revoke once, 401 after", async () => {
    const { me } = await accounts.login({ email: "ada@example.com", password: "correct horse battery" });
    const tenant = me.tenant.id;
    const svc = await keys.create(tenant, me.user.id, { type: "svc", name: "backend" });
    clock += 1;
    const srh = await keys.create(tenant, me.user.id, { type: "srh", name: "widget" });
    expect(svc.key).toMatch(/^sk-sift-svc-[0-9A-Za-z]{40}$/);
    expect(srh.key).toMatch(/^pk-sift-srh-[0-9A-Za-z]{40}$/);
    expect(svc.displayPrefix).toBe(svc.key.slice(0, 16));

    const stored = await store.db.select().from(apiKeys).where(eq(apiKeys.id, svc.id));
    expect(JSON.stringify(stored)).not.toContain(svc.key);

    const listed = await keys.list(tenant);
    expect(listed.map((k) => k.id)).toEqual([srh.id, svc.id]);
    expect(JSON.stringify(listed)).not.toContain(svc.key.slice(16));
    expect(listed[1]).toMatchObject({ lastUsedAt: null, revokedAt: null });

    clock += 5;
    expect(await keys.authenticate(svc.key)).toMatchObject({ kind: "key", type: "svc", tenantId: tenant });
    expect((await keys.list(tenant)).find((k) => k.id === svc.id)!.lastUsedAt).toBe(clock);

    const revoked = await keys.revoke(tenant, svc.id);
    expect(revoked.revokedAt).toBe(clock);
    await expect(answered(keys.revoke(tenant, svc.id))).rejects.toMatchObject({ status: 404 });
    await expect(answered(keys.authenticate(svc.key))).rejects.toMatchObject({
      status: 401,
      message: "the API key has been revoked",
    });
    await expect(answered(keys.revoke(tenant, "key_doesnotexist0000"))).rejects.toMatchObject({ status: 404 });
  });

  test("restrictions are stored and listed; past expiresAt the key is 401, cached or not", async () => {
    const { me } = await accounts.login({ email: "ada@example.com", password: "correct horse battery" });
    const expiresAt = clock + 60_000;
    const made = await keys.create(me.tenant.id, me.user.id, {
      type: "srh",
      name: "shop widget",
      expiresAt,
      indexes: ["products", "dev_*"],
      referrers: ["https://shop.example.com"],
    });
    const restrictions = { expiresAt, indexes: ["products", "dev_*"], referrers: ["https://shop.example.com"] };
    expect(made).toMatchObject(restrictions);
    expect((await keys.list(me.tenant.id)).find((k) => k.id === made.id)).toMatchObject(restrictions);
    expect(await keys.authenticate(made.key)).toMatchObject(restrictions);

    clock = expiresAt;
    const expired = { status: 401, message: expect.stringMatching(/^the API key expired at /) };
    await expect(answered(keys.authenticate(made.key))).rejects.toMatchObject(expired);
    await expect(answered(new ApiKeyService(store.db, log, now).authenticate(made.key))).rejects.toMatchObject(expired);
  });

  test("keys are tenant-scoped: another tenant can neither list nor revoke them", async () => {
    const ada = await accounts.login({ email: "ada@example.com", password: "correct horse battery" });
    const eve = await accounts.signup({ email: "eve@evil.test", password: "correct horse battery" });
    const key = await keys.create(ada.me.tenant.id, ada.me.user.id, { type: "adm", name: "ops" });
    expect((await keys.list(eve.me.tenant.id)).map((k) => k.id)).not.toContain(key.id);
    await expect(answered(keys.revoke(eve.me.tenant.id, key.id))).rejects.toMatchObject({ status: 404 });
    expect(await keys.authenticate(key.key)).toMatchObject({ tenantId: ada.me.tenant.id });
  });

  test("a pat acts as its user and dies with them; unknown and malformed keys are 401", async () => {
    const carl = await accounts.signup({ email: "carl@example.org", password: "correct horse battery" });
    const pat = await keys.create(carl.me.tenant.id, carl.me.user.id, { type: "pat", name: "laptop" });
    expect(await keys.authenticate(pat.key)).toMatchObject({ type: "pat", userId: carl.me.user.id });
    await store.db.delete(users).where(eq(users.id, carl.me.user.id));
    const fresh = new ApiKeyService(store.db, log, now);
    await expect(answered(fresh.authenticate(pat.key))).rejects.toMatchObject({ status: 401 });
    await expect(answered(fresh.authenticate(`sk-sift-svc-${"x".repeat(40)}`))).rejects.toMatchObject({
      status: 401,
      message: "the API key is not valid",
    });
    await expect(answered(fresh.authenticate("hello"))).rejects.toMatchObject({ status: 401 });
  });
});
