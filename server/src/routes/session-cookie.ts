import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../http/env.ts";
import { hostIsUnder } from "../http/host-check.ts";
import { SESSION_COOKIE } from "../http/middleware.ts";

const isLocal = (c: Context<AppEnv>) => ["localhost", "127.0.0.1", "[::1]"].includes(new URL(c.req.url).hostname);

/**
 * The configured parent domain when this request's host is under it (D-387); otherwise none, a
 * cookie for this host only: a browser would refuse one for a domain its host is not under.
 */
function domainFor(c: Context<AppEnv>, domain: string | undefined): string | undefined {
  if (domain === undefined) return undefined;
  const host = new URL(c.req.url).hostname;
  return hostIsUnder(host, domain) ? domain : undefined;
}

/** HttpOnly, SameSite=Lax, Secure outside localhost (docs/authority.md, Sessions and CSRF). */
export function setSessionCookie(c: Context<AppEnv>, token: string, expiresAt: number, domain?: string): void {
  setCookie(c, SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: "Lax",
    secure: !isLocal(c),
    path: "/",
    domain: domainFor(c, domain),
    maxAge: Math.max(0, Math.floor((expiresAt - Date.now()) / 1000)),
  });
}

/** Clears the cookie for the parent domain and for this host alone (one set before the domain was). */
export function clearSessionCookie(c: Context<AppEnv>, domain?: string): void {
  const options = { path: "/", secure: !isLocal(c), httpOnly: true, sameSite: "Lax" } as const;
  const parent = domainFor(c, domain);
  if (parent !== undefined) deleteCookie(c, SESSION_COOKIE, { ...options, domain: parent });
  deleteCookie(c, SESSION_COOKIE, options);
}

export { isLocal };
