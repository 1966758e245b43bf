// What a log entry does on a node (docs/replication.md): whether it still fits the index as the
// entries before it left it (decided from the log alone, so every node decides alike), and its
// effect on the node's own engine and on the shared store's version rows. Replica decides when;
// this decides what.
import { formatVersion, majorOf, minorOf, type VersionId } from "../domain/version-id.ts";
import type { Logger } from "../log.ts";
import type { ChangeLog, LogEntry } from "../ports/change-log.ts";
import { MissingBaseError, type RecordChange, type SearchEngine } from "../ports/engine.ts";
import type { ReplicaState } from "./replica-state.ts";
import type { StoreBackfill } from "./store-backfill.ts";

export interface EntryEffectsDeps {
  /** The node's own engine (not the replicating wrapper). */
  engine: SearchEngine;
  state: ReplicaState;
  log: Pick<ChangeLog, "getFiles">;
  backfill: StoreBackfill;
  logger: Logger;
  /** What an anchor entry does: it restores the index from a snapshot when this node is ahead of it (D-369). */
  anchor: (entry: Extract<LogEntry, { op: "anchor" }>) => Promise<void>;
}

export class EntryEffects {
  private readonly deps: EntryEffectsDeps;

  constructor(deps: EntryEffectsDeps) {
    this.deps = deps;
  }

  /**
   * Whether an entry still fits the index as the entries before it in the log left it: what a
   * serial execution of the writes would have allowed. Decided from the log alone, so every node
   * decides the same. A record change must build on the active version (when it goes live) with
   * the next minor; a checkpoint must copy the active version; a version being dropped must not
   * be the active one or what it is built on.
   */
  async accepts(entry: LogEntry): Promise<boolean> {
    const r = this.deps.state.indexes.get(entry.index);
    const has = (v: VersionId) => this.deps.state.has(entry.index, v);
    switch (entry.op) {
      case "create":
        return r === undefined;
      case "drop-index":
      case "bulk":
      case "purge":
      case "anchor":
        return true;
      case "change": {
        const { version, parent, activate } = entry.change;
        const major = majorOf(version);
        return (
          has(parent) &&
          !has(version) &&
          minorOf(version) === (r?.maxMinor[major] ?? 0) + 1 &&
          (!activate || parent === r?.active)
        );
      }
      case "changes": {
        // The first builds on what is there as a single change would; each next on the one before.
        const [first, ...rest] = entry.changes;
        if (first === undefined) return false;
        const major = majorOf(first.version);
        if (!has(first.parent) || has(first.version)) return false;
        if (minorOf(first.version) !== (r?.maxMinor[major] ?? 0) + 1) return false;
        if (first.activate && first.parent !== r?.active) return false;
        let previous = first;
        for (const change of rest) {
          if (change.parent !== previous.version || majorOf(change.version) !== major) return false;
          if (minorOf(change.version) !== minorOf(previous.version) + 1) return false;
          previous = change;
        }
        return true;
      }
      case "checkpoint":
        if (entry.files !== undefined) {
          // Built by its writer while writes went on: adopted only over what it carries them to.
          return (
            entry.expectActive === r?.active &&
            !has(formatVersion(entry.major)) &&
            (entry.carry === undefined || !has(entry.carry.version))
          );
        }
        return entry.from === r?.active && !has(formatVersion(entry.major));
      case "activate":
        return has(entry.version) && (entry.expectActive === undefined || entry.expectActive === r?.active);
      case "drop-version":
      case "drop-versions": {
        const active = r?.active;
        if (active === undefined) return true;
        const ancestry = await this.ancestry(entry.index, active);
        const dropped = entry.op === "drop-version" ? [entry.version] : entry.versions;
        return dropped.every((v) => !ancestry.has(v) && !(minorOf(v) === 0 && majorOf(active) === majorOf(v)));
      }
    }
  }

  /** The active version and every version it is built on (its chain of parents down to a major). */
  private async ancestry(indexId: string, version: VersionId): Promise<Set<VersionId>> {
    const parents = new Map((await this.deps.engine.versions(indexId)).map((v) => [v.version, v.parent]));
    const chain = new Set<VersionId>();
    for (
      let v: VersionId | null | undefined = version;
      v && !chain.has(v);
      v = minorOf(v) === 0 ? null : parents.get(v)
    ) {
      chain.add(v);
    }
    return chain;
  }

