// The embedded search engine: in-process, persisted under dataDir.
//
//   dataDir/catalog.db                       SQLite: indexes, majors, the change log
//   dataDir/segments/<index>/<major>-<tag>/  one immutable segment per major
//
// A major version is a segment (or, for a large index's checkpoint, an earlier major's segment
// with some documents hidden plus a segment of the records changed since: versions/layers.ts); a
// minor version is a row in the change log, searched as its major's documents minus those its
// chain of changes replaced or deleted, plus the records it upserted (an overlay). Versions
// therefore share storage; checkpoint() writes a new segment.
//
// This file is the adapter (SearchEngine). The folders hold the parts, laid out like a search
// engine's (tantivy's directory, termdict, postings, store, fastfield, indexer, query, collector):
//   segment/   the Segment reader, its meta, the table of sections (sections.ts) and the file
//              container they are stored in (segment-file.ts)
//   termdict/  sorted string tables (terms, prefixes, ids) and the term/prefix dictionary writer
//   postings/  posting runs and expressions over them (sources.ts); the writers of the title and
//              prefix (split), data and forward-index postings, filled window by window
//   store/     records.bin: the writer, the reader and its cache of hot records
//   columns/   per-document columns: ids and the document order, weight, geo, filter columns,
//              value columns (strings, arrays, presence, facet counts), what a record's data holds
//   build/     SegmentBuilder, the orchestrator of one writer per part; the slot log and its codec;
//              the off-thread builder and its worker
//   search/    planning, matching, reading orders (weight, id, nearest first), top-k, hit order,
//              whole match sets (totals, facets, sort) and the search of a version
//   versions/  the version tree of an index, layered majors and the overlays of minor versions
//   catalog/   the SQLite catalog
//   util/      typed-array helpers and the pacer that gives the event loop back during builds
import fs from "node:fs";
import path from "node:path";
import { randomUUID } from "node:crypto";
import type {
  AdoptedCheckpoint,
  BulkWriter,
  NetChange,
  EngineVersionInfo,
  HeldFiles,
  PurgeResult,
  RecordChange,
  SearchEngine,
  SearchPage,
  SearchRecord,
  SearchRequest,
  VersionDiffPage,
  VersionId,
} from "../../ports/engine.ts";
import { compareVersions, isMajorVersion, parseVersion } from "../../domain/version-id.ts";
import type { ChangeRow, MajorRow } from "./catalog/catalog.ts";
import { Catalog } from "./catalog/catalog.ts";
import { overlayRecord, type Overlay } from "./versions/overlay.ts";
import { BASE_PREFIX, firstSegmentIn, Layers, publishedNames, type Layer } from "./versions/layers.ts";
import { Pacer } from "./util/pacer.ts";
import { Segment } from "./segment/segment.ts";
import { OffThreadBuilder } from "./build/off-thread-builder.ts";
import { startBuild } from "./build/segment-build.ts";
import { DEFAULT_TUNING, type HiddenDocs, type SearchTuning } from "./search/segment-search.ts";
import { searchVersion } from "./search/version-search.ts";
import { ChangeVersion, IndexVersions, MajorVersion } from "./versions/versions.ts";
import { computeDiff, type VersionDiff } from "./versions/diff.ts";

export interface EmbeddedEngineOptions {
  dataDir: string;
  /** Longest prefix (in characters) with its own posting list; longer ones merge term lists. Default 4. */
  maxPrefix?: number;
  /** Thresholds of the search strategies (search/segment-search.ts); tests lower them to reach every path. */
  tuning?: Partial<SearchTuning>;
  /** Map segment indexes from their files (default) rather than reading them into the heap. */
  mapSegments?: boolean;
  /**
   * Whether a record change is on disk before it counts (default). Off with replication, whose
   * change log holds every change durably: changes reach the disk at `sync()` (D-292).
   */
  syncEachChange?: boolean;
  /** When checkpoints are layered; tests lower the base's size to reach every path. */
  layering?: Partial<LayeringOptions>;
}

/** Where a segment of a major stores a record. */
interface Stored {
  layer: Layer;
  doc: number;
}

/** Records between asking the pacer whether searches should get the event loop. */
const CHECK_EVERY = 0x3ff;

/** Computed diffs kept (versions/diff.ts): a dashboard pages through one, then looks at another. */
const DIFF_CACHE = 8;

interface View {
  major: Layers;
  overlay: Overlay;
}

