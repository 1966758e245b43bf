// Versions of an index (docs/versions.md): list, what one changed, activate, coalesce.
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { RecordService } from "../services/records.ts";
import type { VersionService } from "../services/versions.ts";
import { written } from "./records.ts";

export function versionHandlers(records: RecordService, versions: VersionService): Handlers {
  return {
    Versions_list: async (c, { path }) => {
      const ref = await records.index(c.get("principal"), "index.write", path.indexName);
      return c.json({ versions: await versions.list(ref) } satisfies ResponseBody<"Versions_list", 200>);
    },
    Versions_changes: async (c, { path, query }) => {
      const ref = await records.index(c.get("principal"), "index.write", path.indexName);
      const page = { after: query.after, limit: query.limit ?? 100 };
      return c.json((await versions.changes(ref, path.version, page)) satisfies ResponseBody<"Versions_changes", 200>);
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
