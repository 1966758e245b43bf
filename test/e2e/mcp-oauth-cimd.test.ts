// An MCP host whose client_id is the https URL of its client ID metadata document (the MCP
// authorization specification of 2025-11-25, docs/mcp-auth.md): it connects without registering,
// Sift fetches the document when the host asks, the consent names the site that publishes it, and
// a document that does not vouch for its own URL, or one on a private address not listed in
// SIFT_OAUTH_CLIENT_METADATA_PRIVATE_HOSTS, is refused. The documents are served over real TLS
// on loopback, by a CA made for the test that the Sift process is told to trust.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { certificates, opensslAvailable } from "../support/certificates.ts";
import { Http } from "../support/http.ts";
import { McpOAuth, REDIRECT } from "../support/mcp-oauth.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import { signUp } from "../support/world.ts";

describe.skipIf(!opensslAvailable)("MCP hosts identified by a client ID metadata document", () => {
  const dir = mkdtempSync(join(tmpdir(), "sift-cimd-"));
  let documents: Server;
  let port = 0;
  const fetched: string[] = [];
  let sift: SiftProcess;
  let oauth: McpOAuth;
  const email = `cimd-${process.pid}@cimd.example`;
  const url = (host: string, path: string) => `https://${host}:${port}${path}`;

  beforeAll(async () => {
    const files = certificates(dir);
    documents = createServer(
      { cert: readFileSync(files.server.cert), key: readFileSync(files.server.key) },
      (req, res) => {
        fetched.push(req.url ?? "");
        const host = req.headers.host ?? "";
        const self = `https://${host}${req.url}`;
        const document: Record<string, unknown> = {
          client_id: req.url === "/hosts/liar.json" ? `https://${host}/hosts/someone-else.json` : self,
          client_name: req.url === "/hosts/liar.json" ? "Liar" : "Docs Helper",
          redirect_uris: [REDIRECT],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none",
        };
        res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=60" });
        res.end(JSON.stringify(document));
      },
    );
    await new Promise<void>((listening) => documents.listen(0, "127.0.0.1", listening));
    port = (documents.address() as { port: number }).port;
    sift = await siftProcess({
      // The process trusts the test's CA, as a deployment trusts a public one.
      NODE_EXTRA_CA_CERTS: files.ca,
      SIFT_OAUTH_CLIENT_METADATA_PRIVATE_HOSTS: "localhost",
      SIFT_DEMO: "false",
    });
    await sift.start();
    oauth = new McpOAuth(sift.url);
    const session = await signUp(new Http(sift.url), email);
    expect((await session.post("/v1/services", { name: "docs" })).status).toBe(201);
    expect((await session.post("/v1/indexes", { name: "guides", serviceName: "docs" })).status).toBe(201);
  });
  afterAll(async () => {
    await sift?.destroy();
    documents?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the authorization server's metadata says it takes them", async () => {
    const reply = await oauth.direct.get("/.well-known/oauth-authorization-server");
    expect(reply.body.client_id_metadata_document_supported).toBe(true);
  });

  test("a host connects with its document's URL as client_id, without registering; the consent names the publisher", async () => {
    const clientId = url("localhost", "/hosts/docs-helper.json");
    const browser = await oauth.signedIn(email);
    const { uid, verifier } = await oauth.startAuthorization(browser, clientId);
    expect(fetched).toContain("/hosts/docs-helper.json");
    const details = await browser.get(`/oauth2/interaction/${uid}/details`);
    expect(details.status, details.text).toBe(200);
    expect(details.body.client).toMatchObject({
      id: clientId,
      name: "Docs Helper",
      publishedBy: `localhost:${port}`,
      redirectUri: REDIRECT,
    });
    const confirm = await browser.post(`/oauth2/interaction/${uid}/confirm`, undefined, {
      headers: { origin: sift.url },
    });
    expect(confirm.status, confirm.text).toBe(200);
    const back = await oauth.followToHost(browser, confirm.body.redirectTo);
    const tokens = await oauth.exchange(back, verifier, clientId);
    const listed = await oauth.listIndexes(tokens.access_token);
    expect(listed.status, listed.text).toBe(200);
    expect(JSON.parse(listed.body.result.content[0].text).indexes.map((i: { name: string }) => i.name)).toEqual([
      "guides",
    ]);
    // Nothing was registered: the registration endpoint's clients are not where this one lives.
    expect((await oauth.direct.get(`/oauth2/reg/${encodeURIComponent(clientId)}`)).status).not.toBe(200);
  });

  test("a document naming another client_id, or one on a private address not listed, is refused", async () => {
    const browser = await oauth.signedIn(email);
    for (const clientId of [url("localhost", "/hosts/liar.json"), url("127.0.0.1", "/hosts/docs-helper.json")]) {
      const query = new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        code_challenge_method: "S256",
        scope: "mcp:read",
      });
      const reply = await browser.get(`/oauth2/auth?${query}`);
      // The host's redirect URI is not trusted: the person sees the error, nothing goes to the host.
      expect(reply.status, clientId).toBe(400);
      expect(reply.headers.get("location")).toBeNull();
      expect(reply.text).toContain("invalid_client");
    }
    expect(fetched.filter((path) => path === "/hosts/liar.json").length).toBeGreaterThan(0);
    // The guard closed the connection to 127.0.0.1 before any request was sent.
    expect(fetched.filter((path) => path === "/hosts/docs-helper.json").length).toBe(1);
  });
});
