// OAuth for MCP hosts as deployed (docs/mcp-auth.md, Deployment): a connection outlives a restart
// of the server (its state is in the store, not in the process), and behind a TLS-terminating
// proxy the metadata names SIFT_PUBLIC_URL's https endpoints, not the plain-HTTP address the
// server listens on.
import { request } from "node:http";
import { afterAll, expect, test } from "vitest";
import { Http } from "../support/http.ts";
import { McpOAuth } from "../support/mcp-oauth.ts";
import { type RunningSift, startSift } from "../support/server.ts";
import { signUp } from "../support/world.ts";

const running: RunningSift[] = [];
afterAll(async () => {
  for (const s of running.splice(0)) await s.stop();
});

test("a connection's tokens work after the server restarts, and refresh there", async () => {
  const first = await startSift();
  const session = await signUp(new Http(first.url), "restart@oauth.example");
  expect((await session.post("/v1/services", { name: "restart-svc" })).status).toBe(201);
  expect(
    (await session.post("/v1/indexes", { name: "kept", serviceName: "restart-svc", visibility: "PRIVATE" })).status,
  ).toBe(201);
  const before = new McpOAuth(first.url);
  const clientId = await before.register("Restarted host");
  const tokens = await before.connect("restart@oauth.example", clientId);
  await first.stop({ keepData: true });

  const second = await startSift({}, { restart: first });
  running.push(second);
  expect(second.url).toBe(first.url);
  const after = new McpOAuth(second.url);
  const listed = await after.listIndexes(tokens.access_token);
  expect(listed.status, listed.text).toBe(200);
  expect(JSON.parse(listed.body.result.content[0].text).indexes.map((i: { name: string }) => i.name)).toEqual(["kept"]);
  const refreshed = await after.token({
    grant_type: "refresh_token",
    refresh_token: tokens.refresh_token,
    client_id: clientId,
  });
  expect(refreshed.status, refreshed.text).toBe(200);
  expect((await after.listIndexes(refreshed.body.access_token)).status).toBe(200);
});

/** A GET as a proxy forwards it: the public name in Host. fetch() does not let a caller set Host. */
function getAs(url: string, host: string): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname, method: "GET", headers: { host } },
      async (res) => {
        let text = "";
        for await (const chunk of res) text += chunk;
        resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

test("behind a TLS proxy, the metadata and the challenge name SIFT_PUBLIC_URL's https endpoints", async () => {
  const sift = await startSift({ SIFT_PUBLIC_URL: "https://search.example" });
  running.push(sift);
  const server = await getAs(`${sift.url}/.well-known/oauth-authorization-server`, "search.example");
  expect(server.status).toBe(200);
  expect(server.body).toMatchObject({
    issuer: "https://search.example",
    authorization_endpoint: "https://search.example/oauth2/auth",
    token_endpoint: "https://search.example/oauth2/token",
    registration_endpoint: "https://search.example/oauth2/reg",
  });
  const resource = await getAs(`${sift.url}/.well-known/oauth-protected-resource/mcp`, "search.example");
  expect(resource.body).toMatchObject({
    resource: "https://search.example/mcp",
    authorization_servers: ["https://search.example"],
  });
  const challenge = await fetch(`${sift.url}/mcp`, { method: "POST" });
  expect(challenge.status).toBe(401);
  expect(challenge.headers.get("www-authenticate")).toBe(
    'Bearer realm="sift", resource_metadata="https://search.example/.well-known/oauth-protected-resource/mcp"',
  );
});
