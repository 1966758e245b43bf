/// <reference path="./oidc-provider.d.ts" />
// The OAuth authorization server for MCP hosts (the MCP authorization specification): panva's
// oidc-provider, certified by the OpenID Foundation, configured for one resource (this server's
// /mcp) and one read-only scope. It brings RFC 8414 metadata, dynamic client registration
// (RFC 7591) and client ID metadata documents, the authorization code flow with PKCE,
// refresh-token rotation, revocation and resource indicators (RFC 8707); Sift adds the login and
// consent step (the dashboard's sign-in, then a consent screen) and keeps the provider's state in
// its own store.
import { createHmac, createPrivateKey } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type Provider from "oidc-provider";
import type { AccessTokenInstance } from "oidc-provider";
import type { Logger } from "../log.ts";
import { adapterFor, type OAuthEntries } from "./entries.ts";

/** The one scope: read the tenant's indexes through the MCP tools. */
export const MCP_SCOPE = "mcp:read";
/** Where the provider's endpoints live (its discovery documents are also served at the root). */
export const OAUTH_PREFIX = "/oauth2";

export const ACCESS_TOKEN_TTL_SECONDS = 10 * 60;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

export interface ProviderOptions {
  entries: OAuthEntries;
  /** Keys the provider's cookies and derives its token-signing key: the deployment's signing secret. */
  secret: Buffer;
  /** A user by id, or undefined when there is none (deleted): only existing users hold grants. */
  userExists(userId: string): Promise<boolean>;
  /** Hosts whose client metadata documents may be on private or loopback addresses (D-397). */
  clientMetadataPrivateHosts?: string[];
  log: Logger;
}

/** An Ed25519 key derived from the signing secret, so every node of a deployment signs alike. */
function signingJwk(secret: Buffer): Record<string, unknown> {
  const seed = createHmac("sha256", secret).update("sift mcp-oauth id-token key").digest();
  const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
  const jwk = createPrivateKey({ key: der, format: "der", type: "pkcs8" }).export({ format: "jwk" });
  return { ...jwk, alg: "EdDSA", use: "sig", kid: "sift-mcp-1" };
}

/** A page for errors shown to a person in a browser (a bad authorization request). */
function errorPage(out: Record<string, string>, why: string | undefined): string {
  const html = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
  const reason = why ? `<p>Why: ${html(why)}.</p>` : "";
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign-in failed · Sift</title></head><body><main><h1>The MCP host's sign-in request failed</h1><p>${html(out.error_description ?? out.error ?? "unknown error")}</p>${reason}<p>Error: <code>${html(out.error ?? "")}</code>. Start the connection again from your MCP host.</p></main></body></html>`;
}

/**
 * Why a host's client ID metadata document was refused, from the innermost cause (a status, a
 * timeout, "hostname resolves to a special-use IP address"): the provider shows only "fetch
 * failed", and these are about the host's own public document, nothing of Sift's. Other errors
 * keep their details to the logs.
 */
function metadataDocumentReason(error: unknown): string | undefined {
  const described = error as { error_description?: string; error_detail?: string; cause?: unknown };
  if (!described?.error_description?.includes("metadata document")) return undefined;
  let cause: unknown = described.cause;
  let reason = described.error_detail;
  for (let depth = 0; cause instanceof Error && depth < 5; depth++, cause = cause.cause) reason = cause.message;
  if (reason?.includes("special-use IP")) {
    return `${reason}: a client_id must be an https URL on a public address (an intranet host needs SIFT_OAUTH_CLIENT_METADATA_PRIVATE_HOSTS)`;
  }
  return reason;
}

/**
 * One provider per issuer. The issuer is SIFT_PUBLIC_URL, or without it the origin a request
 * reached this server by (the port is known only once it listens); hostCheck has already limited
 * those to this server's own names, and a few are kept.
 */
type OidcModule = typeof import("oidc-provider");
/**
 * oidc-provider and what it loads (Koa, jose) took about 300 ms of every start (D-327), and most
 * processes never meet an MCP host: it is loaded by the first request that needs it.
 */
let oidcModule: Promise<OidcModule> | undefined;
const loadOidc = () => (oidcModule ??= import("oidc-provider"));

export class McpProviders {
  private readonly byIssuer = new Map<string, Provider>();
  private readonly options: ProviderOptions;

  constructor(options: ProviderOptions) {
    this.options = options;
  }

  async for(issuer: string): Promise<Provider> {
    const oidc = await loadOidc();
    let provider = this.byIssuer.get(issuer);
    if (!provider) {
      provider = this.create(oidc, issuer);
      if (this.byIssuer.size >= 16) this.byIssuer.delete(this.byIssuer.keys().next().value!);
      this.byIssuer.set(issuer, provider);
    }
    return provider;
  }

  /** The access token behind a Bearer value, if it is one of ours, alive, and issued for `resource`. */
  async accessToken(issuer: string, value: string, resource: string): Promise<AccessTokenInstance | undefined> {
    const token = await (await this.for(issuer)).AccessToken.find(value);
    if (!token || token.isExpired) return undefined;
    const audience = Array.isArray(token.aud) ? token.aud : [token.aud];
    return audience.includes(resource) ? token : undefined;
  }

