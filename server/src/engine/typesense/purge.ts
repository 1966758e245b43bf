// Erasure (docs/versions.md): a record's documents are deleted from every major's collection,
// and the versions that saw one of them are recorded with one record fewer. Which versions saw
// it is worked out from the documents themselves (their writer and superseded_by), with the
// same rule the visibility filter applies (versions.ts).
import type { PurgeResult } from "../../ports/engine.ts";
import { search } from "./collections.ts";
import type { Context, VersionEntry } from "./context.ts";
import { tolerating } from "./http.ts";
import { idKey, indexNames } from "./names.ts";
import { MAJOR_WRITER } from "./documents.ts";
import { lineage, loadTree, putEntry } from "./versions.ts";

// A record has one document per version that wrote it; a page of 250 covers any real tree.
const PAGE = 250;

interface Written {
  writer: string;
  supersededBy: Set<string>;
}

/** Whether the version whose lineage is `path` sees one of `docs` (versions.ts, visibilityFilter). */
function sees(path: readonly VersionEntry[], docs: readonly Written[]): boolean {
  const minors = new Set(path.filter((entry) => entry.minor > 0).map((entry) => String(entry.minor)));
  return docs.some(
    (doc) =>
      (doc.writer === MAJOR_WRITER || minors.has(doc.writer)) && ![...doc.supersededBy].some((m) => minors.has(m)),
  );
}

export async function purgeRecord(ctx: Context, indexKey: string, id: string): Promise<PurgeResult> {
  const tree = await loadTree(ctx, indexKey);
  const names = indexNames(ctx.settings.prefix, indexKey);
  const majors = [...new Set([...tree.values()].filter((e) => e.state === "ready").map((e) => e.major))];
  let found = false;
  const changed: PurgeResult["changed"] = [];
  for (const major of majors.sort((a, b) => a - b)) {
    const collection = names.major(major);
    const response = await tolerating(
      404,
      search(
        ctx,
        collection,
        {
          q: "*",
          query_by: "title_text",
          filter_by: `rid_key:=${idKey(id)}`,
          per_page: PAGE,
          include_fields: "id,writer,superseded_by",
        },
        `find documents of a record to purge in ${collection}`,
      ),
    );
    const docs: Written[] = (response?.hits ?? []).map(({ document }) => ({
      writer: String(document.writer),
      supersededBy: new Set(Array.isArray(document.superseded_by) ? document.superseded_by.map(String) : []),
    }));
    if (docs.length === 0) continue;
    found = true;
    const saw = [...tree.values()].filter(
      (entry) => entry.major === major && entry.state === "ready" && sees(lineage(tree, indexKey, entry.version), docs),
    );
    // Documents first: a purge cut short after this leaves counts one too high, never a record.
    await ctx.call(`purge a record from ${collection}`, () =>
      ctx.client
        .collections(collection)
        .documents()
        .delete({ filter_by: `rid_key:=${idKey(id)}` }),
    );
    for (const entry of saw) {
      await putEntry(ctx, indexKey, { ...entry, records: entry.records - 1 });
      changed.push({ version: entry.version, records: entry.records - 1 });
    }
  }
  return { found, changed };
}
