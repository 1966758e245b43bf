// The "done when": an MCP host given only the URL of /mcp reaches search results after
// one sign-in in the browser. The host is the MCP SDK's own client (StreamableHTTPClientTransport
// with an OAuthClientProvider as a host implements it, a loopback server as its redirect URI);
// the person is Chromium, signing in with e-mail and password on the dashboard and allowing the
// connection by keyboard. Then the connection is revoked from the dashboard's key list.
import { createServer, type Server } from "node:http";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { siftWithTestIdp, type TestIdp } from "../support/oidc.ts";
import type { RunningSift } from "../support/server.ts";
import { PASSWORD } from "../support/world.ts";
import { launchChromium } from "./support/browser.ts";
import { activate, expectAccessible, tabTo } from "./support/dashboard.ts";
import { type PublicIndex, publicIndex, putRecords } from "./support/data.ts";

/** What a host keeps between runs, in memory here; the SDK drives the flow through it. */
class HostAuth implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  private information: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = "";
  readonly redirectUrl: string;
  constructor(redirectUrl: string) {
    this.redirectUrl = redirectUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Sift test host",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation = () => this.information;
  saveClientInformation = (info: OAuthClientInformationMixed) => {
    this.information = info;
  };
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => {
    this.saved = tokens;
  };
  redirectToAuthorization = (url: URL) => {
    this.authorizationUrl = url;
  };
  saveCodeVerifier = (verifier: string) => {
    this.verifier = verifier;
  };
  codeVerifier = () => this.verifier;
}

let sift: RunningSift;
let idp: TestIdp;
let browser: Browser;
let data: PublicIndex;
let callback: Server;
let redirectUrl: string;
const codes: string[] = [];

beforeAll(async () => {
  let started: { idp: TestIdp; sift: RunningSift };
  [started, browser] = await Promise.all([siftWithTestIdp(), launchChromium()]);
  ({ idp, sift } = started);
  data = await publicIndex(sift.url, "mcp-oauth");
  await putRecords(data, [
    { id: "springfield", title: "Springfield", weight: 10 },
    { id: "spring-hill", title: "Spring Hill", weight: 5 },
    { id: "boston", title: "Boston", weight: 50 },
  ]);
  // The host's loopback redirect URI, as desktop MCP hosts run one.
  callback = createServer((req, res) => {
    const code = new URL(req.url!, "http://host").searchParams.get("code");
    if (code) codes.push(code);
    res.writeHead(200, { "content-type": "text/html" });
    res.end('<!doctype html><html lang="en"><title>Host</title><main><h1>You can close this tab</h1></main></html>');
  });
  await new Promise<void>((r) => callback.listen(0, "127.0.0.1", () => r()));
  redirectUrl = `http://127.0.0.1:${(callback.address() as { port: number }).port}/callback`;
});
afterAll(async () => {
  await browser?.close();
  await sift?.stop();
  await idp?.stop();
  await new Promise((r) => callback?.close(r));
});

const texts = (result: unknown) => (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : ""));

