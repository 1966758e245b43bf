import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../http/env.ts";
import { SESSION_COOKIE } from "../http/middleware.ts";

const isLocal = (c: Context<AppEnv>) => ["localhost", "127.0.0.1", "[::1]"].includes(new URL(c.req.url).hostname);

/** HttpOnly, SameSite=Lax, Secure outside localhost (docs/authority.md, Sessions and CSRF). */
export function setSessionCookie(c: Context<AppEnv>, token: string, expiresAt: number): void {
  setCookie(c, SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: "Lax",
    secure: !isLocal(c),
    path: "/",
    maxAge: Math.max(0, Math.floor((expiresAt - Date.now()) / 1000)),
  });
}

export function clearSessionCookie(c: Context<AppEnv>): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: !isLocal(c), httpOnly: true, sameSite: "Lax" });
}

export { isLocal };
