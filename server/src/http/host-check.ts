// Host and Origin validation against DNS rebinding (MCP's transport security rules; the MCP SDK's
// advisory GHSA-w48q-cv73-mx4w). A page on evil.example whose name an attacker re-points at
// 127.0.0.1 reaches a server on the loopback address as a same-origin request: the browser sends
// `Host: evil.example`, which no server of ours is called. Every route but the health probes checks
// Host; POST /mcp also checks Origin (docs/DECISIONS.md, D-260 and D-261).
import type { MiddlewareHandler } from "hono";
import { originMatches } from "../auth/restrictions.ts";
import type { AppEnv } from "./env.ts";
import { HttpProblem } from "./problem.ts";

/** The names of the loopback interface, as the MCP SDK's localhostHostValidation lists them. */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];

/** True for an address or name that only this machine can reach (HOST, or a Host header's name). */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return (
    name === "localhost" ||
    name.endsWith(".localhost") ||
    name === "::1" ||
    /^127(\.\d{1,3}){3}$/.test(name) ||
    /^::ffff:127(\.\d{1,3}){3}$/.test(name)
  );
}

/** Whether `host` is `domain` or a name under it (a cookie's Domain reaches it). */
export function hostIsUnder(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

/** A Host header's name without its port, lower-cased, IPv6 in brackets; undefined when it is none. */
export function hostnameOf(host: string): string | undefined {
  if (!URL.canParse(`http://${host}`)) return undefined;
  const url = new URL(`http://${host}`);
  // A Host header is a name and an optional port; anything more ("a@b", "a/b") is not one.
  if (url.username || url.password || url.pathname !== "/" || url.search || url.hash) return undefined;
  return url.hostname;
}

export interface HostPolicy {
  /** `*`: every name (the operator turned the check off). */
  any: boolean;
  /** Listening on loopback: the loopback names are among `names`. */
  loopback: boolean;
  /** Exact names, lower-cased, IPv6 in brackets. */
  names: string[];
  /** `*.example.com` entries, kept as `.example.com`. */
  suffixes: string[];
}

/**
 * The names this server answers to: the loopback names when it listens on a loopback address, and
 * always the hosts of SIFT_PUBLIC_URL and of the region URLs, and SIFT_ALLOWED_HOSTS. Ports are
 * not compared: the names are what DNS rebinding forges.
 */
export function hostPolicy(config: {
  host: string;
  publicUrl: string | undefined;
  regionUrls: Record<string, string | undefined>;
  allowedHosts: string[];
}): HostPolicy {
  const names = new Set<string>();
  const suffixes: string[] = [];
  if (isLoopback(config.host)) for (const n of LOOPBACK_NAMES) names.add(n);
  for (const url of [config.publicUrl, ...Object.values(config.regionUrls)]) {
    if (url) names.add(new URL(url).hostname);
  }
  for (const entry of config.allowedHosts) {
    if (entry.startsWith("*.")) suffixes.push(entry.slice(1).toLowerCase());
    else if (entry !== "*") names.add(hostnameOf(entry) ?? entry.toLowerCase());
  }
  return { any: config.allowedHosts.includes("*"), loopback: isLoopback(config.host), names: [...names], suffixes };
}

export function hostAllowed(policy: HostPolicy, hostname: string): boolean {
  if (policy.any) return true;
  const name = hostname.toLowerCase();
  return policy.names.includes(name) || policy.suffixes.some((s) => name.endsWith(s));
}

/** Where to send the request instead. The configured names are not listed: some may be internal. */
const hint = (policy: HostPolicy) =>
  `${policy.loopback ? "use localhost, 127.0.0.1 or [::1] (any port), or " : "use "}` +
  "the host of SIFT_PUBLIC_URL or one of SIFT_ALLOWED_HOSTS";

/**
 * 403 for a request whose Host names another server. The name comes from the request's URL, which
 * the HTTP adapter builds from the Host header (or the listening address when there is none: such
 * a client is no browser, and so no rebinding victim).
 */
export function hostCheck(policy: HostPolicy, options: { exempt: string[] }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (policy.any || options.exempt.includes(c.req.path)) return next();
    const url = new URL(c.req.url);
    if (!hostAllowed(policy, url.hostname)) {
      throw new HttpProblem(
        403,
        `the Host header names ${url.hostname}, which is not a name of this server (refused against DNS rebinding): ${hint(policy)}`,
        undefined,
        {},
        "HOST_NOT_ALLOWED",
      );
    }
    return next();
  };
}

/**
 * 403 for a POST /mcp from a web page of another site (MCP: "If the Origin header is present and
 * invalid, servers MUST respond with HTTP 403"). Valid: an origin on one of this server's names,
 * one of SIFT_ALLOWED_ORIGINS, and for an srh key with a referrer list, the origins it lists (the
 * authentication middleware has already held the request to them). No Origin: not a browser page.
 */
export function mcpOriginCheck(policy: HostPolicy, allowedOrigins: string[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (origin === undefined || policy.any) return next();
    const principal = c.get("principal");
    if (principal.kind === "key" && principal.referrers?.length) return next();
    const lower = origin.toLowerCase();
    const hostname = URL.canParse(lower) ? new URL(lower).hostname : undefined;
    const ok =
      (hostname !== undefined && /^https?:$/.test(new URL(lower).protocol) && hostAllowed(policy, hostname)) ||
      allowedOrigins.some((o) => originMatches(o.toLowerCase(), lower));
    if (!ok) {
      throw new HttpProblem(
        403,
        `POST /mcp refuses requests from the web origin ${origin}: only pages on this server's own names or SIFT_ALLOWED_ORIGINS may call it (${hint(policy)})`,
        undefined,
        {},
        "ORIGIN_NOT_ALLOWED",
      );
    }
    return next();
  };
}
