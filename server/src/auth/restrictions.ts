// API key restrictions (docs/api-keys.md, Restrictions): an index list and, for srh keys, a list
// of web origins. Pure functions: api-keys.ts validates them at creation, authority.ts and the
// authentication middleware enforce them on every request.
import { ForbiddenError, InvalidArgumentError } from "../domain/errors.ts";
import type { Principal } from "./principal.ts";

/** `*` matches any run of characters (none included); everything else literally, case-sensitive like index names. */
export function indexPatternMatches(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  // First part at the start, last at the end, the others in order between (no regex per search).
  const parts = pattern.split("*");
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (name.length < first.length + last.length || !name.startsWith(first) || !name.endsWith(last)) return false;
  let at = first.length;
  const end = name.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = name.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** The index patterns a caller is limited to: a key's list, or an MCP connection's (D-399). */
function indexListOf(p: Principal): readonly string[] | null {
  return (p.kind === "key" || p.kind === "oauth") && p.indexes ? p.indexes : null;
}

/** True when the caller may reach an index of this name: always, unless it carries an index list. */
export function indexAllowed(p: Principal, name: string): boolean {
  const list = indexListOf(p);
  return !list || list.some((pattern) => indexPatternMatches(pattern, name));
}

/** 403 naming the index when the caller is restricted to other indexes. */
export function requireIndexAllowed(p: Principal, name: string): void {
  if (indexAllowed(p, name)) return;
  const who = p.kind === "oauth" ? "this MCP connection" : "this API key";
  throw new ForbiddenError(
    `${who} is restricted to the indexes ${indexListOf(p)!.join(", ")}: index "${name}" is not among them`,
  );
}

/**
 * An MCP connection's index list, checked as the contract checks a key's (spec/api-keys.tsp:
 * `IndexPattern`, 1 to 100 of them): the consent's body is outside the contract.
 */
export function checkIndexList(indexes: unknown, field = "indexes"): string[] {
  if (!Array.isArray(indexes) || indexes.length === 0 || indexes.length > 100) {
    throw InvalidArgumentError.field(field, "must list 1 to 100 index names (`*` matches any run of characters)");
  }
  return [
    ...new Set(
      indexes.map((pattern, i) => {
        if (typeof pattern !== "string" || !/^[A-Za-z0-9_.*-]{1,128}$/.test(pattern)) {
          throw InvalidArgumentError.field(
            `${field}[${i}]`,
            "must be an index name of letters, digits, `_`, `.` and `-`, with `*` matching any run of characters",
          );
        }
        return pattern;
      }),
    ),
  ];
}

/** 403 for a catalog change that is not about one index (services) when the key has an index list. */
export function requireUnrestrictedIndexes(p: Principal, what: string): void {
  if (p.kind === "key" && p.indexes) {
    throw new ForbiddenError(
      `this API key is restricted to some indexes, so it cannot ${what}: use a key without an index list`,
    );
  }
}

const ORIGIN =
  /^(https?):\/\/(\*\.)?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(:\d{1,5})?$/;

/**
 * A referrer as given at creation, lower-cased (browsers send scheme and host in lower case), or
 * the reason it is not an origin pattern.
 */
export function parseOriginPattern(text: string): { ok: true; origin: string } | { ok: false; reason: string } {
  const origin = text.trim().toLowerCase();
  if (origin.endsWith("/") || /^https?:\/\/[^/]+\/./.test(origin)) {
    return { ok: false, reason: `must be an origin without a path, such as https://shop.example.com (got "${text}")` };
  }
  const match = ORIGIN.exec(origin);
  if (!match) {
    return {
      ok: false,
      reason: `must be an origin such as https://shop.example.com or https://*.example.com (got "${text}")`,
    };
  }
  if (match[2] && !match[3]!.includes(".")) {
    return { ok: false, reason: `must name a domain after "*.", such as https://*.example.com (got "${text}")` };
  }
  const port = match[4] ? Number(match[4].slice(1)) : undefined;
  if (port !== undefined && (port < 1 || port > 65_535))
    return { ok: false, reason: `has no valid port (got "${text}")` };
  return { ok: true, origin };
}

/** `https://*.example.com` matches any subdomain of example.com at any depth, not example.com itself. */
export function originMatches(pattern: string, origin: string): boolean {
  if (!pattern.includes("://*.")) return pattern === origin;
  const [scheme, rest] = pattern.split("://*.") as [string, string];
  const at = origin.indexOf("://");
  if (at < 0 || origin.slice(0, at) !== scheme) return false;
  const host = origin.slice(at + 3);
  return host.endsWith(`.${rest}`) && host.length > rest.length + 1;
}

/** The request's origin: its Origin header, else the origin of its Referer; undefined when it has neither. */
export function requestOrigin(origin: string | undefined, referer: string | undefined): string | undefined {
  if (origin !== undefined && origin !== "") return origin.toLowerCase();
  if (referer === undefined || referer === "") return undefined;
  try {
    return new URL(referer).origin.toLowerCase();
  } catch {
    return "null";
  }
}

/** 403 unless the request comes from an origin the caller's srh key allows. */
export function requireReferrerAllowed(
  p: Principal,
  headers: { origin: string | undefined; referer: string | undefined },
): void {
  if (p.kind !== "key" || !p.referrers) return;
  const origin = requestOrigin(headers.origin, headers.referer);
  if (origin === undefined) {
    throw new ForbiddenError(
      "this API key is restricted to some web origins: send an Origin header (browsers do) or a Referer naming the page",
    );
  }
  if (!p.referrers.some((pattern) => originMatches(pattern, origin))) {
    throw new ForbiddenError(
      `this API key may not be used from origin ${origin}: its allowed origins are ${p.referrers.join(", ")}`,
    );
  }
}

/** Checks and normalises the restrictions of a key being created; 400 naming the field. */
export function checkRestrictions(
  input: {
    type: string;
    expiresAt?: number | undefined;
    indexes?: string[] | undefined;
    referrers?: string[] | undefined;
  },
  now: number,
): { expiresAt: number | null; indexes: string[] | null; referrers: string[] | null } {
  if (input.expiresAt !== undefined && input.expiresAt <= now) {
    throw InvalidArgumentError.field("expiresAt", `must be in the future (epoch milliseconds; now is ${now})`);
  }
  if (input.indexes !== undefined && input.indexes.length === 0) {
    throw InvalidArgumentError.field(
      "indexes",
      "must name at least one index; leave it out for a key that reaches every index",
    );
  }
  let referrers: string[] | null = null;
  if (input.referrers !== undefined) {
    if (input.type !== "srh") {
      throw InvalidArgumentError.field(
        "referrers",
        "only srh keys can be restricted to web origins: secret keys must never be used from a browser",
      );
    }
    if (input.referrers.length === 0) {
      throw InvalidArgumentError.field("referrers", "must list at least one origin; leave it out to allow any origin");
    }
    referrers = input.referrers.map((text, i) => {
      const parsed = parseOriginPattern(text);
      if (!parsed.ok) throw InvalidArgumentError.field(`referrers[${i}]`, parsed.reason);
      return parsed.origin;
    });
  }
  return {
    expiresAt: input.expiresAt ?? null,
    indexes: input.indexes ? [...new Set(input.indexes)] : null,
    referrers: referrers ? [...new Set(referrers)] : null,
  };
}