/** When a checkpoint is layered (versions/layers.ts, D-351). */
export interface LayeringOptions {
  /** A base has at least this many documents (default 50,000): smaller indexes are rebuilt whole. */
  minBase: number;
  /**
   * The records changed since the base (the delta's and the base's hidden documents) stay below
   * this share of the base (default 0.1); past it the checkpoint is one segment again.
   */
  maxShare: number;
}

export const DEFAULT_LAYERING: LayeringOptions = { minBase: 50_000, maxShare: 0.1 };

export function createEmbeddedEngine(options: EmbeddedEngineOptions): SearchEngine {
  return new EmbeddedEngine(options);
}

class EmbeddedEngine implements SearchEngine {
  readonly name = "embedded";
  private readonly dataDir: string;
  private readonly segmentsDir: string;
  /** Links to segment files a snapshot holds (holdSegmentFiles); emptied at start. */
  private readonly heldDir: string;
  private readonly maxPrefix: number;
  private readonly tuning: SearchTuning;
  private readonly map: boolean;
  private readonly syncEachChange: boolean;
  private readonly layering: LayeringOptions;
  private catalog: Catalog | null = null;
  private readonly indexes = new Map<string, IndexVersions>();
  /** Computed diffs by `<index>\n<base>\n<version>`, oldest first; an index's are forgotten when a purge or a drop changes it. */
  private readonly diffs = new Map<string, Promise<VersionDiff>>();
  /** Per index, how many times its diffs were forgotten: a comparison that saw it change is made again. */
  private readonly diffEpochs = new Map<string, number>();
  /** The checkpoint builds asked for, one after the other. */
  private checkpoints: Promise<unknown> = Promise.resolve();

  constructor(options: EmbeddedEngineOptions) {
    this.dataDir = options.dataDir;
    this.segmentsDir = path.join(options.dataDir, "segments");
    this.heldDir = path.join(options.dataDir, "held");
    this.maxPrefix = options.maxPrefix ?? 4;
    this.tuning = { ...DEFAULT_TUNING, ...options.tuning };
    this.map = options.mapSegments ?? true;
    this.syncEachChange = options.syncEachChange ?? true;
    this.layering = { ...DEFAULT_LAYERING, ...options.layering };
  }

  async open(): Promise<void> {
    await fs.promises.mkdir(this.segmentsDir, { recursive: true });
    // Held by snapshots of a process that stopped before publishing them.
    await fs.promises.rm(this.heldDir, { recursive: true, force: true });
    const catalog = new Catalog(path.join(this.dataDir, "catalog.db"), { syncEachCommit: this.syncEachChange });
    this.catalog = catalog;
    const keep = new Set<string>();
    for (const key of catalog.indexes()) {
      const versions = new IndexVersions();
      for (const row of catalog.majors(key)) {
        const dir = path.join(this.indexDir(key), row.dir);
        versions.majors.set(row.major, new MajorVersion(row, dir, this.map));
        keep.add(dir);
      }
      for (const row of catalog.changes(key)) {
        versions.changes.set(row.version, new ChangeVersion(row, parseVersion(row.version).major));
      }
      this.indexes.set(key, versions);
      keep.add(this.indexDir(key));
    }
    await this.removeDebris(keep);
  }

  /** Deletes segment directories no catalog row points at (interrupted builds and drops). */
  private async removeDebris(keep: Set<string>): Promise<void> {
    for (const indexEntry of await fs.promises.readdir(this.segmentsDir)) {
      const indexDir = path.join(this.segmentsDir, indexEntry);
      if (!keep.has(indexDir)) {
        await fs.promises.rm(indexDir, { recursive: true, force: true });
        continue;
      }
      for (const entry of await fs.promises.readdir(indexDir)) {
        const dir = path.join(indexDir, entry);
        if (!keep.has(dir)) await fs.promises.rm(dir, { recursive: true, force: true });
      }
    }
  }

  async close(): Promise<void> {
    for (const versions of this.indexes.values()) for (const major of versions.majors.values()) major.close();
    this.indexes.clear();
    const catalog = this.catalog;
    this.catalog = null;
    await catalog?.close();
  }

  async ping(): Promise<boolean> {
    return this.catalog !== null;
  }

  async sync(): Promise<void> {
    await this.catalog?.sync();
  }

  async createIndex(indexKey: string): Promise<void> {
    if (this.indexes.has(indexKey)) return;
    await fs.promises.mkdir(this.indexDir(indexKey), { recursive: true });
    this.db().addIndex(indexKey);
    this.indexes.set(indexKey, new IndexVersions());
  }

