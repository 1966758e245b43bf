import { authorize } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { ApiKeyService } from "../services/api-keys.ts";

/** Key management accepts only a dashboard session (docs/authority.md). */
function session(p: Principal) {
  authorize(p, "apiKeys");
  if (p.kind !== "session") throw new Error("unreachable: the authority table admits only sessions here");
  return p;
}

export function apiKeyHandlers(keys: ApiKeyService): Handlers {
  return {
    ApiKeys_list: async (c) => {
      const p = session(c.get("principal"));
      return c.json((await keys.list(p.tenantId)) satisfies ResponseBody<"ApiKeys_list", 200>);
    },
    ApiKeys_create: async (c, { body }) => {
      const p = session(c.get("principal"));
      return c.json((await keys.create(p.tenantId, p.userId, body)) satisfies ResponseBody<"ApiKeys_create", 200>);
    },
    ApiKeys_revoke: async (c, { path }) => {
      const p = session(c.get("principal"));
      return c.json((await keys.revoke(p.tenantId, path.keyId)) satisfies ResponseBody<"ApiKeys_revoke", 200>);
    },
  };
}
