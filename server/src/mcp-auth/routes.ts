/// <reference path="./oidc-provider.d.ts" />
// The HTTP face of the MCP authorization server: protected resource metadata (RFC 9728), the
// provider's own endpoints under /oauth2 and its metadata at the root (RFC 8414), and the
// interaction endpoints the dashboard's consent screen calls. Mounted by the composition root.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context, Hono } from "hono";
import type { Config } from "../config.ts";
import { checkIndexList } from "../auth/restrictions.ts";
import { readJson } from "../http/contract.ts";
import { HttpProblem } from "../http/problem.ts";
import type { AppEnv } from "../http/env.ts";
import { baseUrlOf } from "../routes/health.ts";
import type { AccountService } from "../services/accounts.ts";
import type { McpConnections } from "./connections.ts";
import { forward, MCP_SCOPE, type McpProviders, OAUTH_PREFIX } from "./provider.ts";

type NodeBindings = { incoming?: IncomingMessage; outgoing?: ServerResponse };

/** Where a 401 from /mcp sends an MCP host: the metadata of the /mcp resource (RFC 9728, 3.1). */
export const resourceMetadataUrl = (issuer: string) => `${issuer}/.well-known/oauth-protected-resource/mcp`;

function nodeOf(c: Context<AppEnv>): { incoming: IncomingMessage; outgoing: ServerResponse } {
  const env = c.env as NodeBindings | undefined;
  if (!env?.incoming || !env.outgoing) {
    // app.request() in a unit test has no Node request: the provider needs one.
    throw new HttpProblem(501, "the OAuth endpoints run only under the Node HTTP server");
  }
  return { incoming: env.incoming, outgoing: env.outgoing };
}

/** What the provider answered was written to the socket already; Hono must not answer again. */
function alreadySent(outgoing: ServerResponse): Response {
  const status = outgoing.statusCode >= 200 && outgoing.statusCode <= 599 ? outgoing.statusCode : 200;
  const response = new Response(null, { status, headers: { "x-hono-already-sent": "true" } });
  // @hono/node-server writes its lightweight responses out without looking at that header;
  // reading `body` makes this a standard one, which it checks (the status is for the access log).
  void response.body;
  return response;
}

/** A problem for the consent screen when the provider no longer knows the sign-in it was shown. */
const expired = () =>
  new HttpProblem(
    400,
    "this connection request expired or was started in another browser: start the connection again from your MCP host",
    [{ field: "uid", message: "is not a pending connection request of this browser" }],
  );

