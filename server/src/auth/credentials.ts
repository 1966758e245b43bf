// What the authentication middleware needs to resolve a caller, as two small interfaces: the
// services implement them and the composition root hands them over, so http/ never imports services.
import type { KeyPrincipal, OAuthPrincipal, SessionPrincipal } from "./principal.ts";

export interface ApiKeyAuthenticator {
  /** The principal of a Bearer API key; throws UnauthenticatedError for anything but an active key. */
  authenticate(plaintext: string): Promise<KeyPrincipal>;
}

export interface SessionAuthenticator {
  /** The principal of a session cookie's token; undefined when it is unknown or expired. */
  session(token: string): Promise<SessionPrincipal | undefined>;
}

export interface McpTokenAuthenticator {
  /** The principal of an MCP host's OAuth access token for `<issuer>/mcp`; throws UnauthenticatedError otherwise. */
  authenticate(token: string, issuer: string): Promise<OAuthPrincipal>;
}
