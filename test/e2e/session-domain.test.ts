// SIFT_SESSION_COOKIE_DOMAIN (D-387): with every region under one parent domain, the dashboard's
// session cookie is set for that domain, so the browser sends it to every region's dashboard (the
// sessions themselves live in the store all regions share: test/replication/sdk.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sendAs } from "../support/raw-http.ts";
import { startSift, type RunningSift } from "../support/server.ts";

let sift: RunningSift;

beforeAll(async () => {
  sift = await startSift({ SIFT_SESSION_COOKIE_DOMAIN: "sift.test", SIFT_ALLOWED_HOSTS: "*.sift.test,elsewhere.test" });
});
afterAll(async () => {
  await sift?.stop();
});

/** A request as a browser at `host` sends it, with the cookie it holds; the cookies set. */
async function send(
  host: string,
  method: string,
  path: string,
  options: { json?: unknown; cookie?: string } = {},
): Promise<{ status: number; cookies: string[] }> {
  const { port } = new URL(sift.url);
  const headers = {
    host: `${host}:${port}`,
    origin: `http://${host}:${port}`,
    ...(options.cookie ? { cookie: options.cookie } : {}),
  };
  const answer = await sendAs(sift.url, method, path, headers, options.json);
  return { status: answer.status, cookies: (answer.headers["set-cookie"] as string[] | undefined) ?? [] };
}

describe("a session cookie for every region's host", () => {
  test("signed in under the parent domain, the cookie is the domain's; logging out clears it there and here", async () => {
    const account = { email: `domain-${process.pid}@sift.test`, password: "correct horse battery staple" };
    const signup = await send("london.sift.test", "POST", "/v1/auth/signup", { json: account });
    expect(signup.status).toBe(201);
    expect(signup.cookies).toHaveLength(1);
    expect(signup.cookies[0]).toMatch(/^sift_session=[\w-]{40,};/);
    expect(signup.cookies[0]).toMatch(/; Domain=sift\.test(;|$)/);
    expect(signup.cookies[0]).toMatch(/HttpOnly/);
    const cookie = signup.cookies[0]!.split(";")[0]!;
    // The same cookie, as the browser sends it to another host under the domain.
    expect((await send("frankfurt.sift.test", "GET", "/v1/auth/me", { cookie })).status).toBe(200);

    const logout = await send("frankfurt.sift.test", "POST", "/v1/auth/logout", { cookie });
    expect(logout.status).toBe(204);
    expect(logout.cookies.map((c) => /Domain=([^;]+)/.exec(c)?.[1] ?? "this host")).toEqual(["sift.test", "this host"]);
    expect(logout.cookies.every((c) => /^sift_session=;/.test(c) && /Max-Age=0/.test(c))).toBe(true);
    expect((await send("london.sift.test", "GET", "/v1/auth/me", { cookie })).status).toBe(401);
  });

  test("a host outside the domain gets a cookie for itself alone, which its browser would keep", async () => {
    const account = { email: `outside-${process.pid}@sift.test`, password: "correct horse battery staple" };
    const login = await send("elsewhere.test", "POST", "/v1/auth/signup", { json: account });
    expect(login.status).toBe(201);
    expect(login.cookies[0]).toMatch(/^sift_session=/);
    expect(login.cookies[0]).not.toMatch(/Domain=/i);
  });
});
