// The Hono application: middleware, the contract's operations, documentation. It receives its
// services ready-made; choosing adapters is the composition root's job (compose.ts).
import { createRequire } from "node:module";
import { Hono } from "hono";
import type { ApiKeyAuthenticator, McpTokenAuthenticator, SessionAuthenticator } from "./auth/credentials.ts";
import type { Config } from "./config.ts";
import { renderReference } from "./docs/reference.ts";
import { mountContract, type Contract, type Handlers } from "./http/contract.ts";
import type { AppEnv } from "./http/env.ts";
import { hostCheck, hostPolicy, mcpOriginCheck } from "./http/host-check.ts";
import { authenticate, csrfOriginCheck, mcpChallenge, openReadCors, requestContext } from "./http/middleware.ts";
import { HttpProblem, problemFor, problemResponse } from "./http/problem.ts";
import { rateLimit } from "./http/rate-limit.ts";
import type { RateLimits } from "./limits/rate-limits.ts";
import type { Logger } from "./log.ts";
import { resourceMetadataUrl } from "./mcp-auth/routes.ts";
import { baseUrlOf } from "./routes/health.ts";

export interface AppDeps {
  config: Config;
  log: Logger;
  contract: Contract;
  /** Resolves Bearer keys (the API key service). */
  apiKeys: ApiKeyAuthenticator;
  /** Resolves session cookies (the account service). */
  sessions: SessionAuthenticator;
  /** Resolves MCP hosts' OAuth access tokens on /mcp (mcp-auth/); without it /mcp takes API keys only. */
  mcpTokens?: McpTokenAuthenticator;
  rateLimits: RateLimits;
  handlers: Handlers;
  /** Extra non-contract routes (the demo page, widget assets, the MCP GET/DELETE answers). */
  extraRoutes?: (app: Hono<AppEnv>) => void;
}

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const referenceHtml = renderReference(deps.contract.document);
  const openapiJson = JSON.stringify(deps.contract.document);

  app.use(requestContext(deps.log));
  // Before anything reads a body or a credential. The health probes are exempt: orchestrators
  // call them by the machine's address, and they tell nothing (D-260).
  const hosts = hostPolicy(deps.config);
  app.use(hostCheck(hosts, { exempt: ["/healthz", "/readyz"] }));
  app.get("/openapi.json", (c) => c.body(openapiJson, 200, { "content-type": "application/json" }));
  app.get("/openapi.yaml", async (c) => {
    const { readFile } = await import("node:fs/promises");
    const yaml = await readFile(createRequire(import.meta.url).resolve("@sift/contract/openapi.yaml"), "utf8");
    return c.body(yaml, 200, { "content-type": "application/yaml; charset=utf-8" });
  });
  app.get("/docs", (c) => c.html(referenceHtml));
  app.get("/", (c) => c.redirect("/docs"));

  // Browsers on customers' sites search with a public key: search and the region probes are
  // open to any origin, without cookies (credentials stay off, so a session never crosses sites).
  const openReadOptions = {
    exposeHeaders: ["x-sift-region", "x-request-id", "ratelimit", "ratelimit-policy", "retry-after"],
    maxAgeSeconds: 86_400,
  };
  const openRead = openReadCors(openReadOptions);
  for (const path of ["/v1/search", "/v1/regions", "/healthz"]) app.use(path, openRead);
  app.use("/v1/search/multi", openReadCors({ ...openReadOptions, methods: ["POST"] }));

  app.use("/v1/*", authenticate(deps.apiKeys, deps.sessions));
  const issuer = (c: Parameters<typeof baseUrlOf>[0]) => baseUrlOf(c, deps.config);
  // Before authentication, so that its 401s too tell an MCP host where to sign in.
  app.use(
    "/mcp",
    mcpChallenge((c) => resourceMetadataUrl(issuer(c))),
  );
  app.use(
    "/mcp",
    authenticate(deps.apiKeys, deps.sessions, deps.mcpTokens ? { tokens: deps.mcpTokens, issuer } : undefined),
  );
  // The consent screen's calls (mcp-auth/routes.ts) act as the dashboard's signed-in user.
  app.use("/oauth2/interaction/*", authenticate(deps.apiKeys, deps.sessions));
  // After authentication: an srh key's own list of origins counts as allowed (D-261).
  app.use("/mcp", mcpOriginCheck(hosts, deps.config.allowedOrigins));
  const limited = rateLimit(deps.rateLimits, deps.config.trustedProxyHops);
  app.use("/v1/*", limited);
  app.use("/mcp", limited);
  // Registration and the token endpoint are open to anyone: an address's anonymous rate applies.
  app.use("/oauth2/*", limited);
  const csrf = csrfOriginCheck({
    allowedOrigins: deps.config.allowedOrigins,
    cookieSetters: ["/v1/auth/signup", "/v1/auth/login"],
    ownOrigin: deps.config.publicUrl ? new URL(deps.config.publicUrl).origin : undefined,
  });
  app.use("/v1/*", csrf);
  app.use("/oauth2/interaction/*", csrf);

  deps.extraRoutes?.(app);
  mountContract(app, deps.contract, deps.handlers, { maxBodyBytes: deps.config.maxBodyBytes });

  app.notFound((c) =>
    problemResponse(new HttpProblem(404, `no such route: ${c.req.method} ${c.req.path}`), c.get("requestId")),
  );
  app.onError((error, c) => {
    const requestId = c.get("requestId");
    const problem = problemFor(error);
    if (problem) return problemResponse(problem, requestId);
    (c.get("log") ?? deps.log).error("unhandled error", {
      requestId,
      error: error.message,
      stack: error.stack,
    });
    return problemResponse(
      new HttpProblem(500, "the server failed to handle this request; quote the request id when reporting it"),
      requestId,
    );
  });
  return app;
}
