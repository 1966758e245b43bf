// Sign-in with configured providers, on openid-client: the authorization code flow with PKCE
// (S256) and state, plus a nonce and ID-token validation (signature against the provider's
// published keys, issuer, audience, expiry, nonce) when the provider is OpenID Connect. An OIDC provider is found
// by discovery from its issuer; a plain OAuth 2.0 provider (GitHub) is described by its three
// URLs and read through its userinfo endpoint. The state, verifier, nonce and return path travel
// in a short-lived sealed cookie, so the server keeps nothing between the redirect and the callback.
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import * as oidc from "openid-client";
import { openJson, sealJson } from "../auth/signing.ts";
import type { Config, OAuthProviderConfig } from "../config.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { AppEnv } from "../http/env.ts";
import {
  DomainError,
  InvalidArgumentError,
  NotFoundError,
  UnauthenticatedError,
  UnavailableError,
} from "../domain/errors.ts";
import type { AccountService } from "../services/accounts.ts";
import { baseUrlOf } from "./health.ts";
import { isLocal, setSessionCookie } from "./session-cookie.ts";

const STATE_COOKIE = "sift_oauth";
const STATE_TTL_MS = 10 * 60_000;
const TIMEOUT_SECONDS = 10;

interface PendingSignIn {
  provider: string;
  state: string;
  verifier: string;
  /** Only for OpenID Connect providers: the ID token must carry it back. */
  nonce?: string;
  redirectTo: string;
  expiresAt: number;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);
/** Plain http is allowed to a provider on this machine only (a test's, a developer's). */
const loopbackHttp = (url: string) => {
  const u = new URL(url);
  return u.protocol === "http:" && LOOPBACK.has(u.hostname);
};

/** The openid-client configuration of a provider: discovered once (OIDC) or built from its URLs. */
function configurationOf(p: OAuthProviderConfig): () => Promise<oidc.Configuration> {
  let pending: Promise<oidc.Configuration> | undefined;
  const auth = oidc.ClientSecretPost(p.clientSecret);
  return () => {
    if (!pending) {
      const issuer = p.issuer;
      pending = (
        issuer
          ? oidc.discovery(new URL(issuer), p.clientId, undefined, auth, {
              timeout: TIMEOUT_SECONDS,
              ...(loopbackHttp(issuer) ? { execute: [oidc.allowInsecureRequests] } : {}),
            })
          : Promise.resolve(
              new oidc.Configuration(
                {
                  // Plain OAuth 2.0 has no issuer; the authorization server's origin stands for it.
                  issuer: new URL(p.authorizeUrl!).origin,
                  authorization_endpoint: p.authorizeUrl,
                  token_endpoint: p.tokenUrl,
                  userinfo_endpoint: p.userinfoUrl,
                },
                p.clientId,
                undefined,
                auth,
              ),
            )
      ).then((config) => {
        config.timeout = TIMEOUT_SECONDS;
        // Also check the ID token's signature against the provider's published keys. openid-client
        // skips it by default for tokens from the token endpoint (OIDC Core allows trusting TLS
        // instead), but a check that costs one cached JWKS fetch is worth having.
        if (issuer) oidc.enableNonRepudiationChecks(config);
        if (!issuer && [p.authorizeUrl!, p.tokenUrl!, p.userinfoUrl!].every(loopbackHttp))
          oidc.allowInsecureRequests(config);
        return config;
      });
      // A provider that was down at the first sign-in is asked again at the next one.
      pending.catch(() => {
        pending = undefined;
      });
    }
    return pending.catch((error: Error) => {
      throw new UnavailableError(`${p.name} could not be reached to start sign-in: ${error.message}`);
    });
  };
}

