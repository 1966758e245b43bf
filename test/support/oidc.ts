/// <reference path="../../server/src/mcp-auth/oidc-provider.d.ts" />
// A real OpenID provider for tests: panva's oidc-provider (certified by the OpenID Foundation),
// with its development login and consent pages (any login name, any password).
import { generateKeyPairSync } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import Provider from "oidc-provider";
import { freePort } from "./ports.ts";
import { type RunningSift, startSift } from "./server.ts";

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Registers the client once Sift's address (and so its callback) is known. */
  start(redirectUri: string): Promise<void>;
  /** What went wrong inside the provider, for a failing test's message. */
  errors: string[];
  /**
   * When set, ID tokens leave the provider with their claims changed (the subject swapped) and
   * the signature kept: what a forger without the provider's key could send.
   */
  forgeIdTokens: boolean;
  stop(): Promise<void>;
}

export async function testIdp(): Promise<TestIdp> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = "sift-dashboard";
  const clientSecret = "a-client-secret-of-enough-length-for-hs256";
  const errors: string[] = [];
  let servers: Server[] = [];
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const idp: TestIdp = {
    issuer,
    clientId,
    clientSecret,
    errors,
    forgeIdTokens: false,
    async start(redirectUri) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            grant_types: ["authorization_code"],
            response_types: ["code"],
            token_endpoint_auth_method: "client_secret_post",
          },
        ],
        // PKCE is required for every client, so a sign-in without it fails here, not silently.
        pkce: { required: () => true },
        claims: { openid: ["sub"], email: ["email", "email_verified"] },
        findAccount: async (_ctx: unknown, id: string) => ({
          accountId: id,
          claims: async () => ({ sub: id, email: `${id}@idp.example`, email_verified: true }),
        }),
        cookies: { keys: ["a-cookie-signing-key-for-the-test-idp"] },
        features: { devInteractions: { enabled: true } },
        jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "test-key", use: "sig", alg: "RS256" }] },
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
      });
      for (const event of ["server_error", "grant.error", "authorization.error", "userinfo.error"]) {
        provider.on(event, (...args: unknown[]) => errors.push(`${event}: ${String(args.at(-1))}`));
      }
      // The provider listens on a port of its own; the issuer's port is a pass-through in front
      // of it that can forge the token endpoint's answers.
      const inner = createServer(provider.callback());
      await new Promise<void>((r) => inner.listen(0, "127.0.0.1", () => r()));
      const innerPort = (inner.address() as { port: number }).port;
      const front = createServer((req, res) => {
        const upstream = request(
          { host: "127.0.0.1", port: innerPort, path: req.url, method: req.method, headers: req.headers },
          async (answer) => {
            const chunks: Buffer[] = [];
            for await (const chunk of answer) chunks.push(chunk as Buffer);
            let body: Buffer = Buffer.concat(chunks);
            if (idp.forgeIdTokens && req.url === "/token" && answer.statusCode === 200) body = forged(body);
            const headers = { ...answer.headers, "content-length": String(body.length) };
            res.writeHead(answer.statusCode ?? 502, headers);
            res.end(body);
          },
        );
        req.pipe(upstream);
      });
      await new Promise<void>((r) => front.listen(port, "127.0.0.1", () => r()));
      servers = [front, inner];
    },
    async stop() {
      for (const server of servers) {
        await new Promise<void>((r) => server.close(() => r()));
        server.closeAllConnections();
      }
    },
  };
  return idp;
}

/** A token answer whose ID token names another subject, under the original signature. */
function forged(body: Buffer): Buffer {
  const answer = JSON.parse(body.toString("utf8")) as { id_token: string };
  const [header, payload, signature] = answer.id_token.split(".");
  const claims = JSON.parse(Buffer.from(payload!, "base64url").toString("utf8")) as Record<string, unknown>;
  claims.sub = "mallory";
  claims.email = "mallory@idp.example";
  answer.id_token = [header, Buffer.from(JSON.stringify(claims)).toString("base64url"), signature].join(".");
  return Buffer.from(JSON.stringify(answer));
}

/**
 * A Sift whose sign-in offers the test provider as "Test ID" (id `idp`), and the provider,
 * started with Sift's callback registered: the setup of the browser tests that sign in there.
 */
export async function siftWithTestIdp(): Promise<{ idp: TestIdp; sift: RunningSift }> {
  const idp = await testIdp();
  const sift = await startSift({
    SIFT_OAUTH_PROVIDERS: "idp",
    SIFT_OAUTH_IDP_NAME: "Test ID",
    SIFT_OAUTH_IDP_ISSUER: idp.issuer,
    SIFT_OAUTH_IDP_CLIENT_ID: idp.clientId,
    SIFT_OAUTH_IDP_CLIENT_SECRET: idp.clientSecret,
  });
  await idp.start(`${sift.url}/v1/auth/oauth/idp/callback`);
  return { idp, sift };
}