  async dropIndex(indexKey: string): Promise<void> {
    this.forgetDiffs(indexKey);
    const versions = this.indexes.get(indexKey);
    this.db().removeIndex(indexKey);
    this.indexes.delete(indexKey);
    if (versions) for (const major of versions.majors.values()) major.close();
    // A build still writing into the directory (a checkpoint of this index) can add a file between
    // rm reading a directory and removing it (ENOTEMPTY): retried, as rm does for exactly that.
    await fs.promises.rm(this.indexDir(indexKey), { recursive: true, force: true, maxRetries: 5 });
  }

  async bulkWriter(indexKey: string, major: number): Promise<BulkWriter> {
    const versions = this.index(indexKey);
    if (versions.majors.has(major) || versions.building.has(major)) {
      throw new Error(`index ${indexKey}: major version ${major} already exists`);
    }
    versions.building.add(major);
    const name = `${major}-${randomUUID().slice(0, 8)}`;
    // Dropped once finished: the builder holds every record's index data until then.
    let builder: OffThreadBuilder | null = await OffThreadBuilder.create(
      path.join(this.indexDir(indexKey), name),
      this.maxPrefix,
      this.map,
    );
    let state: "open" | "committed" | "aborted" = "open";
    const ensureOpen = () => {
      if (state !== "open") throw new Error(`bulk writer for ${indexKey}/${major} is already ${state}`);
    };
    return {
      add: async (records: SearchRecord[]) => {
        ensureOpen();
        await builder!.addAll(records);
      },
      commit: async () => {
        ensureOpen();
        state = "committed";
        try {
          const segment = await builder!.finish();
          const layers = Layers.single(segment);
          this.commitMajor(indexKey, versions, { major, parent: null, records: segment.docCount, dir: name }, layers);
          return { records: segment.docCount };
        } catch (error) {
          await builder!.abort();
          throw error;
        } finally {
          builder = null;
          versions.building.delete(major);
        }
      },
      abort: async () => {
        if (state !== "open") return;
        state = "aborted";
        await builder!.abort();
        builder = null;
        versions.building.delete(major);
      },
    };
  }

  private commitMajor(
    indexKey: string,
    versions: IndexVersions,
    row: { major: number; parent: string | null; records: number; dir: string },
    layers: Layers,
  ): void {
    if (this.indexes.get(indexKey) !== versions) {
      layers.close();
      throw new Error(`index ${indexKey} was dropped during the build`);
    }
    this.db().addMajor(indexKey, row);
    versions.majors.set(row.major, new MajorVersion(row, layers.base.dir, this.map, layers));
  }

  async applyChange(indexKey: string, change: RecordChange): Promise<void> {
    await this.applyChanges(indexKey, [change]);
  }

  /**
   * Changes each built on the one before (a replicated batch): prepared in turn in memory, then
   * appended in one turn, so the change log's thread commits them with one fsync instead of one
   * each (each node applies every batch; the fsyncs in a row were most of its apply time). With
   * replication there is no fsync here at all (`syncEachChange`, D-292).
   */
  async applyChanges(indexKey: string, changes: RecordChange[]): Promise<void> {
    const versions = this.index(indexKey);
    // `next`: the version's overlay, each the child of the one before in the batch.
    const prepared: { node: ChangeVersion; next: Overlay; docs: Layers; major: number }[] = [];
    for (const change of changes) {
      const target = parseVersion(change.version);
      const parent = parseVersion(change.parent);
      if (target.minor === 0 || target.major !== parent.major) {
        throw new Error(`change ${change.version} must be a minor version of its parent's major ${parent.major}`);
      }
      if (versions.has(change.version) || prepared.some((p) => p.node.row.version === change.version)) {
        throw new Error(`index ${indexKey}: version ${change.version} already exists`);
      }
      const previous = prepared.at(-1);
      const parentView =
        previous !== undefined && previous.node.row.version === change.parent
          ? { major: previous.docs, overlay: previous.next }
          : await this.view(indexKey, change.parent);
      const docs = parentView.major;
      // The engine keeps its own copy (as it will read it back after a restart), not the caller's objects.
      const own: RecordChange = JSON.parse(JSON.stringify(change)) as RecordChange;
      const upserted = own.upserts.map(overlayRecord);
      const next = parentView.overlay.child(own, upserted, docs);
      const node = ChangeVersion.fromChange(own, upserted, next.count(docs), target.major);
      prepared.push({ node, next, docs, major: target.major });
    }
    // The index may be dropped while this awaits: checked before the rows are written (without a
    // flush per change nothing is awaited after this, D-292), and again after the wait.
    const stillThere = () => {
      if (this.indexes.get(indexKey) !== versions) throw new Error(`index ${indexKey} was dropped during the change`);
    };
    stillThere();
    // The durable point: once a row is committed its change survives a crash.
    const committed = await this.db().addChanges(
      indexKey,
      prepared.map((p) => ({ major: p.major, row: p.node.row })),
    );
    const failed = committed.findIndex((c) => c.status === "rejected");
    if (failed >= 0) {
      // Rows after the failed one build on a version that does not exist: withdrawn.
      const orphans = prepared.slice(failed + 1).filter((_, i) => committed[failed + 1 + i]!.status === "fulfilled");
      this.db().removeChanges(
        indexKey,
        orphans.map((p) => p.node.row.version),
      );
      prepared.length = failed;
    }
    stillThere();
    for (const { node, next } of prepared) {
      versions.changes.set(node.row.version, node);
      versions.remember(node.row.version, next);
    }
    if (failed >= 0) throw (committed[failed] as PromiseRejectedResult).reason;
  }

