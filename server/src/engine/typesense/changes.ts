// Minor versions: a record change writes documents for its upserts and marks the documents its
// parent saw for the affected ids as superseded by it (versions.ts explains the reading side).
// Several requests make one change, so the tree entry is written `pending` first and `ready`
// last; a pending entry is an attempt that was cut short.
import type { RecordChange, VersionId } from "../../ports/engine.ts";
import { dropCollection, importDocuments, search } from "./collections.ts";
import type { Context, VersionEntry } from "./context.ts";
import { toDocument, type TypesenseDocument } from "./documents.ts";
import { tolerating } from "./http.ts";
import { idKey, indexNames } from "./names.ts";
import { parseVersion } from "../../domain/version-id.ts";
import { deleteEntry, deleteMajorEntries, lineage, loadTree, putEntry, visibilityFilter } from "./versions.ts";

// Typesense answers at most 250 hits per page; a version sees at most one document per id.
const PAGE = 250;
const IDS_PER_QUERY = 100;

interface Mark {
  id: string;
  rid: string;
  superseded_by: string[];
}

const asMark = (doc: TypesenseDocument): Mark => ({
  id: String(doc.id),
  rid: String(doc.rid),
  superseded_by: Array.isArray(doc.superseded_by) ? doc.superseded_by.map(String) : [],
});

/** The documents `path`'s version sees for these record ids, by record id. */
async function visibleDocuments(
  ctx: Context,
  collection: string,
  path: readonly VersionEntry[],
  ids: readonly string[],
): Promise<Map<string, Mark>> {
  const found = new Map<string, Mark>();
  for (let start = 0; start < ids.length; start += IDS_PER_QUERY) {
    const keys = ids.slice(start, start + IDS_PER_QUERY).map(idKey);
    const response = await search(
      ctx,
      collection,
      {
        q: "*",
        query_by: "title_text",
        filter_by: `rid_key:=[${keys.join(",")}] && ${visibilityFilter(path)}`,
        per_page: PAGE,
        include_fields: "id,rid,superseded_by",
      },
      `find records changed in ${collection}`,
    );
    for (const hit of response.hits ?? []) {
      const mark = asMark(hit.document);
      found.set(mark.rid, mark);
    }
  }
  return found;
}

/** Removes every trace of minor `writer`: the documents it wrote and the marks it set. */
async function eraseMinor(ctx: Context, collection: string, writer: string): Promise<void> {
  await ctx.call(`erase documents of minor ${writer} in ${collection}`, () =>
    ctx.client
      .collections(collection)
      .documents()
      .delete({ filter_by: `writer:=${writer}` }),
  );
  // Each round clears the marks it finds, so the next round's first page is the next batch;
  // a document seen before (a replica not yet caught up) is not a reason to go on.
  const cleared = new Set<string>();
  for (;;) {
    const response = await search(
      ctx,
      collection,
      {
        q: "*",
        query_by: "title_text",
        filter_by: `superseded_by:=[${writer}]`,
        per_page: PAGE,
        include_fields: "id,rid,superseded_by",
      },
      `find marks of minor ${writer} in ${collection}`,
    );
    const marks = (response.hits ?? []).map((hit) => asMark(hit.document)).filter((mark) => !cleared.has(mark.id));
    if (marks.length === 0) return;
    await importDocuments(
      ctx,
      collection,
      marks.map((mark) => ({ id: mark.id, superseded_by: mark.superseded_by.filter((minor) => minor !== writer) })),
      "update",
    );
    for (const mark of marks) cleared.add(mark.id);
  }
}

export async function applyChange(ctx: Context, indexKey: string, change: RecordChange): Promise<void> {
  const target = parseVersion(change.version);
  if (target.minor === 0 || target.major !== parseVersion(change.parent).major) {
    throw new Error(
      `typesense: change ${change.version} cannot follow ${change.parent}: a change is a minor of its parent's major`,
    );
  }
  // Writes read the tree afresh: another process may have written since it was cached.
  const tree = await loadTree(ctx, indexKey);
  const parentPath = lineage(tree, indexKey, change.parent);
  const collection = indexNames(ctx.settings.prefix, indexKey).major(target.major);
  const writer = String(target.minor);
  // The service allocates version ids and sends one again only after a write whose outcome it
  // could not record: whatever that attempt left (pending or even ready) is erased first, so
  // the change applies exactly once; unless versions were already built on top of it.
  const retried = tree.has(change.version);
  if (retried && [...tree.values()].some((entry) => entry.parent === change.version)) {
    throw new Error(`typesense: version ${change.version} of ${indexKey} already exists and has versions on top of it`);
  }
  const pending: VersionEntry = {
    version: change.version,
    parent: change.parent,
    major: target.major,
    minor: target.minor,
    records: 0,
    state: "pending",
  };
  await putEntry(ctx, indexKey, pending);
  if (retried) await eraseMinor(ctx, collection, writer);

  // A later upsert of an id replaces an earlier one; an id both upserted and deleted is kept.
  const upserts = new Map(change.upserts.map((record) => [record.id, record]));
  const deletes = [...new Set(change.deletes)].filter((id) => !upserts.has(id));
  const seen = await visibleDocuments(ctx, collection, parentPath, [...upserts.keys(), ...deletes]);

  await importDocuments(
    ctx,
    collection,
    [...upserts.values()].map((record) => toDocument(record, writer)),
    "upsert",
  );
  await importDocuments(
    ctx,
    collection,
    [...seen.values()].map((mark) => ({ id: mark.id, superseded_by: [...mark.superseded_by, writer] })),
    "update",
  );

  const added = [...upserts.keys()].filter((id) => !seen.has(id)).length;
  const removed = deletes.filter((id) => seen.has(id)).length;
  const parentRecords = parentPath[parentPath.length - 1]!.records;
  await putEntry(ctx, indexKey, { ...pending, records: parentRecords + added - removed, state: "ready" });
}

export async function dropVersion(ctx: Context, indexKey: string, version: VersionId): Promise<void> {
  const { major, minor } = parseVersion(version);
  const collection = indexNames(ctx.settings.prefix, indexKey).major(major);
  if (minor === 0) {
    // Collection first: if the drop is cut short, the entry still lists the version and the
    // service's next retention pass drops it again.
    await dropCollection(ctx, collection);
    await deleteMajorEntries(ctx, indexKey, major);
    return;
  }
  const entry = (await loadTree(ctx, indexKey)).get(version);
  if (!entry) return;
  // Pending first: a drop cut short leaves an unlisted entry, and a later write of the same
  // version id erases what is left before applying itself.
  await putEntry(ctx, indexKey, { ...entry, state: "pending" });
  await eraseMinor(ctx, collection, String(minor));
  await tolerating(404, deleteEntry(ctx, indexKey, version));
}
