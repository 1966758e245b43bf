// Records by id (docs/api.md, Records); each write answers the write result with its new version.
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { RecordService } from "../services/records.ts";

export const written = (indexVersion: string) =>
  ({ resultCode: "SUCCESS", message: "OK", indexVersion }) as const satisfies ResponseBody<"Records_upsert", 200>;

export function recordHandlers(records: RecordService): Handlers {
  return {
    Records_get: async (c, { path, query }) => {
      const record = await records.get(
        c.get("principal"),
        path.indexName,
        path.recordId,
        query.version,
        query.minVersion,
      );
      return c.json(record satisfies ResponseBody<"Records_get", 200>);
    },
    Records_upsert: async (c, { path, body }) =>
      c.json(written(await records.put(c.get("principal"), path.indexName, path.recordId, body))),
    Records_delete: async (c, { path }) =>
      c.json(written(await records.delete(c.get("principal"), path.indexName, path.recordId))),
    Records_purge: async (c, { path }) =>
      c.json(written(await records.purge(c.get("principal"), path.indexName, path.recordId))),
  };
}
