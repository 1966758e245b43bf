// OAuth for MCP hosts over plain HTTP (docs/mcp-auth.md): the discovery documents, the 401's
// challenge, dynamic registration, the authorization code flow with PKCE through the consent
// endpoints the dashboard's screen calls, tokens bound to the consenting user's tenant and to
// /mcp, refresh with rotation, and revocation from the dashboard's API. The same flow in a real
// browser, driven by the MCP SDK's own client, is test/browser/mcp-oauth.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { expectContract } from "../support/contract.ts";
import type { Http } from "../support/http.ts";
import { McpOAuth, REDIRECT, type Tokens } from "../support/mcp-oauth.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
let oauth: McpOAuth;
let direct: Http;
let base: string;

beforeAll(async () => {
  world = await startWorld();
  base = world.server.url;
  oauth = new McpOAuth(base);
  direct = oauth.direct;
});
afterAll(() => world?.stop());

const register = (name?: string) => oauth.register(name);
const signedIn = (email: string) => oauth.signedIn(email);
const startAuthorization = (browser: Http, clientId: string) => oauth.startAuthorization(browser, clientId);
const followToHost = (browser: Http, redirectTo: string) => oauth.followToHost(browser, redirectTo);
const token = (fields: Record<string, string>) => oauth.token(fields);
const connect = (email: string, clientId: string) => oauth.connect(email, clientId);
const listIndexes = (accessToken: string) => oauth.listIndexes(accessToken);

