// OAuth/OIDC sign-in against a local identity provider that checks what a real one checks: the
// client credentials, the redirect URI, and the PKCE verifier against the challenge it was sent.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, expect, test } from "vitest";
import { Http } from "../support/http.ts";
import { startSift, type RunningSift } from "../support/server.ts";

let provider: Server;
let providerUrl: string;
let sift: RunningSift;
const codes = new Map<string, { challenge: string; redirectUri: string; subject: string }>();
let nextSubject = "user-42";

beforeAll(async () => {
  provider = createServer(async (req, res) => {
    const url = new URL(req.url!, "http://idp");
    let body = "";
    for await (const chunk of req) body += chunk;
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    if (url.pathname === "/token" && req.method === "POST") {
      const form = new URLSearchParams(body);
      const issued = codes.get(form.get("code") ?? "");
      const verifier = form.get("code_verifier") ?? "";
      const challenge = createHash("sha256").update(verifier).digest("base64url");
      if (!issued || form.get("client_id") !== "sift-client" || form.get("client_secret") !== "s3cret")
        return json(401, { error: "invalid_client" });
      if (issued.challenge !== challenge || issued.redirectUri !== form.get("redirect_uri"))
        return json(400, { error: "invalid_grant" });
      codes.delete(form.get("code")!);
      return json(200, { access_token: `token-${issued.subject}`, token_type: "Bearer" });
    }
    if (url.pathname === "/userinfo") {
      const subject = (req.headers.authorization ?? "").replace("Bearer token-", "");
      return json(200, { sub: subject, email: `${subject}@idp.example` });
    }
    json(404, {});
  });
  await new Promise<void>((r) => provider.listen(0, "127.0.0.1", () => r()));
  providerUrl = `http://127.0.0.1:${(provider.address() as { port: number }).port}`;
  sift = await startSift({
    SIFT_OAUTH_PROVIDERS: "acme",
    SIFT_OAUTH_ACME_NAME: "Acme ID",
    SIFT_OAUTH_ACME_CLIENT_ID: "sift-client",
    SIFT_OAUTH_ACME_CLIENT_SECRET: "s3cret",
    SIFT_OAUTH_ACME_AUTHORIZE_URL: `${providerUrl}/authorize`,
    SIFT_OAUTH_ACME_TOKEN_URL: `${providerUrl}/token`,
    SIFT_OAUTH_ACME_USERINFO_URL: `${providerUrl}/userinfo`,
  });
});
afterAll(async () => {
  await sift?.stop();
  await new Promise((r) => provider?.close(r));
});

/** What a browser does: follow Sift to the provider, "approve", and come back with a code. */
async function signInWithAcme(browser: Http, options: { tamperState?: boolean; redirectTo?: string } = {}) {
  const start = await browser.get(
    `/v1/auth/oauth/acme${options.redirectTo ? `?redirectTo=${encodeURIComponent(options.redirectTo)}` : ""}`,
  );
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get("location")!);
  expect(authorize.origin + authorize.pathname).toBe(`${providerUrl}/authorize`);
  expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
  const code = randomBytes(8).toString("hex");
  codes.set(code, {
    challenge: authorize.searchParams.get("code_challenge")!,
    redirectUri: authorize.searchParams.get("redirect_uri")!,
    subject: nextSubject,
  });
  const state = options.tamperState ? "forged" : authorize.searchParams.get("state")!;
  const callback = new URL(authorize.searchParams.get("redirect_uri")!);
  return browser.get(`${callback.pathname}?code=${code}&state=${state}`);
}

test("the configured provider is listed", async () => {
  const reply = await new Http(sift.url).get("/v1/auth/providers");
  expect(reply.body).toEqual({ providers: [{ id: "acme", name: "Acme ID", authorizeUrl: "/v1/auth/oauth/acme" }] });
});

test("sign-in with the provider creates the user on first visit and sets the session", async () => {
  const browser = new Http(sift.url);
  const back = await signInWithAcme(browser, { redirectTo: "/dashboard" });
  expect(back.status).toBe(302);
  expect(back.headers.get("location")).toBe("/dashboard");
  const me = await browser.get("/v1/auth/me");
  expect(me.status).toBe(200);
  expect(me.body.user.email).toBe("user-42@idp.example");

  // A second visit signs the same user in again.
  const again = new Http(sift.url);
  await signInWithAcme(again);
  expect((await again.get("/v1/auth/me")).body.user.id).toBe(me.body.user.id);
});

test("a callback whose state does not match the browser's is refused", async () => {
  const browser = new Http(sift.url);
  const back = await signInWithAcme(browser, { tamperState: true });
  expect(back.status).toBe(400);
  expect(back.body.errors).toEqual([{ field: "state", message: "does not match the sign-in started by this browser" }]);
  expect((await browser.get("/v1/auth/me")).status).toBe(401);
});

test("an OAuth identity is never linked to an existing password account by e-mail", async () => {
  const owner = new Http(sift.url);
  expect(
    (await owner.post("/v1/auth/signup", { email: "victim@idp.example", password: "correct horse battery" })).status,
  ).toBe(201);
  nextSubject = "victim";
  const attacker = new Http(sift.url);
  const back = await signInWithAcme(attacker);
  expect(back.status).toBe(409);
  expect((await attacker.get("/v1/auth/me")).status).toBe(401);
  nextSubject = "user-42";
});

test("an unknown provider is 404, an off-site redirect is refused, a provider error is 401", async () => {
  const browser = new Http(sift.url);
  expect((await browser.get("/v1/auth/oauth/nope")).status).toBe(404);
  expect((await browser.get(`/v1/auth/oauth/acme?redirectTo=${encodeURIComponent("//evil.example/")}`)).status).toBe(
    400,
  );
  const denied = await browser.get("/v1/auth/oauth/acme/callback?error=access_denied");
  expect(denied.status).toBe(401);
  expect(denied.body.detail).toMatch(/Acme ID did not sign you in: access_denied/);
});
