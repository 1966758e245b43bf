import { authorize } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { CatalogService } from "../services/catalog.ts";

const tenant = (p: Principal, action: "catalog.read" | "catalog.write") => {
  authorize(p, action);
  if (p.kind === "anonymous") throw new Error("unreachable: anonymous callers are denied catalog access");
  return p.tenantId;
};

export function catalogHandlers(catalog: CatalogService): Handlers {
  return {
    Services_create: async (c, { body }) => {
      const service = await catalog.createService(tenant(c.get("principal"), "catalog.write"), body);
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
      await catalog.deleteService(tenant(c.get("principal"), "catalog.write"), path.serviceName);
      return c.body(null, 204);
    },
    Indexes_create: async (c, { body }) => {
      const index = await catalog.createIndex(tenant(c.get("principal"), "catalog.write"), body);
      return c.json(index satisfies ResponseBody<"Indexes_create", 201>, 201);
    },
    Indexes_list: async (c) => {
      const indexes = await catalog.listIndexes(tenant(c.get("principal"), "catalog.read"));
      return c.json({ indexes } satisfies ResponseBody<"Indexes_list", 200>);
    },
    Indexes_get: async (c, { path }) => {
      const index = await catalog.getIndex(tenant(c.get("principal"), "catalog.read"), path.indexName);
      return c.json(index satisfies ResponseBody<"Indexes_get", 200>);
    },
    Indexes_update: async (c, { path, body }) => {
      const index = await catalog.updateIndex(tenant(c.get("principal"), "catalog.write"), path.indexName, body);
      return c.json(index satisfies ResponseBody<"Indexes_update", 200>);
    },
    Indexes_delete: async (c, { path }) => {
      await catalog.deleteIndex(tenant(c.get("principal"), "catalog.write"), path.indexName);
      return c.body(null, 204);
    },
  };
}