export function oauthHandlers(deps: { config: Config; accounts: AccountService; secret: Buffer }): Handlers {
  const providers = new Map(
    deps.config.oauthProviders.map((p) => [p.id, { config: p, client: configurationOf(p) }] as const),
  );
  const provider = (id: string) => {
    const p = providers.get(id);
    if (!p) throw new NotFoundError(`sign-in provider "${id}" is not configured here`);
    return p;
  };
  const callbackUrl = (c: Context<AppEnv>, id: string) => `${baseUrlOf(c, deps.config)}/v1/auth/oauth/${id}/callback`;

  return {
    Auth_providers: (c) =>
      c.json({
        providers: [...providers.values()].map(({ config: p }) => ({
          id: p.id,
          name: p.name,
          authorizeUrl: `/v1/auth/oauth/${p.id}`,
        })),
      } satisfies ResponseBody<"Auth_providers", 200>),

    Auth_oauthStart: async (c, { path, query }) => {
      const { config: p, client } = provider(path.provider);
      const redirectTo = query.redirectTo ?? "/";
      // Only same-site paths: an open redirect would turn sign-in into a phishing tool.
      if (!redirectTo.startsWith("/") || redirectTo.startsWith("//") || redirectTo.includes("\\")) {
        throw new InvalidArgumentError("redirectTo must be a path on this site", [
          { field: "redirectTo", message: "must start with a single /" },
        ]);
      }
      const config = await client();
      const pending: PendingSignIn = {
        provider: p.id,
        state: oidc.randomState(),
        verifier: oidc.randomPKCECodeVerifier(),
        ...(p.issuer ? { nonce: oidc.randomNonce() } : {}),
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
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: callbackUrl(c, p.id),
        scope: p.scopes,
        state: pending.state,
        code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
        code_challenge_method: "S256",
        ...(pending.nonce ? { nonce: pending.nonce } : {}),
      });
      return c.redirect(url.href, 302);
    },

    Auth_oauthCallback: async (c, { path, query }) => {
      const { config: p, client } = provider(path.provider);
      const pending = openJson<PendingSignIn>(deps.secret, getCookie(c, STATE_COOKIE));
      deleteCookie(c, STATE_COOKIE, { path: "/v1/auth/oauth" });
      try {
        return await finish(c, p, client, pending, query);
      } catch (error) {
        // A person in a browser who started from the dashboard goes back to its sign-in screen
        // with the reason, rather than to a JSON document; API clients get the problem as before.
        const back = pending?.provider === p.id && pending.redirectTo.startsWith("/dashboard");
        if (back && c.req.header("sec-fetch-mode") === "navigate" && error instanceof DomainError)
          return c.redirect(`/dashboard/signin?error=${encodeURIComponent(error.message)}`, 302);
        throw error;
      }
    },
  };

  async function finish(
    c: Context<AppEnv>,
    p: OAuthProviderConfig,
    client: () => Promise<oidc.Configuration>,
    pending: PendingSignIn | undefined,
    query: { code?: string; state?: string; error?: string },
  ): Promise<Response> {
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
    const config = await client();

    // The callback URL as the provider was told it (behind a proxy the request's own URL
    // differs), with every parameter the provider sent: `iss` is checked when it is there.
    const current = new URL(callbackUrl(c, p.id));
    current.search = new URL(c.req.url).search;
    const tokens = await oidc
      .authorizationCodeGrant(config, current, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        ...(pending.nonce ? { expectedNonce: pending.nonce, idTokenExpected: true } : {}),
      })
      .catch((error: Error) => {
        throw refusal(p, error);
      });

    const claims = tokens.claims();
    let subject: unknown = claims?.sub;
    let email: unknown = claims?.email;
    let verified: unknown = claims?.email_verified;
    if (claims === undefined || email === undefined) {
      const profile = await userinfo(p, config, tokens.access_token, claims?.sub);
      subject ??= profile.sub ?? profile.id;
      email = profile.email;
      verified = profile.email_verified;
    }
    if (subject === undefined || subject === null)
      throw new UnavailableError(`${p.name} returned a profile without an id`);
    // An address the provider says it has not verified is not recorded as the user's.
    const address = typeof email === "string" && verified !== false ? email : undefined;
    const signedIn = await deps.accounts.oauthSignIn(p.id, String(subject), address);
    setSessionCookie(c, signedIn.token, signedIn.expiresAt, deps.config.sessionCookieDomain);
    return c.redirect(pending.redirectTo, 302);
  }
}

/** A provider's profile: only `sub`/`id`, `email` and `email_verified` are read, each checked before use. */
interface Profile {
  sub?: unknown;
  id?: unknown;
  email?: unknown;
  email_verified?: unknown;
}

async function userinfo(
  p: OAuthProviderConfig,
  config: oidc.Configuration,
  accessToken: string,
  expectedSubject: string | undefined,
): Promise<Profile> {
  try {
    // OIDC: the userinfo answer must name the ID token's subject (openid-client checks it).
    if (expectedSubject !== undefined)
      return (await oidc.fetchUserInfo(config, accessToken, expectedSubject)) as Profile;
    const response = await oidc.fetchProtectedResource(
      config,
      accessToken,
      new URL(p.userinfoUrl!),
      "GET",
      undefined,
      // GitHub refuses requests without a User-Agent.
      new Headers({ accept: "application/json", "user-agent": "sift" }),
    );
    if (!response.ok) throw new UnauthenticatedError(`${p.name} refused the profile request (${response.status})`);
    return (await response.json()) as Profile;
  } catch (error) {
    if (error instanceof UnauthenticatedError) throw error;
    throw refusal(p, error as Error);
  }
}

/** openid-client's errors in the API's terms: the provider said no (401), or could not be asked (503). */
function refusal(p: OAuthProviderConfig, error: Error): Error {
  if (error instanceof oidc.ResponseBodyError || error instanceof oidc.AuthorizationResponseError)
    return new UnauthenticatedError(`${p.name} refused the sign-in: ${error.error}`);
  if (error instanceof TypeError || error.name === "TimeoutError" || error.name === "AbortError")
    return new UnavailableError(`${p.name} is unreachable: ${error.message}`);
  // A token that fails validation (signature, issuer, audience, nonce, expiry) is a refused sign-in.
  return new UnauthenticatedError(`${p.name}'s answer failed validation: ${error.message}`);
}