test("an MCP host given only the /mcp URL signs in through the browser and searches", async () => {
  const url = new URL(`${sift.url}/mcp`);
  const auth = new HostAuth(redirectUrl);

  // 1. No token: the SDK follows the 401 to the metadata, registers, and asks for the browser.
  const first = new Client({ name: "sift-oauth-test", version: "1.0.0" });
  await expect(first.connect(new StreamableHTTPClientTransport(url, { authProvider: auth }))).rejects.toThrow(
    UnauthorizedError,
  );
  const authorize = auth.authorizationUrl!;
  expect(authorize.origin + authorize.pathname).toBe(`${sift.url}/oauth2/auth`);
  expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
  expect(authorize.searchParams.get("resource")).toBe(`${sift.url}/mcp`);
  expect(authorize.searchParams.get("scope")).toBe("mcp:read");

  // 2. The person: the dashboard's sign-in, then the consent screen, all by keyboard.
  const context = await browser.newContext();
  const page: Page = await context.newPage();
  await page.goto(authorize.href);
  await page.waitForURL((u) => u.pathname.startsWith("/dashboard/connect/"));
  await expect.poll(() => page.locator("main h1").textContent()).toBe("Sign in to Sift");
  expect(await page.getByText("Sign in to connect your MCP host to Sift.").isVisible()).toBe(true);
  await expectAccessible(page, "sign in for an MCP host");
  await tabTo(page, page.getByLabel("E-mail"));
  await page.keyboard.type("mcp-oauth@widget.example");
  await tabTo(page, page.getByLabel("Password"));
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press("Enter");

  await expect.poll(() => page.locator("main h1").textContent()).toBe("Connect an MCP host");
  await page.getByRole("heading", { name: "Sift test host" }).waitFor();
  expect(await page.locator("main").textContent()).toContain("Read-only");
  await expectAccessible(page, "consent for an MCP host");
  // Limited to this tenant's mcp-* indexes (D-399).
  await tabTo(page, page.getByLabel("Only these indexes (optional)"));
  await page.keyboard.type("mcp-oauth, mcp-*");
  await activate(page, page.getByRole("button", { name: "Allow" }));
  await page.waitForURL((u) => u.href.startsWith(redirectUrl));
  expect(codes).toHaveLength(1);

  // 3. The host finishes with the code and reaches the tools.
  const transport = new StreamableHTTPClientTransport(url, { authProvider: auth });
  await transport.finishAuth(codes[0]!);
  const client = new Client({ name: "sift-oauth-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: auth }));
  const listed = JSON.parse(texts(await client.callTool({ name: "listIndexes", arguments: {} }))[0]!);
  expect(listed.indexes.map((i: { name: string }) => i.name)).toEqual(["mcp-oauth"]);
  const found = await client.callTool({ name: "search", arguments: { indexName: "mcp-oauth", phrase: "spring" } });
  expect(found.isError).toBe(false);
  const results = JSON.parse(texts(found)[0]!).results.map((r: { id: string }) => r.id);
  expect(results.sort()).toEqual(["spring-hill", "springfield"]);

  // 4. The dashboard's key list shows the connection; disconnecting it ends the host's access.
  const accessToken = auth.tokens()!.access_token;
  await page.goto(`${sift.url}/dashboard/keys`);
  await page.getByRole("heading", { name: "Connected MCP hosts" }).waitFor();
  const disconnect = page.getByRole("button", { name: "Disconnect Sift test host" });
  await disconnect.waitFor();
  expect(await page.getByRole("rowheader", { name: /Sift test host/ }).textContent()).toContain(
    "indexes: mcp-oauth, mcp-*",
  );
  await expectAccessible(page, "connected MCP hosts");
  await activate(page, disconnect);
  await activate(page, page.getByRole("button", { name: "Disconnect host" }));
  await page.getByText("No MCP host is connected.").waitFor();

  const refused = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${accessToken}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  expect(refused.status).toBe(401);
  expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
  // The host's refresh token died with it: the SDK can only send the person to sign in again.
  await expect(client.callTool({ name: "listIndexes", arguments: {} })).rejects.toThrow();
  await client.close();
  await context.close();
});

test("signing in with a configured provider instead comes back to the consent, for that user's tenant", async () => {
  const url = new URL(`${sift.url}/mcp`);
  const auth = new HostAuth(redirectUrl);
  const first = new Client({ name: "sift-oauth-test", version: "1.0.0" });
  await expect(first.connect(new StreamableHTTPClientTransport(url, { authProvider: auth }))).rejects.toThrow(
    UnauthorizedError,
  );
  const context = await browser.newContext();
  const page = await context.newPage();
  // The provider's development pages ask for a web font; this machine reaches no such site.
  await page.route(/fonts\.googleapis\.com/, (route) => route.abort());
  await page.goto(auth.authorizationUrl!.href);
  await activate(page, page.getByRole("link", { name: "Sign in with Test ID" }));
  await page.waitForURL((u) => u.origin === idp.issuer);
  await tabTo(page, page.locator("input[name=login]"));
  await page.keyboard.type("dora");
  await tabTo(page, page.locator("input[name=password]"));
  await page.keyboard.type("any password");
  await page.keyboard.press("Enter");
  await activate(page, page.getByRole("button", { name: "Continue" }));

  await page.waitForURL((u) => u.pathname.startsWith("/dashboard/connect/"));
  await expect.poll(() => page.locator("main h1").textContent()).toBe("Connect an MCP host");
  await page.getByRole("heading", { name: "Sift test host" }).waitFor();
  expect(await page.locator("main").textContent()).toContain("dora@idp.example");
  const before = codes.length;
  await activate(page, page.getByRole("button", { name: "Allow" }));
  await page.waitForURL((u) => u.href.startsWith(redirectUrl));
  expect(codes).toHaveLength(before + 1);
  expect(idp.errors).toEqual([]);

  await new StreamableHTTPClientTransport(url, { authProvider: auth }).finishAuth(codes.at(-1)!);
  const client = new Client({ name: "sift-oauth-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: auth }));
  // Dora's new tenant has no index; the first user's are not hers to see.
  const listed = JSON.parse(texts(await client.callTool({ name: "listIndexes", arguments: {} }))[0]!);
  expect(listed.indexes).toEqual([]);
  const other = await client.callTool({ name: "search", arguments: { indexName: "mcp-oauth", phrase: "spring" } });
  expect(other.isError).toBe(true);
  await client.close();
  await context.close();
});
