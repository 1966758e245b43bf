// Cross-cutting middleware, each small and composable in the manner of Hono's own.
import { randomUUID } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { ApiKeyAuthenticator, McpTokenAuthenticator, SessionAuthenticator } from "../auth/credentials.ts";
import { looksLikeApiKey } from "../auth/secrets.ts";
import { ANONYMOUS } from "../auth/principal.ts";
import { requireReferrerAllowed } from "../auth/restrictions.ts";
import { ForbiddenError, UnauthenticatedError } from "../domain/errors.ts";
import type { Logger } from "../log.ts";
import type { AppEnv } from "./env.ts";

export const SESSION_COOKIE = "sift_session";

/**
 * CORS for the open read endpoints: any origin, no credentials (a session never crosses sites).
 * Headers go onto the response after the handler made it. Hono's cors() sets them on `c.res`
 * before the handler runs, which makes @hono/node-server build a full web Response for every
 * request (about 9 % of a search's CPU under load).
 */
export function openReadCors(options: {
  exposeHeaders: string[];
  maxAgeSeconds: number;
  /** POST for the multi-search, whose JSON body makes browsers ask first (a preflight). */
  methods?: string[];
}): MiddlewareHandler {
  const expose = options.exposeHeaders.join(",");
  const methods = (options.methods ?? ["GET"]).join(",");
  const allowHeaders = options.methods?.includes("POST") ? "authorization,content-type" : "authorization";
  return async (c, next) => {
    if (c.req.method === "OPTIONS") {
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": "*",
          "access-control-allow-methods": methods,
          "access-control-allow-headers": allowHeaders,
          "access-control-max-age": String(options.maxAgeSeconds),
          "access-control-expose-headers": expose,
        },
      });
    }
    await next();
    c.res.headers.set("access-control-allow-origin", "*");
    c.res.headers.set("access-control-expose-headers", expose);
  };
}

/** Request id (accepted from the caller when sane), a child logger, and one access-log line. */
export function requestContext(log: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const given = c.req.header("x-request-id");
    const requestId = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    c.set("requestId", requestId);
    c.set("log", log.child({ requestId }));
    c.set("principal", ANONYMOUS);
    const started = performance.now();
    await next();
    c.res.headers.set("x-request-id", requestId);
    const status = c.res.status;
    const fields = {
      requestId,
      method: c.req.method,
      path: c.req.path,
      status,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    };
    if (status >= 500) log.error("request failed", fields);
    else log.info("request", fields);
  };
}

/**
 * Resolves the caller: a Bearer API key wins over the session cookie; an invalid key is 401, and
 * an srh key restricted to some web origins is 403 from any other (for every route, MCP included).
 */
export function authenticate(
  apiKeys: ApiKeyAuthenticator,
  sessions: SessionAuthenticator,
  /** Where MCP hosts' OAuth access tokens are accepted too (/mcp), and the issuer they are checked against. */
  mcpTokens?: { tokens: McpTokenAuthenticator; issuer: (c: Context<AppEnv>) => string },
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header("authorization");
    if (header !== undefined) {
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!bearer) throw new UnauthenticatedError("send the API key as Authorization: Bearer <key>");
      const value = bearer[1]!;
      if (mcpTokens && !looksLikeApiKey(value)) {
        c.set("principal", await mcpTokens.tokens.authenticate(value, mcpTokens.issuer(c)));
        return next();
      }
      const principal = await apiKeys.authenticate(value);
      requireReferrerAllowed(principal, { origin: c.req.header("origin"), referer: c.req.header("referer") });
      c.set("principal", principal);
    } else {
      // An expired or unknown cookie is simply no session: public searches keep working.
      const token = getCookie(c, SESSION_COOKIE);
      if (token) c.set("principal", (await sessions.session(token)) ?? ANONYMOUS);
    }
    await next();
  };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Cookie-authenticated writes must come from our own origin (or a configured one). Browsers send
 * Origin on every cross-origin write; a request with neither Origin nor Sec-Fetch-Site comes from
 * a non-browser client, which a cross-site page cannot make on a user's behalf.
 */
export function csrfOriginCheck(options: {
  allowedOrigins: string[];
  /** Paths that set the cookie, checked even without a session (login CSRF). */
  cookieSetters: string[];
  /**
   * This server's origin as browsers reach it (SIFT_PUBLIC_URL). Without it the origin is taken
   * from the request's Host, which whoever sends the request (or a proxy) chooses.
   */
  ownOrigin?: string | undefined;
}): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const usesCookie = c.get("principal").kind === "session" || options.cookieSetters.includes(c.req.path);
    if (!usesCookie) return next();
    const origin = c.req.header("origin");
    const own = options.ownOrigin ?? new URL(c.req.url).origin;
    if (origin !== undefined) {
      if (origin === own || options.allowedOrigins.includes(origin)) return next();
      throw new ForbiddenError(`cross-site request refused: origin ${origin} may not use a dashboard session here`);
    }
    const site = c.req.header("sec-fetch-site");
    if (site !== undefined && site !== "same-origin" && site !== "none") {
      throw new ForbiddenError("cross-site request refused: a dashboard session can only be used from this site");
    }
    return next();
  };
}

/**
 * A 401 from /mcp names where to sign in (MCP authorization; RFC 9728, 5.1): the resource's
 * metadata URL, and `invalid_token` when the request carried a token that is not (or no longer) one.
 */
export function mcpChallenge(metadataUrl: (c: Context<AppEnv>) => string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.res.status !== 401) return;
    const sent = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
    const error = sent && !looksLikeApiKey(sent[1]!) ? ', error="invalid_token"' : "";
    c.res.headers.set("www-authenticate", `Bearer realm="sift", resource_metadata="${metadataUrl(c)}"${error}`);
  };
}