  /**
   * One checkpoint is built at a time, on a build thread whatever its size (D-281): under an even
   * load every index crosses SIFT_COALESCE_AFTER at once, and six builds side by side on the
   * event loop held every write of their moment 50 to 90 ms (bench/RESULTS.md).
   */
  checkpoint(indexKey: string, from: VersionId, major: number): Promise<{ records: number }> {
    const run = this.checkpoints.then(() => this.buildMajor(indexKey, from, major));
    // biome-ignore lint/plugin: the queue only orders builds; `run` hands the failure to its caller.
    this.checkpoints = run.catch(() => {});
    return run;
  }

  private async buildMajor(indexKey: string, from: VersionId, major: number): Promise<{ records: number }> {
    const versions = this.index(indexKey);
    if (versions.majors.has(major) || versions.building.has(major)) {
      throw new Error(`index ${indexKey}: major version ${major} already exists`);
    }
    const { major: source, overlay } = await this.view(indexKey, from);
    versions.building.add(major);
    const name = `${major}-${randomUUID().slice(0, 8)}`;
    const dir = path.join(this.indexDir(indexKey), name);
    const hidden = source.hidden(overlay.shadowed);
    const layered = this.layeredCheckpoint(source, hidden, overlay.upsertedCount);
    const builder = await OffThreadBuilder.create(dir, this.maxPrefix, this.map);
    let base: Segment | null = null;
    try {
      // The build thread reads the old segments itself; only the changed records cross over. A
      // layered checkpoint writes the records changed since its base (the old delta's and the
      // version's), and links the base's files.
      for (const [i, layer] of source.layers.entries()) {
        if (layered && i === 0) continue;
        await builder.copyFrom(layer.segment.dir, layer.segment.docCount, hidden[i]!, layer.segment.prefix);
      }
      for (const item of overlay.records()) await builder.add(item.record);
      const built = await builder.finish();
      let layers: Layers;
      if (layered) {
        const baseHidden = Uint32Array.from(hidden[0]!).sort();
        await Layers.addBase(dir, source.base, baseHidden);
        base = await Segment.load(dir, this.map, BASE_PREFIX);
        layers = Layers.layered(base, baseHidden, built);
      } else layers = Layers.single(built);
      this.commitMajor(indexKey, versions, { major, parent: from, records: layers.docCount, dir: name }, layers);
      return { records: layers.docCount };
    } catch (error) {
      base?.close();
      await builder.abort();
      throw error;
    } finally {
      versions.building.delete(major);
    }
  }

  /**
   * Whether a checkpoint keeps its source's base (versions/layers.ts): when the base is large and
   * the records changed since it (the new delta's, and the base's documents it hides) are few
   * beside it. Otherwise it is one segment again, which also drops the stale records a base holds.
   */
  private layeredCheckpoint(source: Layers, hidden: HiddenDocs[], upserted: number): boolean {
    const base = source.base;
    if (base.docCount < this.layering.minBase) return false;
    let delta = upserted;
    for (let i = 1; i < source.layers.length; i++) delta += source.layers[i]!.segment.docCount - hidden[i]!.size;
    return delta + hidden[0]!.size <= this.layering.maxShare * base.docCount;
  }

