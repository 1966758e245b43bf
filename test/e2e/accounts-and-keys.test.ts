// Dashboard sign-in and the API key lifecycle (docs/api-keys.md, docs/authority.md) over HTTP, through Prism.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ok } from "../support/contract.ts";
import { Http } from "../support/http.ts";
import { startPrismProxy, type Prism } from "../support/prism.ts";
import { startSift, type RunningSift } from "../support/server.ts";

let server: RunningSift;
let prism: Prism;
let http: Http;

beforeAll(async () => {
  server = await startSift();
  prism = await startPrismProxy(server.url);
  http = new Http(prism.url, server.url);
});
afterAll(async () => {
  await prism?.stop();
  await server?.stop();
});

describe("dashboard session", () => {
  test("sign-up sets an HttpOnly, SameSite=Lax session cookie; me, logout", async () => {
    const browser = http.fresh();
    const signup = await browser.post("/v1/auth/signup", {
      email: "owner@shop.example",
      password: "correct horse battery staple",
      tenantName: "Shop",
    });
    ok(signup, 201);
    expect(signup.body).toMatchObject({ user: { email: "owner@shop.example" }, tenant: { name: "Shop" } });
    const cookie = signup.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^sift_session=[\w-]{40,};/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).not.toMatch(/Secure/); // plain http on localhost

    ok(await browser.get("/v1/auth/me"), 200);
    ok(await browser.post("/v1/auth/logout"), 204);
    const after = await browser.get("/v1/auth/me");
    ok(after, 401);
    expect(after.headers.get("content-type")).toBe("application/problem+json");
  });

  test("log-in with the wrong password is 401 and sets no cookie; a duplicate sign-up is 409", async () => {
    const browser = http.fresh();
    ok(
      await browser.post("/v1/auth/signup", { email: "dup@shop.example", password: "correct horse battery staple" }),
      201,
    );
    const again = await http
      .fresh()
      .post("/v1/auth/signup", { email: "DUP@shop.example", password: "correct horse battery staple" });
    ok(again, 409);
    const wrong = await http
      .fresh()
      .post("/v1/auth/login", { email: "dup@shop.example", password: "not the password" });
    ok(wrong, 401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    const right = http.fresh();
    ok(
      await right.post("/v1/auth/login", { email: "dup@shop.example", password: "correct horse battery staple" }),
      200,
    );
    expect(right.sessionCookie).toBeDefined();
  });

  test("a cookie-authenticated write from another origin is refused (CSRF); our own origin passes", async () => {
    const browser = http.fresh();
    ok(
      await browser.post("/v1/auth/signup", { email: "csrf@shop.example", password: "correct horse battery staple" }),
      201,
    );
    const evil = await browser.post(
      "/v1/api-keys",
      { type: "svc", name: "x" },
      { headers: { origin: "https://evil.example" } },
    );
    ok(evil, 403);
    const site = await browser.post(
      "/v1/api-keys",
      { type: "svc", name: "x" },
      { headers: { "sec-fetch-site": "cross-site" } },
    );
    ok(site, 403);
    const same = await browser.post("/v1/api-keys", { type: "svc", name: "x" }, { headers: { origin: server.url } });
    ok(same, 200);
  });
});

describe("API keys", () => {
  let owner: Http;
  beforeAll(async () => {
    owner = http.fresh();
    ok(
      await owner.post("/v1/auth/signup", { email: "keys@shop.example", password: "correct horse battery staple" }),
      201,
    );
  });

  test("each type gets its prefix; the plaintext is returned once and never listed", async () => {
    const made: Record<string, { id: string; key: string; displayPrefix: string }> = {};
    for (const type of ["pat", "svc", "adm", "srh"]) {
      const reply = await owner.post("/v1/api-keys", { type, name: `${type} key` });
      ok(reply, 200);
      expect(Object.keys(reply.body).sort()).toEqual([
        "createdAt",
        "displayPrefix",
        "expiresAt",
        "id",
        "indexes",
        "key",
        "name",
        "referrers",
        "type",
      ]);
      made[type] = reply.body;
    }
    expect(made.pat!.key).toMatch(/^sk-sift-pat-[0-9A-Za-z]{40}$/);
    expect(made.svc!.key).toMatch(/^sk-sift-svc-/);
    expect(made.adm!.key).toMatch(/^sk-sift-adm-/);
    expect(made.srh!.key).toMatch(/^pk-sift-srh-[0-9A-Za-z]{40}$/);
    expect(made.srh!.displayPrefix).toBe(made.srh!.key.slice(0, 16));

    const list = await owner.get("/v1/api-keys");
    ok(list, 200);
    expect(list.body.map((k: { type: string }) => k.type)).toEqual(["srh", "adm", "svc", "pat"]);
    for (const k of list.body) {
      expect(Object.keys(k).sort()).toEqual([
        "createdAt",
        "displayPrefix",
        "expiresAt",
        "id",
        "indexes",
        "lastUsedAt",
        "name",
        "referrers",
        "revokedAt",
        "type",
      ]);
      expect(k.revokedAt).toBeNull();
    }
    expect(list.text).not.toContain(made.svc!.key);
  });

  test("using a key sets lastUsedAt; revoking sets revokedAt; a second revoke or an unknown id is 404; the key then gets 401", async () => {
    const created = await owner.post("/v1/api-keys", { type: "adm", name: "short-lived" });
    const { id, key } = created.body;
    ok(await http.get("/v1/indexes", { key, cookies: false }), 200);
    const used = (await owner.get("/v1/api-keys")).body.find((k: { id: string }) => k.id === id);
    expect(used.lastUsedAt).toBeGreaterThanOrEqual(created.body.createdAt);

    const revoked = await owner.delete(`/v1/api-keys/${id}`);
    ok(revoked, 200);
    expect(revoked.body).toMatchObject({ id, type: "adm", name: "short-lived" });
    expect(revoked.body.revokedAt).toBeGreaterThanOrEqual(created.body.createdAt);
    expect(revoked.body.key).toBeUndefined();

    ok(await owner.delete(`/v1/api-keys/${id}`), 404);
    ok(await owner.delete("/v1/api-keys/key_unknown000000000"), 404);
    const denied = await http.get("/v1/indexes", { key });
    ok(denied, 401);
    expect(denied.body).toMatchObject({
      status: 401,
      resultCode: "UNAUTHORIZED",
      detail: "the API key has been revoked",
    });
  });

  test("keys cannot manage keys: a Bearer key on /v1/api-keys is 401 even with a valid key", async () => {
    const { key } = (await owner.post("/v1/api-keys", { type: "adm", name: "admin" })).body;
    const reply = await http.post("/v1/api-keys", { type: "svc", name: "minted by a key" }, { key });
    ok(reply, 401);
    expect(reply.body.detail).toMatch(/keys cannot manage keys/);
  });

  test("create validates type and name with 400 naming the field", async () => {
    const badType = await owner.post("/v1/api-keys", { type: "root", name: "x" });
    ok(badType, 400);
    expect(badType.body.errors).toEqual([{ field: "type", message: "must be one of: pat, svc, adm, srh" }]);
    const noName = await owner.post("/v1/api-keys", { type: "svc" });
    ok(noName, 400);
    expect(noName.body.errors).toEqual([{ field: "name", message: "is required" }]);
    const emptyName = await owner.post("/v1/api-keys", { type: "svc", name: "" });
    ok(emptyName, 400);
    expect(emptyName.body.errors[0].field).toBe("name");
  });
});
