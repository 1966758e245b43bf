// Applies the rate limits (limits/rate-limits.ts) to every API request once the caller is known,
// and tells the client where it stands in the RateLimit and RateLimit-Policy fields of the IETF
// httpapi draft, e.g. `RateLimit-Policy: "srh";q=50;w=1` and `RateLimit: "srh";r=49;t=1`.
import type { MiddlewareHandler } from "hono";
import { callerOf } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import { RateLimitedError } from "../domain/errors.ts";
import { type RateDecision, type RateLimits, BURST_WINDOW_SECONDS } from "../limits/rate-limits.ts";
import { clientAddress } from "./client-address.ts";
import type { AppEnv } from "./env.ts";
import { problemFor, problemResponse } from "./problem.ts";

/** Whose bucket a request draws on: a secret key's own, a public key's per visitor, a user's, an address's. */
function bucketKey(p: Principal, address: string): string {
  if (p.kind === "anonymous") return `ip:${address}`;
  if (p.kind === "session") return `user:${p.userId}`;
  if (p.kind === "oauth") return `grant:${p.grantId}`;
  // A public srh key sits in every visitor's browser: one visitor must not spend everyone's rate.
  return p.type === "srh" ? `key:${p.keyId}:${address}` : `key:${p.keyId}`;
}

export function rateLimit(limits: RateLimits, trustedProxyHops: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = c.get("principal");
    const caller = callerOf(principal);
    const policy = limits.policies[caller];
    if (!policy) return next();
    const address = clientAddress(c, trustedProxyHops) ?? "unknown";
    const decision = await limits.consume(caller, bucketKey(principal, address));
    if (!decision) return next();
    const headers = rateHeaders(caller, policy.rate, policy.burst, decision);
    if (!decision.allowed) {
      const error = new RateLimitedError(
        `too many requests for this ${caller === "anonymous" ? "address" : caller === "session" ? "user" : caller === "oauth" ? "MCP connection" : `${caller} key`}: at most ${policy.rate} a second (and ${policy.burst} more over ${BURST_WINDOW_SECONDS} s); try again in ${decision.resetSeconds} s`,
        decision.resetSeconds,
      );
      const response = problemResponse(problemFor(error)!, c.get("requestId"));
      for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
      return response;
    }
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  };
}

function rateHeaders(name: string, rate: number, burst: number, d: RateDecision): Record<string, string> {
  const policies = [`"${name}";q=${rate};w=1`];
  if (burst > 0) policies.push(`"${name}-burst";q=${burst};w=${BURST_WINDOW_SECONDS}`);
  const current = d.window === "rate" ? `"${name}"` : `"${name}-burst"`;
  return {
    "ratelimit-policy": policies.join(", "),
    ratelimit: `${current};r=${d.remaining};t=${d.resetSeconds}`,
  };
}