  /** Registered here at once: the service makes it live (adoptCheckpoint) under its lock. */
  buildCheckpoint(indexKey: string, from: VersionId, major: number): Promise<{ records: number }> {
    return this.checkpoint(indexKey, from, major);
  }

  async changesSince(indexKey: string, from: VersionId, to: VersionId): Promise<NetChange | null> {
    const versions = this.index(indexKey);
    const chain: ChangeVersion[] = [];
    for (let v = to; v !== from; ) {
      const node = isMajorVersion(v) ? undefined : versions.changes.get(v);
      if (node === undefined) return null;
      chain.push(node);
      v = node.row.parent;
    }
    const upserts = new Map<string, SearchRecord>();
    const deletes = new Set<string>();
    for (let i = chain.length - 1; i >= 0; i--) {
      const { change } = chain[i]!.content;
      for (const r of change.upserts) {
        upserts.set(r.id, r);
        deletes.delete(r.id);
      }
      for (const id of change.deletes) {
        upserts.delete(id);
        deletes.add(id);
      }
    }
    // A purge's own change holds no ids (the erasure reached the stored versions directly): the
    // service erases ids purged during a build from the checkpoint afterwards.
    return { upserts: [...upserts.values()], deletes: [...deletes] };
  }

  async adoptCheckpoint(indexKey: string, checkpoint: AdoptedCheckpoint): Promise<void> {
    if (checkpoint.carry) await this.applyChange(indexKey, checkpoint.carry);
    if (checkpoint.live) await this.activate(indexKey, checkpoint.carry?.version ?? String(checkpoint.major));
  }

  async has(indexKey: string, version: VersionId): Promise<boolean> {
    return this.indexes.get(indexKey)?.has(version) ?? false;
  }

  async segmentFiles(
    indexKey: string,
    major: number,
    options: { withoutBase?: boolean } = {},
  ): Promise<{ name: string; path: string }[]> {
    const node = this.index(indexKey).majors.get(major);
    if (node === undefined) throw new Error(`index ${indexKey}: unknown major version ${major}`);
    const all = (await fs.promises.readdir(node.dir)).sort();
    const names = options.withoutBase ? publishedNames(all) : all;
    return names.map((name) => ({ name, path: path.join(node.dir, name) }));
  }

  async holdSegmentFiles(indexKey: string, major: number): Promise<HeldFiles> {
    const files = await this.segmentFiles(indexKey, major);
    // Hard links: a drop or a purge that removes the major's folder meanwhile leaves them whole.
    // A purge also zeroes the record's bytes in records.bin in place, which the link shares: a
    // snapshot taken before the purge and published after it holds a blank record, never the
    // erased one, and the purge's own snapshot replaces it.
    const dir = path.join(this.heldDir, randomUUID());
    const release = () => fs.promises.rm(dir, { recursive: true, force: true });
    try {
      await fs.promises.mkdir(dir, { recursive: true });
      const held: HeldFiles["files"] = [];
      for (const f of files) {
        const link = path.join(dir, f.name);
        await fs.promises.link(f.path, link);
        held.push({ name: f.name, path: link });
      }
      const names = files.map((f) => f.name);
      return { files: held, publishedWithoutBase: publishedNames(names).length < names.length, release };
    } catch (error) {
      await release();
      throw error;
    }
  }

  async importMajor(
    indexKey: string,
    major: { major: number; parent: VersionId | null; records: number },
    fill: (dir: string) => Promise<void>,
  ): Promise<void> {
    const versions = this.index(indexKey);
    if (versions.majors.has(major.major) || versions.building.has(major.major)) {
      throw new Error(`index ${indexKey}: major version ${major.major} already exists`);
    }
    versions.building.add(major.major);
    const name = `${major.major}-${randomUUID().slice(0, 8)}`;
    const dir = path.join(this.indexDir(indexKey), name);
    try {
      await fill(dir);
      // A layered major published without its base: linked from this node's copy of it.
      if (!Layers.hasBase(dir)) {
        await Layers.linkBase(
          dir,
          [...versions.majors.values()].map((m) => firstSegmentIn(m.dir)),
        );
      }
      // Opened before the catalog names it: files that do not open are never recorded.
      const layers = await Layers.open(dir, this.map);
      this.commitMajor(indexKey, versions, { ...major, dir: name }, layers);
    } catch (error) {
      await fs.promises.rm(dir, { recursive: true, force: true });
      throw error;
    } finally {
      versions.building.delete(major.major);
    }
  }

