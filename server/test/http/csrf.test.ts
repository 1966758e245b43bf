// Cookie-authenticated writes must come from this server's own origin. The origin used to come
// from the request's Host header alone, which the sender (or a proxy) chooses; with
// SIFT_PUBLIC_URL set it is that URL's origin (issue 15, finding 13).
import { Hono } from "hono";
import { describe, expect, test } from "vitest";
import type { AppEnv } from "../../src/http/env.ts";
import { csrfOriginCheck } from "../../src/http/middleware.ts";
import { problemFor } from "../../src/http/problem.ts";

function app(ownOrigin: string | undefined): Hono<AppEnv> {
  const hono = new Hono<AppEnv>();
  hono.use("*", async (c, next) => {
    c.set("principal", { kind: "anonymous" } as never);
    await next();
  });
  hono.use("*", csrfOriginCheck({ allowedOrigins: [], cookieSetters: ["/v1/auth/login"], ownOrigin }));
  hono.post("/v1/auth/login", (c) => c.text("signed in"));
  hono.onError((error) => new Response(null, { status: problemFor(error)?.status ?? 500 }));
  return hono;
}

const login = async (hono: Hono<AppEnv>, url: string, origin: string) =>
  (await hono.request(url, { method: "POST", headers: { origin } })).status;

describe("the CSRF origin check", () => {
  test("with a public URL, a request whose Host matches its Origin is still refused", async () => {
    const hono = app("https://sift.example");
    expect(await login(hono, "http://evil.example/v1/auth/login", "http://evil.example")).toBe(403);
    expect(await login(hono, "http://10.0.0.5:7700/v1/auth/login", "https://sift.example")).toBe(200);
  });

  test("without one, the origin is the request's own", async () => {
    const hono = app(undefined);
    expect(await login(hono, "http://127.0.0.1:7700/v1/auth/login", "http://127.0.0.1:7700")).toBe(200);
    expect(await login(hono, "http://127.0.0.1:7700/v1/auth/login", "http://evil.example")).toBe(403);
  });
});