describe("discovery", () => {
  test("a 401 from /mcp names the protected resource metadata, which names the authorization server", async () => {
    const reply = await world.http.post("/mcp", { jsonrpc: "2.0", id: 1, method: "ping" }, { key: "" });
    expect(reply.status).toBe(401);
    expectContract(reply);
    expect(reply.headers.get("www-authenticate")).toBe(
      `Bearer realm="sift", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    );
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const metadata = await direct.get(path);
      expect(metadata.status).toBe(200);
      expect(metadata.body).toMatchObject({
        resource: `${base}/mcp`,
        authorization_servers: [base],
        scopes_supported: ["mcp:read"],
      });
    }
  });

  test("the authorization server's metadata (RFC 8414) offers registration, PKCE S256, refresh and revocation", async () => {
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
      const reply = await direct.get(path);
      expect(reply.status, reply.text).toBe(200);
      expect(reply.body).toMatchObject({
        issuer: base,
        authorization_endpoint: `${base}/oauth2/auth`,
        token_endpoint: `${base}/oauth2/token`,
        registration_endpoint: `${base}/oauth2/reg`,
        revocation_endpoint: `${base}/oauth2/token/revocation`,
        code_challenge_methods_supported: ["S256"],
      });
      expect(reply.body.grant_types_supported).toEqual(expect.arrayContaining(["authorization_code", "refresh_token"]));
      expect(reply.body.scopes_supported).toContain("mcp:read");
    }
  });

  test("registration refuses what it cannot honour with an OAuth error, not a 500", async () => {
    const reply = await direct.post("/oauth2/reg", { redirect_uris: ["not a url"] });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe("invalid_redirect_uri");
  });
});

describe("a connection", () => {
  let clientId: string;
  let tokens: Tokens;
  beforeAll(async () => {
    clientId = await register();
    tokens = await connect(world.a.email, clientId);
  });

  test("the access token is short-lived, read-only, and comes with a refresh token", () => {
    expect(tokens.expires_in).toBeLessThanOrEqual(600);
    expect(tokens.scope).toBe("mcp:read");
    expect(tokens.refresh_token).toBeTruthy();
  });

  test("the token reaches the consenting user's tenant through /mcp, PRIVATE indexes included", async () => {
    const reply = await listIndexes(tokens.access_token);
    expect(reply.status, reply.text).toBe(200);
    const listed = JSON.parse(reply.body.result.content[0].text);
    expect(listed.indexes.map((i: { name: string }) => i.name).sort()).toEqual(
      [world.a.privateIndex, world.a.publicIndex].sort(),
    );
    const other = await direct.post(
      "/mcp",
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "search", arguments: { indexName: world.b.privateIndex, phrase: "ams" } },
      },
      { key: tokens.access_token, headers: { accept: "application/json, text/event-stream" } },
    );
    expect(other.body.result.isError).toBe(true);
    expect(other.body.result.content[0].text).toMatch(/does not exist/);
  });

  test("the token is good for /mcp only: the REST API refuses it", async () => {
    const q = new URLSearchParams({ query: "ams", indexName: world.a.privateIndex, serviceName: world.a.service });
    expect((await direct.get(`/v1/search?${q}`, { key: tokens.access_token })).status).toBe(401);
    expect((await direct.get("/v1/indexes", { key: tokens.access_token })).status).toBe(401);
  });

  test("refresh rotates: the new tokens work, the spent refresh token does not", async () => {
    const refreshed = await token({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId,
      resource: `${base}/mcp`,
    });
    expect(refreshed.status, refreshed.text).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(tokens.refresh_token);
    expect((await listIndexes(refreshed.body.access_token)).status).toBe(200);
    tokens = { ...tokens, ...refreshed.body };
    const again = await token({ grant_type: "refresh_token", refresh_token: "x".repeat(43), client_id: clientId });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe("invalid_grant");
  });

  test("the dashboard lists the connection; another tenant cannot revoke it; revoking kills both tokens", async () => {
    const listed = await world.a.session.get("/v1/mcp-connections");
    expectContract(listed);
    expect(listed.status).toBe(200);
    const mine = listed.body.connections.find((c: { clientId: string }) => c.clientId === clientId);
    expect(mine).toMatchObject({ clientName: "Test host", clientUri: null });
    expect(mine.lastUsedAt).toBeGreaterThan(0);
    expect((await world.b.session.get("/v1/mcp-connections")).body.connections).toEqual([]);

    const foreign = await world.b.session.delete(`/v1/mcp-connections/${mine.id}`);
    expectContract(foreign);
    expect(foreign.status).toBe(404);
    expect((await listIndexes(tokens.access_token)).status).toBe(200);

    const revoked = await world.a.session.delete(`/v1/mcp-connections/${mine.id}`);
    expectContract(revoked);
    expect(revoked.status).toBe(204);
    const refused = await listIndexes(tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    const refresh = await token({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    expect(refresh.body.error).toBe("invalid_grant");
    expect((await world.a.session.get("/v1/mcp-connections")).body.connections).toEqual([]);
    expect((await world.a.session.delete(`/v1/mcp-connections/${mine.id}`)).status).toBe(404);
  });

  test("API keys are not affected: a key still reaches /mcp", async () => {
    const reply = await direct.post(
      "/mcp",
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { key: world.a.keys.svc, headers: { accept: "application/json, text/event-stream" } },
    );
    expect(reply.status).toBe(200);
  });
});

describe("the consent step", () => {
  test("names the host, the account and the read-only scope, to the signed-in user only", async () => {
    const clientId = await register("Named host");
    const browser = await signedIn(world.b.email);
    const { uid } = await startAuthorization(browser, clientId);
    const details = await browser.get(`/oauth2/interaction/${uid}/details`);
    expect(details.status, details.text).toBe(200);
    expect(details.body).toMatchObject({
      uid,
      client: { id: clientId, name: "Named host", redirectUri: REDIRECT },
      scopes: ["mcp:read"],
      resource: `${base}/mcp`,
      account: { email: world.b.email },
    });
    // Signed out, the same browser is told to sign in.
    const anonymous = direct.fresh();
    const noSession = await anonymous.get(`/oauth2/interaction/${uid}/details`);
    expect(noSession.status).toBe(401);
    expect(noSession.headers.get("content-type")).toMatch(/problem\+json/);
    // Another browser, signed in, did not start this request.
    const other = await signedIn(world.b.email);
    const elsewhere = await other.get(`/oauth2/interaction/${uid}/details`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.detail).toMatch(/expired or was started in another browser/);
  });

  test("declining sends the host access_denied and makes no connection", async () => {
    const clientId = await register("Declined host");
    const browser = await signedIn(world.b.email);
    const { uid, state } = await startAuthorization(browser, clientId);
    const abort = await browser.post(`/oauth2/interaction/${uid}/abort`, undefined, { headers: { origin: base } });
    expect(abort.status).toBe(200);
    const back = await followToHost(browser, abort.body.redirectTo);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe(state);
    expect((await world.b.session.get("/v1/mcp-connections")).body.connections).toEqual([]);
  });

  test("a consent posted from another site is refused (CSRF)", async () => {
    const clientId = await register("CSRF host");
    const browser = await signedIn(world.b.email);
    const { uid } = await startAuthorization(browser, clientId);
    const forged = await browser.post(`/oauth2/interaction/${uid}/confirm`, undefined, {
      headers: { origin: "https://evil.example" },
    });
    expect(forged.status).toBe(403);
  });

  test("an authorization request without PKCE is refused", async () => {
    const clientId = await register("No PKCE");
    const query = new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: REDIRECT });
    const reply = await direct.get(`/oauth2/auth?${query}`);
    expect(reply.status).toBe(303);
    const back = new URL(reply.headers.get("location")!);
    expect(back.searchParams.get("error")).toBe("invalid_request");
  });
});

describe("a connection limited to some indexes", () => {
  const mcpCall = (accessToken: string, name: string, args: Record<string, unknown>) =>
    direct.post(
      "/mcp",
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name, arguments: args } },
      { key: accessToken, headers: { accept: "application/json, text/event-stream" } },
    );

  test("reads only the indexes allowed at consent; the dashboard lists the limit", async () => {
    const clientId = await register("Limited host");
    const tokens = await oauth.connect(world.a.email, clientId, { indexes: [world.a.publicIndex] });
    const listed = await listIndexes(tokens.access_token);
    expect(listed.status, listed.text).toBe(200);
    expect(JSON.parse(listed.body.result.content[0].text).indexes.map((i: { name: string }) => i.name)).toEqual([
      world.a.publicIndex,
    ]);
    const allowed = await mcpCall(tokens.access_token, "search", { indexName: world.a.publicIndex, phrase: "ams" });
    expect(allowed.body.result.isError, allowed.text).toBeFalsy();
    const refused = await mcpCall(tokens.access_token, "search", { indexName: world.a.privateIndex, phrase: "ams" });
    expect(refused.body.result.isError).toBe(true);
    expect(refused.body.result.content[0].text).toMatch(/this MCP connection is restricted to the indexes/);

    const connections = await world.a.session.get("/v1/mcp-connections");
    expectContract(connections);
    const mine = connections.body.connections.find((c: { clientId: string }) => c.clientId === clientId);
    expect(mine.indexes).toEqual([world.a.publicIndex]);
    // A refreshed token keeps the limit: it belongs to the connection, not to one token.
    const refreshed = await token({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    expect(refreshed.status, refreshed.text).toBe(200);
    const again = await mcpCall(refreshed.body.access_token, "search", {
      indexName: world.a.privateIndex,
      phrase: "a",
    });
    expect(again.body.result.isError).toBe(true);
    expect((await world.a.session.delete(`/v1/mcp-connections/${mine.id}`)).status).toBe(204);
  });

  test("a limit that is not a list of index names is refused, naming it; nothing is connected", async () => {
    const clientId = await register("Badly limited host");
    for (const [indexes, field] of [
      [[], "indexes"],
      [["no spaces here"], "indexes[0]"],
      ["docs", "indexes"],
    ] as const) {
      const browser = await signedIn(world.a.email);
      const { uid } = await startAuthorization(browser, clientId);
      const reply = await browser.post(
        `/oauth2/interaction/${uid}/confirm`,
        { indexes },
        { headers: { origin: base } },
      );
      expect(reply.status, reply.text).toBe(400);
      expect(reply.headers.get("content-type")).toMatch(/problem\+json/);
      expect(reply.text).toContain(field);
    }
    const connections = (await world.a.session.get("/v1/mcp-connections")).body.connections;
    expect(connections.filter((c: { clientId: string }) => c.clientId === clientId)).toEqual([]);
  });
});