  async changes(indexKey: string): Promise<RecordChange[]> {
    const rows = [...this.index(indexKey).changes.values()].map((c) => c.row);
    // Minors are drawn in increasing order, so a parent always sorts before its children.
    rows.sort((a, b) => compareVersions(a.version, b.version));
    return rows.map((row) => {
      const body = JSON.parse(row.body) as Pick<RecordChange, "upserts" | "deletes">;
      return { version: row.version, parent: row.parent, upserts: body.upserts, deletes: body.deletes };
    });
  }

  async activate(indexKey: string, version: VersionId): Promise<void> {
    // Loading the segment and the overlay now keeps the first search on the live version fast.
    await this.view(indexKey, version);
  }

  /**
   * Retention's drops at once: the minors (and what descends from them) leave the catalog in one
   * transaction. One each was one fsync each on the event loop: 200 of them after a checkpoint
   * held every request of the process for 650 ms (bench/RESULTS.md, Checkpoints).
   */
  async dropVersions(indexKey: string, list: VersionId[]): Promise<void> {
    const versions = this.index(indexKey);
    this.forgetDiffs(indexKey);
    const minors = list.filter((v) => parseVersion(v).minor !== 0 && versions.changes.has(v));
    if (minors.length) {
      const dropped = versions.descendantsOf(minors);
      this.db().removeChanges(indexKey, dropped);
      versions.forget(dropped);
    }
    for (const v of list) if (parseVersion(v).minor === 0) await this.dropVersion(indexKey, v);
  }

  async dropVersion(indexKey: string, version: VersionId): Promise<void> {
    const versions = this.index(indexKey);
    this.forgetDiffs(indexKey);
    const { major, minor } = parseVersion(version);
    if (minor !== 0) {
      if (!versions.changes.has(version)) return;
      const dropped = versions.descendants(version);
      this.db().removeChanges(indexKey, dropped);
      versions.forget(dropped);
      return;
    }
    const node = versions.majors.get(major);
    if (node === undefined) return;
    this.db().removeMajor(indexKey, major);
    versions.majors.delete(major);
    versions.forget([...versions.changes.values()].filter((c) => c.major === major).map((c) => c.row.version));
    node.close();
    await fs.promises.rm(node.dir, { recursive: true, force: true });
  }

