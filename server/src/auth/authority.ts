// The authority table of docs/authority.md, as data. Every route asks `authorize` (may this caller do this
// kind of thing at all?) and then `authorizeIndex` (on this index?). Another tenant's index
// answers exactly as a missing one would.
import { ForbiddenError, NotFoundError, UnauthenticatedError } from "../domain/errors.ts";
import type { Principal } from "./principal.ts";
import { requireIndexAllowed } from "./restrictions.ts";

export type Action =
  | "search"
  | "records.read"
  /** Record writes, uploads, coalesce, activation, versions and ingest status. */
  | "index.write"
  | "catalog.read"
  | "catalog.write"
  | "apiKeys"
  | "mcp";

/**
 * public: PUBLIC indexes of any tenant; own: the caller's tenant; ownPublic: the caller's tenant's
 * PUBLIC indexes; deny: 401; forbid: 403 (a valid key without the authority).
 */
export type Cell = "public" | "own" | "ownPublic" | "deny" | "forbid";
export type Caller = "anonymous" | "srh" | "svc" | "pat" | "adm" | "session" | "oauth";

const secret = {
  search: "own",
  "records.read": "own",
  "index.write": "own",
  "catalog.read": "own",
  "catalog.write": "own",
  apiKeys: "deny",
  mcp: "own",
} as const satisfies Record<Action, Cell>;

export const AUTHORITY: Record<Caller, Record<Action, Cell>> = {
  anonymous: {
    search: "public",
    "records.read": "deny",
    "index.write": "deny",
    "catalog.read": "deny",
    "catalog.write": "deny",
    apiKeys: "deny",
    mcp: "deny",
  },
  srh: {
    search: "public",
    "records.read": "ownPublic",
    "index.write": "deny",
    "catalog.read": "deny",
    "catalog.write": "deny",
    apiKeys: "deny",
    mcp: "ownPublic",
  },
  svc: { ...secret, "catalog.write": "forbid" },
  pat: secret,
  adm: secret,
  session: { ...secret, apiKeys: "own", mcp: "deny" },
  // An MCP host's OAuth token: the MCP tools (all of them reads) over its user's tenant, nothing else.
  oauth: {
    search: "deny",
    "records.read": "deny",
    "index.write": "deny",
    "catalog.read": "deny",
    "catalog.write": "deny",
    apiKeys: "deny",
    mcp: "own",
  },
};

export const callerOf = (p: Principal): Caller =>
  p.kind === "anonymous" || p.kind === "session" || p.kind === "oauth" ? p.kind : p.type;

function denial(p: Principal, action: Action): UnauthenticatedError {
  if (action === "apiKeys" && p.kind === "key") {
    return new UnauthenticatedError("API keys cannot manage keys: sign in to the dashboard and use its session");
  }
  if (action === "mcp" && p.kind === "session") {
    return new UnauthenticatedError(
      "the MCP endpoint takes an API key or an MCP host's OAuth access token: send Authorization: Bearer <key>",
    );
  }
  if (p.kind === "oauth") {
    return new UnauthenticatedError("an MCP access token is good for /mcp only: use an API key or the dashboard");
  }
  if (p.kind === "key" && p.type === "srh") {
    return new UnauthenticatedError("a public srh key can only search PUBLIC indexes; use a secret key for this");
  }
  if (action === "apiKeys")
    return new UnauthenticatedError("sign in to the dashboard first: the session cookie is missing or expired");
  if (action === "mcp")
    return new UnauthenticatedError(
      "send an API key as Authorization: Bearer <key>, or sign in through OAuth: WWW-Authenticate names the metadata",
    );
  return new UnauthenticatedError("this operation needs an API key: send Authorization: Bearer <key>");
}

/** Throws 401/403 when the caller may not perform `action` at all; returns the cell otherwise. */
export function authorize(p: Principal, action: Action): Exclude<Cell, "deny" | "forbid"> {
  const cell = AUTHORITY[callerOf(p)][action];
  if (cell === "deny") throw denial(p, action);
  if (cell === "forbid")
    throw new ForbiddenError(`a ${callerOf(p)} key can read services and indexes but not change them`);
  return cell;
}

export const tenantOf = (p: Principal): string | undefined => (p.kind === "anonymous" ? undefined : p.tenantId);

export interface IndexAccess {
  tenantId: string;
  visibility: "PUBLIC" | "PRIVATE";
}

/**
 * Checks the caller against a resolved (or missing) index named `name`; `what` names it in errors.
 * A key's index list is checked before the index is looked at, so its 403 tells nothing about
 * whether the index exists.
 */
export function authorizeIndex<T extends IndexAccess>(
  p: Principal,
  action: Action,
  index: T | undefined,
  name: string,
  what = `index "${name}"`,
): T {
  const cell = authorize(p, action);
  requireIndexAllowed(p, name);
  if (cell === "public") {
    if (index?.visibility === "PUBLIC") {
      // A listed name confines a key to its own tenant's indexes (docs/api-keys.md, Restrictions).
      if ((p.kind === "key" || p.kind === "oauth") && p.indexes && index.tenantId !== p.tenantId) {
        const who = p.kind === "oauth" ? "this MCP connection" : "this API key";
        throw new ForbiddenError(`${who} is restricted to indexes of its own tenant: ${what} is another's`);
      }
      return index;
    }
    throw new UnauthenticatedError(`${what} is not a PUBLIC index: send an API key of the tenant that owns it`);
  }
  if (!index || index.tenantId !== tenantOf(p)) throw new NotFoundError(`${what} does not exist`);
  if (cell === "ownPublic" && index.visibility !== "PUBLIC") {
    throw new UnauthenticatedError(`${what} is PRIVATE: a public srh key can only reach PUBLIC indexes`);
  }
  return index;
}
