import { authorize } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import { indexAllowed, requireIndexAllowed, requireUnrestrictedIndexes } from "../auth/restrictions.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { CatalogService } from "../services/catalog.ts";

const tenant = (p: Principal, action: "catalog.read" | "catalog.write") => {
  authorize(p, action);
  if (p.kind === "anonymous") throw new Error("unreachable: anonymous callers are denied catalog access");
  return p.tenantId;
};

/** The tenant, once the caller may `action` and its key (if restricted to some indexes) reaches `indexName`. */
const tenantFor = (p: Principal, action: "catalog.read" | "catalog.write", indexName: string) => {
  const tenantId = tenant(p, action);
  requireIndexAllowed(p, indexName);
  return tenantId;
};

/** Services hold indexes of any name, so a key restricted to some indexes cannot make or remove them. */
const serviceWriter = (p: Principal) => {
  const tenantId = tenant(p, "catalog.write");
  requireUnrestrictedIndexes(p, "create or delete services");
  return tenantId;
};

export function catalogHandlers(catalog: CatalogService): Handlers {
  return {
    Services_create: async (c, { body }) => {
      const service = await catalog.createService(serviceWriter(c.get("principal")), body);
      return c.json(service satisfies ResponseBody<"Services_create", 201>, 201);
    },
    Services_list: async (c) => {
      const services = await catalog.listServices(tenant(c.get("principal"), "catalog.read"));
      return c.json({ services } satisfies ResponseBody<"Services_list", 200>);
    },
    Services_get: async (c, { path }) => {
      const service = await catalog.getService(tenant(c.get("principal"), "catalog.read"), path.serviceName);
      return c.json(service satisfies ResponseBody<"Services_get", 200>);
    },
    Services_delete: async (c, { path }) => {
      await catalog.deleteService(serviceWriter(c.get("principal")), path.serviceName);
      return c.body(null, 204);
    },
    Indexes_create: async (c, { body }) => {
      const index = await catalog.createIndex(tenantFor(c.get("principal"), "catalog.write", body.name), body);
      return c.json(index satisfies ResponseBody<"Indexes_create", 201>, 201);
    },
    Indexes_list: async (c) => {
      const p = c.get("principal");
      // A key restricted to some indexes sees only those.
      const indexes = (await catalog.listIndexes(tenant(p, "catalog.read"))).filter((index) =>
        indexAllowed(p, index.name),
      );
      return c.json({ indexes } satisfies ResponseBody<"Indexes_list", 200>);
    },
    Indexes_get: async (c, { path }) => {
      const index = await catalog.getIndex(
        tenantFor(c.get("principal"), "catalog.read", path.indexName),
        path.indexName,
      );
      return c.json(index satisfies ResponseBody<"Indexes_get", 200>);
    },
    Indexes_update: async (c, { path, body }) => {
      const index = await catalog.updateIndex(
        tenantFor(c.get("principal"), "catalog.write", path.indexName),
        path.indexName,
        body,
      );
      return c.json(index satisfies ResponseBody<"Indexes_update", 200>);
    },
    Indexes_delete: async (c, { path }) => {
      await catalog.deleteIndex(tenantFor(c.get("principal"), "catalog.write", path.indexName), path.indexName);
      return c.body(null, 204);
    },
  };
}