  /**
   * Erasure (docs/versions.md): every major whose segment holds the record is rebuilt without it
   * (segments are immutable, and the id and the record's terms are in the index as well as in
   * records.bin), every change that upserted it is rewritten without it, and the counts of the
   * versions that held it drop by one, all in one catalog transaction. The old segment folders
   * are then removed, after the record's bytes in records.bin were overwritten with zeros.
   * Costs a rebuild of each affected major, like a checkpoint: erasure is rare.
   */
  async purge(indexKey: string, id: string): Promise<PurgeResult> {
    const versions = this.index(indexKey);
    // Per major: where its segments store the record (a layered major's base may hold an older
    // copy it hides), and whether the major holds it.
    const docs = new Map<number, { node: MajorVersion; layers: Layers; stored: Stored[]; holds: boolean }>();
    for (const [major, node] of versions.majors) {
      const layers = await node.load();
      const stored: Stored[] = [];
      for (const layer of layers.layers) {
        const doc = layer.segment.findDoc(id);
        if (doc >= 0) stored.push({ layer, doc });
      }
      docs.set(major, { node, layers, stored, holds: layers.findDoc(id) >= 0 });
    }
    // Whether each version holds the record: a change decides for itself when it touches the id
    // (a delete wins over an upsert, as in Overlay.child), otherwise its parent does.
    const holds = new Map<VersionId, boolean>();
    const held = (version: VersionId): boolean => {
      const path: VersionId[] = [];
      let answer: boolean | undefined;
      for (let v = version; answer === undefined; ) {
        const known = holds.get(v);
        if (known !== undefined) answer = known;
        else if (isMajorVersion(v)) answer = docs.get(parseVersion(v).major)?.holds ?? false;
        else {
          const { change } = versions.changes.get(v)!.content;
          if (change.deletes.includes(id)) answer = false;
          else if (change.upserts.some((r) => r.id === id)) answer = true;
          else {
            path.push(v);
            v = change.parent;
            continue;
          }
        }
        path.push(v);
      }
      for (const v of path) holds.set(v, answer);
      return answer;
    };

    const changed: PurgeResult["changed"] = [];
    const majors: { row: MajorRow; old: MajorVersion; stored: Stored[]; built: Segment }[] = [];
    const changes: ChangeRow[] = [];
    try {
      for (const [major, { node, layers, stored }] of docs) {
        if (stored.length === 0) continue;
        const name = `${major}-${randomUUID().slice(0, 8)}`;
        const built = await this.rebuildWithout(path.join(this.indexDir(indexKey), name), layers, stored);
        majors.push({ row: { ...node.row, dir: name, records: built.docCount }, old: node, stored, built });
        changed.push({ version: String(major), records: built.docCount });
      }
      for (const node of versions.changes.values()) {
        if (!held(node.row.version) && !node.content.change.upserts.some((r) => r.id === id)) continue;
        const { change } = node.content;
        const body = JSON.stringify({ upserts: change.upserts.filter((r) => r.id !== id), deletes: change.deletes });
        const records = held(node.row.version) ? node.row.records - 1 : node.row.records;
        changes.push({ ...node.row, body, records });
        if (records !== node.row.records) changed.push({ version: node.row.version, records });
      }
    } catch (error) {
      for (const m of majors) {
        m.built.close();
        await fs.promises.rm(m.built.dir, { recursive: true, force: true });
      }
      throw error;
    }
    if (majors.length === 0 && changes.length === 0) return { found: false, changed: [] };

    // The durable point: the catalog now names the rebuilt segments and the rewritten changes.
    this.db().purge(
      indexKey,
      majors.map((m) => m.row),
      changes,
    );
    for (const m of majors) {
      versions.majors.set(m.row.major, new MajorVersion(m.row, m.built.dir, this.map, Layers.single(m.built)));
    }
    for (const row of changes) {
      versions.changes.set(row.version, new ChangeVersion(row, parseVersion(row.version).major));
    }
    versions.clearOverlays();
    this.forgetDiffs(indexKey);
    for (const m of majors) {
      // A base's files are links shared with the majors it came from: those held the record too,
      // so they were rebuilt as well, and these bytes are theirs.
      for (const { layer, doc } of m.stored) await layer.segment.records.erase(doc);
      m.old.close();
      await fs.promises.rm(m.old.dir, { recursive: true, force: true });
    }
    changed.sort((a, b) => compareVersions(a.version, b.version));
    return { found: true, changed };
  }

