// OAuth 2.0 / OIDC sign-in with configured providers: authorization code flow with state and
// PKCE (S256). The state, verifier and return path travel in a short-lived sealed cookie, so the
// server keeps nothing between the redirect and the callback.
import { createHash, randomBytes } from "node:crypto";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { openJson, sealJson } from "../auth/signing.ts";
import type { Config, OAuthProviderConfig } from "../config.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import { InvalidArgumentError, NotFoundError, UnauthenticatedError, UnavailableError } from "../domain/errors.ts";
import type { AccountService } from "../services/accounts.ts";
import { baseUrlOf } from "./health.ts";
import { isLocal, setSessionCookie } from "./session-cookie.ts";

const STATE_COOKIE = "sift_oauth";
const STATE_TTL_MS = 10 * 60_000;

interface PendingSignIn {
  provider: string;
  state: string;
  verifier: string;
  redirectTo: string;
  expiresAt: number;
}

const b64url = (bytes: Buffer) => bytes.toString("base64url");

export function oauthHandlers(deps: { config: Config; accounts: AccountService; secret: Buffer }): Handlers {
  const providers = new Map(deps.config.oauthProviders.map((p) => [p.id, p]));
  const provider = (id: string): OAuthProviderConfig => {
    const p = providers.get(id);
    if (!p) throw new NotFoundError(`sign-in provider "${id}" is not configured here`);
    return p;
  };

  return {
    Auth_providers: (c) =>
      c.json({
        providers: [...providers.values()].map((p) => ({
          id: p.id,
          name: p.name,
          authorizeUrl: `/v1/auth/oauth/${p.id}`,
        })),
      } satisfies ResponseBody<"Auth_providers", 200>),

    Auth_oauthStart: (c, { path, query }) => {
      const p = provider(path.provider);
      const redirectTo = query.redirectTo ?? "/";
      // Only same-site paths: an open redirect would turn sign-in into a phishing tool.
      if (!redirectTo.startsWith("/") || redirectTo.startsWith("//") || redirectTo.includes("\\")) {
        throw new InvalidArgumentError("redirectTo must be a path on this site", [
          { field: "redirectTo", message: "must start with a single /" },
        ]);
      }
      const pending: PendingSignIn = {
        provider: p.id,
        state: b64url(randomBytes(16)),
        verifier: b64url(randomBytes(32)),
        redirectTo,
        expiresAt: Date.now() + STATE_TTL_MS,
      };
      setCookie(c, STATE_COOKIE, sealJson(deps.secret, pending), {
        httpOnly: true,
        sameSite: "Lax",
        secure: !isLocal(c),
        path: "/v1/auth/oauth",
        maxAge: STATE_TTL_MS / 1000,
      });
      const url = new URL(p.authorizeUrl);
      url.search = new URLSearchParams({
        response_type: "code",
        client_id: p.clientId,
        redirect_uri: `${baseUrlOf(c, deps.config)}/v1/auth/oauth/${p.id}/callback`,
        scope: p.scopes,
        state: pending.state,
        code_challenge: b64url(createHash("sha256").update(pending.verifier).digest()),
        code_challenge_method: "S256",
      }).toString();
      return c.redirect(url.toString(), 302);
    },

    Auth_oauthCallback: async (c, { path, query }) => {
      const p = provider(path.provider);
      const pending = openJson<PendingSignIn>(deps.secret, getCookie(c, STATE_COOKIE));
      deleteCookie(c, STATE_COOKIE, { path: "/v1/auth/oauth" });
      if (query.error) throw new UnauthenticatedError(`${p.name} did not sign you in: ${query.error}`);
      if (!pending || pending.provider !== p.id || pending.expiresAt < Date.now() || pending.state !== query.state) {
        throw new InvalidArgumentError("the sign-in attempt expired or did not start here: start again", [
          { field: "state", message: "does not match the sign-in started by this browser" },
        ]);
      }
      if (!query.code)
        throw new InvalidArgumentError("the provider sent no authorization code", [
          { field: "code", message: "is required" },
        ]);

      const token = await postForm(p.tokenUrl, {
        grant_type: "authorization_code",
        code: query.code,
        redirect_uri: `${baseUrlOf(c, deps.config)}/v1/auth/oauth/${p.id}/callback`,
        client_id: p.clientId,
        client_secret: p.clientSecret,
        code_verifier: pending.verifier,
      });
      if (typeof token.access_token !== "string")
        throw new UnauthenticatedError(`${p.name} refused the authorization code`);
      const profile = await getJson(p.userinfoUrl, token.access_token);
      const subject = profile.sub ?? profile.id;
      if (subject === undefined) throw new UnavailableError(`${p.name} returned a profile without an id`);
      const email = typeof profile.email === "string" ? profile.email : undefined;
      const signedIn = await deps.accounts.oauthSignIn(p.id, String(subject), email);
      setSessionCookie(c, signedIn.token, signedIn.expiresAt);
      return c.redirect(pending.redirectTo, 302);
    },
  };
}

async function postForm(url: string, form: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(form),
    signal: AbortSignal.timeout(10_000),
  }).catch((error: Error) => {
    throw new UnavailableError(`the sign-in provider is unreachable: ${error.message}`);
  });
  // A body that is not JSON holds no access token: the caller answers that as a refusal.
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (response.status >= 500) throw new UnavailableError(`the sign-in provider failed (${response.status})`);
  return body;
}

/** A provider's profile: only `sub`/`id` and `email` are read, each checked before use. */
interface Profile {
  sub?: unknown;
  id?: unknown;
  email?: unknown;
}

async function getJson(url: string, accessToken: string): Promise<Profile> {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: "application/json", "user-agent": "sift" },
    signal: AbortSignal.timeout(10_000),
  }).catch((error: Error) => {
    throw new UnavailableError(`the sign-in provider is unreachable: ${error.message}`);
  });
  if (!response.ok)
    throw new UnauthenticatedError(`the sign-in provider refused the profile request (${response.status})`);
  return (await response.json()) as Profile;
}
