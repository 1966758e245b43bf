// The version tree of an index, persisted in its `<index>__versions` collection (one document
// per version) so that a restarted process, or another replica, can serve any version.
//
// Visibility: a document written by version W is visible in version V when W is on V's
// lineage (the path from V up to its major) and no version on that lineage superseded it.
// With minors named by number, that is one filter_by:
//   writer:=[0,1,3] && superseded_by:!=[1,3]      (V = "7.3", parent "7.1", parent "7")
// A branch (a second child of "7.1") never sees the marks "3" left, since "3" is not on its
// lineage. Typesense's `!=` on a string array is the complement of `=`, so documents with an
// empty `superseded_by` pass.
import { parseVersion, type VersionId } from "../../domain/version-id.ts";
import { UnknownVersionError, type Context, type VersionEntry, type VersionTree } from "./context.ts";
import { MAJOR_WRITER } from "./documents.ts";
import { indexNames } from "./names.ts";

/** The version and its ancestors, major first. */
export function lineage(tree: VersionTree, indexKey: string, version: VersionId): VersionEntry[] {
  const path: VersionEntry[] = [];
  for (let at: VersionId | null = version; at !== null; ) {
    const entry = tree.get(at);
    if (entry?.state !== "ready") throw new UnknownVersionError(indexKey, at);
    path.unshift(entry);
    at = entry.parent;
  }
  return path;
}

export function visibilityFilter(path: readonly VersionEntry[]): string {
  const minors = path.filter((entry) => entry.minor > 0).map((entry) => String(entry.minor));
  if (minors.length === 0) return `writer:=${MAJOR_WRITER}`;
  return `writer:=[${[MAJOR_WRITER, ...minors].join(",")}] && superseded_by:!=[${minors.join(",")}]`;
}

export const versionsSchema = (name: string) => ({
  name,
  // `major` is indexed so a major's entries can be deleted together; the rest is stored only.
  fields: [{ name: "major", type: "int32" as const }],
});

interface StoredEntry {
  id: string;
  major: number;
  parent?: string;
  records: number;
  state: VersionEntry["state"];
  layout?: number;
}

function fromStored(doc: StoredEntry): VersionEntry {
  const { minor } = parseVersion(doc.id);
  const entry: VersionEntry = {
    version: doc.id,
    parent: doc.parent ?? null,
    major: doc.major,
    minor,
    records: doc.records,
    state: doc.state,
  };
  if (doc.layout !== undefined) entry.layout = doc.layout;
  return entry;
}

function toStored(entry: VersionEntry): StoredEntry {
  const doc: StoredEntry = { id: entry.version, major: entry.major, records: entry.records, state: entry.state };
  if (entry.parent !== null) doc.parent = entry.parent;
  if (entry.layout !== undefined) doc.layout = entry.layout;
  return doc;
}

/** Reads the whole tree from Typesense and caches it. */
export async function loadTree(ctx: Context, indexKey: string): Promise<VersionTree> {
  const collection = indexNames(ctx.settings.prefix, indexKey).versions;
  const jsonl = await ctx.call(`read versions of ${indexKey}`, () =>
    ctx.client.collections(collection).documents().export(),
  );
  const tree: VersionTree = new Map();
  for (const line of jsonl.split("\n")) {
    if (line.trim() === "") continue;
    const entry = fromStored(JSON.parse(line) as StoredEntry);
    tree.set(entry.version, entry);
  }
  ctx.trees.set(indexKey, tree);
  return tree;
}

/**
 * The lineage of a readable version. Versions never change once ready, so the cached tree
 * serves reads; a version it does not know (written by another process) triggers one reload.
 */
export async function resolve(ctx: Context, indexKey: string, version: VersionId): Promise<VersionEntry[]> {
  const cached = ctx.trees.get(indexKey);
  if (cached?.get(version)?.state === "ready") return lineage(cached, indexKey, version);
  return lineage(await loadTree(ctx, indexKey), indexKey, version);
}

export async function putEntry(ctx: Context, indexKey: string, entry: VersionEntry): Promise<void> {
  const collection = indexNames(ctx.settings.prefix, indexKey).versions;
  await ctx.call(`record version ${entry.version} of ${indexKey}`, () =>
    ctx.client.collections(collection).documents().upsert(toStored(entry)),
  );
  ctx.trees.get(indexKey)?.set(entry.version, entry);
}

/** Forgets a major and every minor of it. */
export async function deleteMajorEntries(ctx: Context, indexKey: string, major: number): Promise<void> {
  const collection = indexNames(ctx.settings.prefix, indexKey).versions;
  await ctx.call(`forget version ${major} of ${indexKey}`, () =>
    ctx.client
      .collections(collection)
      .documents()
      .delete({ filter_by: `major:=${major}` }),
  );
  const tree = ctx.trees.get(indexKey);
  for (const [version, entry] of tree ?? []) if (entry.major === major) tree?.delete(version);
}

export async function deleteEntry(ctx: Context, indexKey: string, version: VersionId): Promise<void> {
  const collection = indexNames(ctx.settings.prefix, indexKey).versions;
  await ctx.call(`forget version ${version} of ${indexKey}`, () =>
    ctx.client.collections(collection).documents(version).delete(),
  );
  ctx.trees.get(indexKey)?.delete(version);
}