export function mountMcpAuth(
  app: Hono<AppEnv>,
  deps: {
    providers: McpProviders;
    connections: Pick<McpConnections, "limitGrant">;
    config: Pick<Config, "publicUrl" | "maxBodyBytes">;
    accounts: AccountService;
  },
): void {
  const issuerOf = (c: Context<AppEnv>) => baseUrlOf(c, deps.config);
  const providerOf = (c: Context<AppEnv>) => deps.providers.for(issuerOf(c));

  const resourceMetadata = (c: Context<AppEnv>) => {
    const issuer = issuerOf(c);
    c.header("access-control-allow-origin", "*");
    c.header("cache-control", "public, max-age=3600");
    return c.json({
      resource: `${issuer}/mcp`,
      authorization_servers: [issuer],
      scopes_supported: [MCP_SCOPE],
      bearer_methods_supported: ["header"],
      resource_name: "Sift search",
      resource_documentation: `${issuer}/docs`,
    });
  };
  // The path-suffixed document is the one RFC 9728 derives from the resource `<origin>/mcp`; the
  // root one is where clients that ignore the header's URL look first.
  app.get("/.well-known/oauth-protected-resource", resourceMetadata);
  app.get("/.well-known/oauth-protected-resource/mcp", resourceMetadata);

  // RFC 8414 and OpenID discovery at the root, for the issuer `<origin>`: the provider answers,
  // naming its endpoints under /oauth2.
  for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
    app.on(["GET", "OPTIONS"], path, async (c) => {
      const { incoming, outgoing } = nodeOf(c);
      await forward(await providerOf(c), incoming, outgoing, path + new URL(c.req.url).search);
      return alreadySent(outgoing);
    });
  }

  // The provider sends the browser here for login and consent: the dashboard's screen does both.
  app.get(`${OAUTH_PREFIX}/interaction/:uid`, (c) =>
    c.redirect(`/dashboard/connect/${encodeURIComponent(c.req.param("uid"))}`, 303),
  );

  /** The pending request of this browser (the provider's interaction cookie), for the signed-in user. */
  const pending = async (c: Context<AppEnv>) => {
    const p = c.get("principal");
    if (p.kind !== "session") {
      throw new HttpProblem(
        401,
        "sign in to the dashboard first: the session cookie is missing or expired",
        undefined,
        {
          "www-authenticate": 'Bearer realm="sift"',
        },
      );
    }
    const provider = await providerOf(c);
    const { incoming, outgoing } = nodeOf(c);
    const interaction = await provider.interactionDetails(incoming, outgoing).catch((error: Error) => {
      if (error instanceof HttpProblem) throw error;
      // The provider's SessionNotFound: no interaction cookie, or an interaction that expired.
      throw expired();
    });
    if (interaction.uid !== c.req.param("uid")) throw expired();
    const client = await provider.Client.find(String(interaction.params.client_id));
    if (!client) throw expired();
    return { p, provider, incoming, outgoing, interaction, client };
  };

  app.get(`${OAUTH_PREFIX}/interaction/:uid/details`, async (c) => {
    const { p, interaction, client } = await pending(c);
    const me = await deps.accounts.me(p.userId);
    const redirect = String(interaction.params.redirect_uri ?? client.redirectUris[0] ?? "");
    return c.json({
      uid: interaction.uid,
      client: {
        id: client.clientId,
        name: client.clientName ?? null,
        uri: client.clientUri ?? null,
        // A host whose client_id is the URL of its metadata document: the site that publishes
        // its name, which a host that registered could not prove.
        publishedBy: isMetadataDocumentClient(client) ? new URL(client.clientId).host : null,
        // Where the browser goes after consent: the host that will hold the token.
        redirectUri: redirect,
      },
      resource: `${issuerOf(c)}/mcp`,
      scopes: [MCP_SCOPE],
      account: { email: me.user.email, tenant: me.tenant.name },
    });
  });

  app.post(`${OAUTH_PREFIX}/interaction/:uid/confirm`, async (c) => {
    const { p, provider, incoming, outgoing, interaction, client } = await pending(c);
    const indexes = indexLimitOf(await readJson(c, deps.config.maxBodyBytes));
    const grant = new provider.Grant({ accountId: p.userId, clientId: client.clientId });
    grant.addResourceScope(`${issuerOf(c)}/mcp`, MCP_SCOPE);
    // Granted as the provider asks: mcp:read for /mcp, and as one of its own scopes too (it is
    // listed there for registration), with openid and offline_access when requested.
    const requested = String(interaction.params.scope ?? "").split(" ");
    const own = requested.filter((s) => s === "openid" || s === "offline_access" || s === MCP_SCOPE);
    if (own.length) grant.addOIDCScope(own.join(" "));
    const grantId = await grant.save();
    if (indexes) await deps.connections.limitGrant(grantId, indexes);
    // The dashboard's user is who signs in at the provider, whatever its session remembered.
    const redirectTo = await provider.interactionResult(
      incoming,
      outgoing,
      { login: { accountId: p.userId }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
    return c.json({ redirectTo });
  });

  app.post(`${OAUTH_PREFIX}/interaction/:uid/abort`, async (c) => {
    const { provider, incoming, outgoing } = await pending(c);
    const redirectTo = await provider.interactionResult(
      incoming,
      outgoing,
      { error: "access_denied", error_description: "the user declined to connect the MCP host" },
      { mergeWithLastSubmission: false },
    );
    return c.json({ redirectTo });
  });

  // Everything else under /oauth2 is the provider's: authorization, token, registration,
  // revocation, JWKS, its own discovery.
  app.all(`${OAUTH_PREFIX}/*`, async (c) => {
    const { incoming, outgoing } = nodeOf(c);
    const url = new URL(c.req.url);
    await forward(await providerOf(c), incoming, outgoing, url.pathname.slice(OAUTH_PREFIX.length) + url.search);
    return alreadySent(outgoing);
  });
}

/** Whether the provider resolved this client from a client ID metadata document (its client_id an https URL). */
function isMetadataDocumentClient(client: { clientId: string }): boolean {
  return (client as { clientIdMetadataDocument?: boolean }).clientIdMetadataDocument === true;
}

/**
 * The consent's optional body `{"indexes": ["docs", "help_*"]}`: the only indexes the connection
 * may read (D-399). No body, or no `indexes`: every index of the tenant.
 */
function indexLimitOf(body: unknown): string[] | null {
  const indexes = (body as { indexes?: unknown } | null | undefined)?.indexes;
  return indexes === undefined || indexes === null ? null : checkIndexList(indexes);
}