  private create(oidc: OidcModule, issuer: string): Provider {
    const { entries, secret, log } = this.options;
    const resource = `${issuer}/mcp`;
    const cookieKey = createHmac("sha256", secret).update("sift mcp-oauth cookies").digest("base64url");
    const provider = new oidc.default(issuer, {
      adapter: adapterFor(entries),
      jwks: { keys: [signingJwk(secret)] },
      cookies: { keys: [cookieKey] },
      // Accounts are Sift users; a deleted user's grants stop working.
      findAccount: async (_ctx: unknown, id: string) =>
        (await this.options.userExists(id)) ? { accountId: id, claims: async () => ({ sub: id }) } : undefined,
      // mcp:read is listed for registration (RFC 7591 checks a client's `scope` against these);
      // the consent grants it for the /mcp resource, whose tokens carry it.
      scopes: ["openid", "offline_access", MCP_SCOPE],
      responseTypes: ["code"],
      claims: { openid: ["sub"] },
      clientDefaults: {
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        id_token_signed_response_alg: "EdDSA",
      },
      // OAuth 2.1 and the MCP specification: PKCE (S256) for every client.
      pkce: { required: () => true },
      features: {
        devInteractions: { enabled: false },
        // Open registration (RFC 7591): an MCP host meets this server for the first time.
        registration: { enabled: true },
        // Or, as the 2025-11-25 MCP specification prefers, the host's client_id is the https URL
        // of a JSON document describing it, fetched when it asks (no registration kept). The
        // provider fetches it within 2.5 s, bounds its size, caches it as its Cache-Control says
        // (30 s to a day), and refuses private and loopback addresses unless the host is listed.
        clientIdMetadataDocument: { enabled: true, ack: "draft-02" },
        revocation: { enabled: true },
        resourceIndicators: {
          enabled: true,
          // A host that names no resource still gets a token for /mcp, the only one there is.
          defaultResource: () => resource,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, indicator: string) => {
            if (indicator !== resource) throw new oidc.errors.InvalidTarget(`the only resource here is ${resource}`);
            return {
              scope: MCP_SCOPE,
              audience: resource,
              accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
              // Opaque: each use is looked up in the store, so a revoked token fails at once.
              accessTokenFormat: "opaque",
            };
          },
        },
      },
      // Every connection is consented to in the browser; a grant is found only as the
      // consent step just made it, never from an earlier one the provider's session remembers.
      loadExistingGrant: async (ctx: { oidc: { result?: { consent?: { grantId?: string } }; provider: Provider } }) => {
        const grantId = ctx.oidc.result?.consent?.grantId;
        return grantId
          ? (ctx.oidc.provider as unknown as { Grant: { find(id: string): unknown } }).Grant.find(grantId)
          : undefined;
      },
      // The provider's outgoing requests (client metadata documents): its guard against private
      // and loopback addresses (its `dispatcher`) is left out for the hosts listed as private.
      fetch: (url: string | URL, init: RequestInit & { dispatcher?: unknown }) => {
        const host = new URL(url).hostname.toLowerCase();
        if (this.options.clientMetadataPrivateHosts?.includes(host)) {
          const { dispatcher: _guard, ...rest } = init;
          return fetch(url, rest);
        }
        return fetch(url, init);
      },
      // Refresh tokens for every client that registered the grant type, rotated at each use.
      issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) =>
        client.grantTypeAllowed("refresh_token"),
      rotateRefreshToken: () => true,
      // Tokens live as long as their grant, not as long as the browser's session at the provider.
      expiresWithSession: async () => false,
      interactions: {
        url: (_ctx: unknown, interaction: { uid: string }) => `${OAUTH_PREFIX}/interaction/${interaction.uid}`,
      },
      renderError: async (ctx: { type: string; body: string }, out: Record<string, string>, error: unknown) => {
        ctx.type = "html";
        ctx.body = errorPage(out, metadataDocumentReason(error));
      },
      // Hosts that run in a browser call the token endpoint across origins; the tokens are bound
      // to PKCE and to the host's registration, not to an origin.
      clientBasedCORS: () => true,
      ttl: {
        AccessToken: ACCESS_TOKEN_TTL_SECONDS,
        AuthorizationCode: 60,
        Grant: REFRESH_TOKEN_TTL_SECONDS,
        IdToken: 3600,
        Interaction: 3600,
        RefreshToken: REFRESH_TOKEN_TTL_SECONDS,
        Session: 14 * 24 * 3600,
      },
    });
    // Sift sets the forwarded headers itself from the issuer (forward() below), so the provider
    // names its endpoints by the issuer's scheme and host even behind a TLS-terminating proxy.
    provider.proxy = true;
    // Hosts that read the scopes in this metadata rather than the resource's see the one to ask
    // for (a post-middleware, as oidc-provider documents them: `discovery` cannot replace a value).
    provider.use(
      async (ctx: { oidc?: { route?: string }; body?: { scopes_supported?: string[] } }, next: () => Promise<void>) => {
        await next();
        if (ctx.oidc?.route === "discovery" && ctx.body?.scopes_supported) ctx.body.scopes_supported.push(MCP_SCOPE);
      },
    );
    provider.on("server_error", (_ctx: unknown, error: unknown) =>
      log.error("the MCP authorization server failed", { error: (error as Error).message }),
    );
    return provider;
  }
}

/**
 * Hands a request to the provider: `path` is the provider-relative path and query. Its URLs are
 * built from the mount path (the part of `originalUrl` before `url`) and the forwarded headers.
 */
export async function forward(
  provider: Provider,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  path: string,
): Promise<void> {
  const issuer = new URL(provider.issuer);
  (incoming as IncomingMessage & { originalUrl?: string }).originalUrl = `${OAUTH_PREFIX}${path}`;
  incoming.url = path;
  incoming.headers["x-forwarded-proto"] = issuer.protocol.slice(0, -1);
  incoming.headers["x-forwarded-host"] = issuer.host;
  await provider.callback()(incoming, outgoing);
}
