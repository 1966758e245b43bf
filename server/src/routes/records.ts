import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { RecordService } from "../services/records.ts";
import type { VersionService } from "../services/versions.ts";

const written = (indexVersion: string) =>
  ({ resultCode: "SUCCESS", message: "OK", indexVersion }) as const satisfies ResponseBody<"Records_upsert", 200>;

export function recordHandlers(records: RecordService, versions: VersionService): Handlers {
  return {
    Records_get: async (c, { path, query }) => {
      const record = await records.get(c.get("principal"), path.indexName, path.recordId, query.version);
      return c.json(record satisfies ResponseBody<"Records_get", 200>);
    },
    Records_upsert: async (c, { path, body }) =>
      c.json(written(await records.put(c.get("principal"), path.indexName, path.recordId, body))),
    Records_delete: async (c, { path }) =>
      c.json(written(await records.delete(c.get("principal"), path.indexName, path.recordId))),

    Versions_list: async (c, { path }) => {
      const ref = await records.index(c.get("principal"), "index.write", path.indexName);
      return c.json({ versions: await versions.list(ref) } satisfies ResponseBody<"Versions_list", 200>);
    },
    Versions_activate: async (c, { path }) => {
      const ref = await records.index(c.get("principal"), "index.write", path.indexName);
      return c.json(written(await versions.activate(ref, path.version)));
    },
    Versions_coalesce: async (c, { path }) => {
      const ref = await records.index(c.get("principal"), "index.write", path.indexName);
      return c.json(written(await versions.coalesce(ref)));
    },
  };
}

