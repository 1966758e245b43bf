// An MCP host's OAuth sign-in against a real Sift over plain HTTP, as a browser and a host would
// make it (docs/mcp-auth.md): registration, the authorization request with PKCE, the consent
// endpoints the dashboard's screen calls, the code exchanged for tokens.
import { createHash, randomBytes } from "node:crypto";
import { expect } from "vitest";
import { Http } from "./http.ts";
import { PASSWORD } from "./world.ts";

export const REDIRECT = "http://127.0.0.1:9/callback";

export interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  scope: string;
}

export class McpOAuth {
  /** The server itself: the OAuth endpoints are not in the contract, so not behind Prism. */
  readonly direct: Http;
  readonly base: string;

  constructor(base: string) {
    this.base = base;
    this.direct = new Http(base);
  }

  async register(name = "Test host"): Promise<string> {
    const reply = await this.direct.post("/oauth2/reg", {
      client_name: name,
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
    expect(reply.status, reply.text).toBe(201);
    return reply.body.client_id;
  }

  async signedIn(email: string): Promise<Http> {
    const browser = this.direct.fresh();
    expect((await browser.post("/v1/auth/login", { email, password: PASSWORD })).status).toBe(200);
    return browser;
  }

  /** What a browser does from the authorization request to the consent screen. */
  async startAuthorization(browser: Http, clientId: string) {
    const verifier = randomBytes(32).toString("base64url");
    const state = randomBytes(8).toString("hex");
    const query = new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
      state,
      scope: "mcp:read",
      resource: `${this.base}/mcp`,
    });
    const start = await browser.get(`/oauth2/auth?${query}`);
    expect(start.status, start.text).toBe(303);
    const interaction = new URL(start.headers.get("location")!, this.base);
    expect(interaction.pathname).toMatch(/^\/oauth2\/interaction\/[\w-]+$/);
    const toDashboard = await browser.get(interaction.pathname);
    expect(toDashboard.status).toBe(303);
    const uid = interaction.pathname.split("/").at(-1)!;
    expect(toDashboard.headers.get("location")).toBe(`/dashboard/connect/${uid}`);
    return { uid, verifier, state };
  }

  /** Follows the provider's redirects from the consent's answer to the host's redirect URI. */
  async followToHost(browser: Http, redirectTo: string): Promise<URL> {
    let url = new URL(redirectTo, this.base);
    for (let hops = 0; hops < 5 && url.origin === this.base; hops++) {
      const reply = await browser.get(url.pathname + url.search);
      expect([302, 303], reply.text).toContain(reply.status);
      url = new URL(reply.headers.get("location")!, this.base);
    }
    expect(url.origin + url.pathname).toBe(REDIRECT);
    return url;
  }

  token(fields: Record<string, string>) {
    return this.direct.request("POST", "/oauth2/token", {
      body: new URLSearchParams(fields).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
  }

  /**
   * The whole flow for the user `email`: tokens for a new connection of client `clientId`.
   * `consent`: the body the consent screen posts (`{ indexes }` to limit the connection).
   */
  async connect(email: string, clientId: string, consent?: Record<string, unknown>): Promise<Tokens> {
    const browser = await this.signedIn(email);
    const { uid, verifier, state } = await this.startAuthorization(browser, clientId);
    const confirm = await browser.post(`/oauth2/interaction/${uid}/confirm`, consent, {
      headers: { origin: this.base },
    });
    expect(confirm.status, confirm.text).toBe(200);
    const back = await this.followToHost(browser, confirm.body.redirectTo);
    expect(back.searchParams.get("state")).toBe(state);
    return this.exchange(back, verifier, clientId);
  }

  /** The code the host's redirect URI received (`back`), exchanged with its PKCE verifier. */
  async exchange(back: URL, verifier: string, clientId: string): Promise<Tokens> {
    const reply = await this.token({
      grant_type: "authorization_code",
      code: back.searchParams.get("code")!,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
      resource: `${this.base}/mcp`,
    });
    expect(reply.status, reply.text).toBe(200);
    return reply.body as Tokens;
  }

  listIndexes(accessToken: string) {
    return this.direct.post(
      "/mcp",
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "listIndexes", arguments: {} } },
      { key: accessToken, headers: { accept: "application/json, text/event-stream" } },
    );
  }
}
