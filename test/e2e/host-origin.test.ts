// Host and Origin validation over real HTTP (docs/api.md, Host and Origin; D-260, D-261): a page
// whose name was re-pointed at the server (DNS rebinding) is refused on every route but the health
// probes; POST /mcp also refuses other sites' pages; the widget's cross-origin searches still work.
// Requests go to the server directly with node:http, since fetch cannot forge a Host header.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sendAs } from "../support/raw-http.ts";
import { startSift, type RunningSift } from "../support/server.ts";
import { startWorld, type World } from "../support/world.ts";

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

describe("a server listening on loopback", () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(() => world?.stop());

  const mcp = (headers: Record<string, string>) =>
    sendAs(world.server.url, "POST", "/mcp", { authorization: `Bearer ${world.a.keys.svc}`, ...headers }, initialize);

  test("a request naming another host is 403 problem+json before it reaches /mcp", async () => {
    const refused = await mcp({ host: "evil.example.com", origin: "http://evil.example.com" });
    expect(refused.status).toBe(403);
    expect(refused.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 403, resultCode: "HOST_NOT_ALLOWED" });
    expect(refused.body.detail).toMatch(/evil\.example\.com.*DNS rebinding.*localhost, 127\.0\.0\.1 or \[::1\]/);
  });

  test("so is a search or a sign-up: the check covers the whole API; the health probes are exempt", async () => {
    const search = await sendAs(world.server.url, "GET", `/v1/search?query=a&indexName=x&serviceName=y`, {
      host: "evil.example.com:7700",
    });
    expect([search.status, search.body.resultCode]).toEqual([403, "HOST_NOT_ALLOWED"]);
    const signup = await sendAs(
      world.server.url,
      "POST",
      "/v1/auth/signup",
      { host: "rebound.example" },
      { email: "x@rebound.example", password: "correct horse battery staple" },
    );
    expect(signup.status).toBe(403);
    expect((await sendAs(world.server.url, "GET", "/healthz", { host: "10.1.2.3:7700" })).status).toBe(200);
  });

  test.each(["localhost:9", "127.0.0.1", "[::1]:7700", "LOCALHOST"])("Host %s is accepted on /mcp", async (host) => {
    const answer = await mcp({ host });
    expect(answer.status).toBe(200);
    expect(answer.body.result.serverInfo.name).toBe("sift");
  });

  test("on /mcp, an Origin of another site is 403; a loopback page (the Inspector's) is not", async () => {
    const refused = await mcp({ origin: "https://evil.example" });
    expect([refused.status, refused.body.resultCode]).toEqual([403, "ORIGIN_NOT_ALLOWED"]);
    expect(refused.body.detail).toMatch(/https:\/\/evil\.example/);
    expect((await mcp({ origin: "http://localhost:6274" })).status).toBe(200);
    expect((await mcp({ origin: "null" })).status).toBe(403);
  });

  test("the widget's cross-origin search is untouched: any Origin, CORS headers as before", async () => {
    const q = new URLSearchParams({ query: "amst", indexName: world.a.publicIndex, serviceName: world.a.service });
    const search = await sendAs(world.server.url, "GET", `/v1/search?${q}`, {
      origin: "https://shop.example.com",
      authorization: `Bearer ${world.a.keys.srh}`,
    });
    expect(search.status).toBe(200);
    expect(search.headers["access-control-allow-origin"]).toBe("*");
    expect(search.body.suggestions.map((s: { id: string }) => s.id)).toEqual(["r1"]);
  });
});

describe("a server listening on all interfaces", () => {
  let server: RunningSift;
  beforeAll(async () => {
    // HOST is what the policy reads; the test server itself still listens on loopback.
    server = await startSift({
      HOST: "0.0.0.0",
      SIFT_PUBLIC_URL: "https://sift.example",
      SIFT_ALLOWED_HOSTS: "*.internal.example",
      SIFT_ALLOWED_ORIGINS: "https://console.example",
    });
  });
  afterAll(() => server?.stop());

  const regions = (host: string) => sendAs(server.url, "GET", "/v1/regions", { host });

  test("answers the public URL's host and the configured names, not the loopback names", async () => {
    expect((await regions("sift.example")).status).toBe(200);
    expect((await regions("sift.example:443")).status).toBe(200);
    expect((await regions("api.internal.example")).status).toBe(200);
    for (const host of ["internal.example", "127.0.0.1:7700", "localhost"]) {
      const refused = await regions(host);
      expect([host, refused.status]).toEqual([host, 403]);
      expect(refused.body.detail).not.toMatch(/localhost, 127/);
      // Configured names are not told to whoever asks: some may be internal.
      expect(refused.body.detail).not.toMatch(/\*\.internal/);
    }
  });

  test("on /mcp, pages of the public URL and SIFT_ALLOWED_ORIGINS pass the Origin check (then need a key)", async () => {
    const call = (origin: string) => sendAs(server.url, "POST", "/mcp", { host: "sift.example", origin }, initialize);
    expect((await call("https://sift.example")).status).toBe(401);
    expect((await call("https://console.example")).status).toBe(401);
    const refused = await call("https://evil.example");
    expect([refused.status, refused.body.resultCode]).toEqual([403, "ORIGIN_NOT_ALLOWED"]);
  });
});