  /** What an accepted entry does to this node's engine (idempotent: a restart may repeat it). */
  async apply(entry: LogEntry): Promise<unknown> {
    const engine = this.deps.engine;
    switch (entry.op) {
      case "create":
        return engine.createIndex(entry.index);
      case "drop-index":
        return engine.dropIndex(entry.index);
      case "change": {
        const { change } = entry;
        if (!(await this.has(entry.index, change.version))) await engine.applyChange(entry.index, change);
        await this.recordChangeRow(entry, change);
        return undefined;
      }
      case "changes": {
        // Those a restart left applied are skipped; the rest go to the engine together.
        const missing: RecordChange[] = [];
        for (const change of entry.changes) {
          if (!(await this.has(entry.index, change.version))) missing.push(change);
        }
        if (engine.applyChanges) await engine.applyChanges(entry.index, missing);
        else for (const change of missing) await engine.applyChange(entry.index, change);
        for (const change of entry.changes) await this.recordChangeRow(entry, change);
        return undefined;
      }
      case "bulk":
        if (!(await this.has(entry.index, formatVersion(entry.major)))) {
          await engine.importMajor!(entry.index, { major: entry.major, parent: null, records: entry.records }, (dir) =>
            this.deps.log.getFiles(entry.files, dir).then(() => undefined),
          );
        }
        return undefined;
      case "checkpoint": {
        const major = formatVersion(entry.major);
        const files = entry.files;
        if (files === undefined) {
          if (!(await this.has(entry.index, major))) return engine.checkpoint(entry.index, entry.from, entry.major);
          return { records: await engine.count(entry.index, major) };
        }
        // Its writer holds it already; the others open the files it published (prefetched).
        if (!(await this.has(entry.index, major))) {
          try {
            await engine.importMajor!(
              entry.index,
              { major: entry.major, parent: entry.from, records: entry.records ?? 0 },
              (dir) => this.deps.log.getFiles(files, dir).then(() => undefined),
            );
          } catch (error) {
            // Published without the segment it is layered on, which this node no longer holds (a
            // purge rebuilt it): built here from its source, as an entry without files is (D-353).
            if (!(error instanceof MissingBaseError) || !(await this.has(entry.index, entry.from))) throw error;
            this.deps.logger.info("building a checkpoint here: its base segment is not held", {
              index: entry.index,
              major: entry.major,
            });
            await engine.checkpoint(entry.index, entry.from, entry.major);
          }
        }
        if (entry.carry !== undefined) {
          if (!(await this.has(entry.index, entry.carry.version))) await engine.applyChange(entry.index, entry.carry);
          await this.recordChangeRow(entry, entry.carry, true);
        }
        if (entry.live !== false) await engine.activate(entry.index, entry.carry?.version ?? major);
        return { records: entry.records };
      }
      case "activate":
        return engine.activate(entry.index, entry.version);
      case "drop-version":
        return engine.dropVersion(entry.index, entry.version);
      case "drop-versions": {
        // A major goes with its minors: those listed after it may be gone already.
        const held: VersionId[] = [];
        for (const v of entry.versions) if (await this.has(entry.index, v)) held.push(v);
        if (engine.dropVersions) return engine.dropVersions(entry.index, held);
        for (const v of held) if (await this.has(entry.index, v)) await engine.dropVersion(entry.index, v);
        return;
      }
      case "purge":
        return engine.purge(entry.index, entry.id);
      case "anchor":
        return this.deps.anchor(entry);
    }
  }

  private async has(indexId: string, version: VersionId): Promise<boolean> {
    if (this.deps.engine.has) return this.deps.engine.has(indexId, version);
    return (await this.deps.engine.versions(indexId)).some((v) => v.version === version);
  }

  /**
   * A change's row and tombstones in the shared store: every node that applies it records them,
   * in the background, batched (the writer's node first, the others in case it died first, D-299).
   * A checkpoint's carried writes rewrite nothing of their own: their own entries recorded that.
   */
  private async recordChangeRow(entry: LogEntry, change: RecordChange, carried = false): Promise<void> {
    const version = change.version;
    const deleted = new Set(change.deletes);
    if (change.purge) deleted.add(change.purge.recordId);
    const effects = { rewritten: carried ? [] : change.upserts.map((r) => r.id), deleted: [...deleted] };
    this.deps.backfill.addRow(
      {
        indexId: entry.index,
        version,
        major: majorOf(version),
        minor: minorOf(version),
        parent: change.parent,
        kind: change.purge ? "purge" : "change",
        state: "ready",
        records: await this.deps.engine.count(entry.index, version),
        createdAt: entry.at,
        purgedRecordId: change.purge?.recordId ?? null,
        purgedBy: change.purge?.by ?? null,
      },
      effects,
    );
  }
}