  /** Writes a major's documents again into `dir` as one segment, without the `stored` ones (purge). */
  private async rebuildWithout(dir: string, layers: Layers, stored: Stored[]): Promise<Segment> {
    const builder = await startBuild(dir, this.maxPrefix, this.map, layers.docCount);
    const pacer = new Pacer();
    try {
      for (const layer of layers.layers) {
        const skip = stored.find((s) => s.layer === layer)?.doc ?? -1;
        const { segment, hidden } = layer;
        for (let doc = 0; doc < segment.docCount; doc++) {
          if ((doc & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
          if (doc !== skip && !hidden?.has(doc)) await builder.add(segment.records.read(doc));
        }
      }
      return await builder.finish();
    } catch (error) {
      await builder.abort();
      throw error;
    }
  }

  async versions(indexKey: string): Promise<EngineVersionInfo[]> {
    const versions = this.index(indexKey);
    const list: EngineVersionInfo[] = [];
    for (const m of versions.majors.values())
      list.push({ version: String(m.row.major), parent: m.row.parent, records: m.row.records });
    for (const c of versions.changes.values())
      list.push({ version: c.row.version, parent: c.row.parent, records: c.row.records });
    return list.sort((a, b) => compareVersions(a.version, b.version));
  }

  async search(indexKey: string, version: VersionId, request: SearchRequest): Promise<SearchPage> {
    const { major, overlay } = await this.view(indexKey, version);
    return searchVersion(major, overlay, request, this.tuning);
  }

  async diff(
    indexKey: string,
    base: VersionId | null,
    version: VersionId,
    page: { after?: string | undefined; limit: number },
  ): Promise<VersionDiffPage> {
    const key = `${indexKey}\n${base ?? ""}\n${version}`;
    let computed = this.diffs.get(key);
    if (computed === undefined) {
      computed = this.computeDiff(indexKey, base, version);
      this.diffs.set(key, computed);
      if (this.diffs.size > DIFF_CACHE) this.diffs.delete(this.diffs.keys().next().value!);
      // A failed computation is not kept: the next request tries again.
      // The caller gets the error below; the cache only lets go of the failed computation.
      computed.catch(() => {
        if (this.diffs.get(key) === computed) this.diffs.delete(key);
      });
    } else {
      // Re-inserted: the cache evicts in insertion order, so this keeps the diff being paged.
      this.diffs.delete(key);
      this.diffs.set(key, computed);
    }
    return (await computed).page(page.after, page.limit);
  }

  /**
   * Compares two versions. Not under the index's write lock (a large comparison would hold up
   * writes): a purge or a drop that lands while it reads replaces segments under it, so a
   * comparison that saw one is made again, at most twice.
   */
  private async computeDiff(indexKey: string, base: VersionId | null, version: VersionId): Promise<VersionDiff> {
    for (let attempt = 1; ; attempt++) {
      const epoch = this.diffEpochs.get(indexKey) ?? 0;
      const unchanged = () => (this.diffEpochs.get(indexKey) ?? 0) === epoch || attempt === 3;
      try {
        const diff = await this.compare(indexKey, base, version);
        if (unchanged()) return diff;
      } catch (error) {
        if (unchanged()) throw error;
      }
    }
  }

  private async compare(indexKey: string, base: VersionId | null, version: VersionId): Promise<VersionDiff> {
    const target = await this.view(indexKey, version);
    const from = base === null ? { major: null, overlay: null } : await this.view(indexKey, base);
    // A record change against its parent: the ids it wrote are listed even when their content stayed.
    const node = this.index(indexKey).changes.get(version);
    const own =
      node !== undefined && node.row.parent === base
        ? new Set([...node.content.change.upserts.map((r) => r.id), ...node.content.change.deletes])
        : undefined;
    return computeDiff(from, target, own);
  }

  /** Forgets an index's computed diffs: a purge rewrote, or a drop removed, what they refer to. */
  private forgetDiffs(indexKey: string): void {
    this.diffEpochs.set(indexKey, (this.diffEpochs.get(indexKey) ?? 0) + 1);
    for (const key of [...this.diffs.keys()]) if (key.startsWith(`${indexKey}\n`)) this.diffs.delete(key);
  }

  async get(indexKey: string, version: VersionId, id: string): Promise<SearchRecord | null> {
    const { major, overlay } = await this.view(indexKey, version);
    const upserted = overlay.upserted(id);
    if (upserted !== undefined) return structuredClone(upserted.record);
    if (overlay.deleted(id)) return null;
    const doc = major.findDoc(id);
    if (doc < 0) return null;
    const found = major.locate(doc);
    return found.layer.segment.records.readHot(found.doc);
  }

  async count(indexKey: string, version: VersionId): Promise<number> {
    // A version's row has its count (kept by purge too). Counting through the overlay rebuilt it
    // for each version of a batch a replica applied: a copy of every record changed since the
    // major, per version (bench/RESULTS.md, Replication).
    const change = this.index(indexKey).changes.get(version);
    if (change !== undefined) return change.row.records;
    const { major, overlay } = await this.view(indexKey, version);
    return overlay.count(major);
  }

  /** The major and overlay of a version; both immutable, so a search sees one consistent version. */
  private async view(indexKey: string, version: VersionId): Promise<View> {
    const versions = this.index(indexKey);
    const { major } = parseVersion(version);
    const node = versions.majors.get(major);
    if (node === undefined || !versions.has(version)) throw new Error(`index ${indexKey}: unknown version ${version}`);
    const layers = await node.load();
    // The version may have been dropped while the segment loaded.
    if (versions.majors.get(major) !== node || !versions.has(version)) {
      throw new Error(`index ${indexKey}: unknown version ${version}`);
    }
    return { major: layers, overlay: versions.overlay(version, layers) };
  }

  private index(indexKey: string): IndexVersions {
    const versions = this.indexes.get(indexKey);
    if (versions === undefined) throw new Error(`unknown index ${indexKey}`);
    return versions;
  }

  private db(): Catalog {
    if (this.catalog === null) throw new Error("embedded engine is not open");
    return this.catalog;
  }

  private indexDir(indexKey: string): string {
    // base64url keeps any key a single safe path segment (no "/", no "..").
    return path.join(this.segmentsDir, Buffer.from(indexKey, "utf8").toString("base64url"));
  }
}
