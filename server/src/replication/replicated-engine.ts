// The engine port with replication (docs/replication.md): every change to an index goes into the
// change log first and then into this node's engine; reads go straight to this node's engine.
// The services call it as they call any engine; the difference they see is StaleAppendError,
// which their write lock answers by catching up and running the write again
// (services/versions/lock.ts).
import type {
  AdoptedCheckpoint,
  BulkWriter,
  NetChange,
  EngineVersionInfo,
  PurgeResult,
  RecordChange,
  SearchEngine,
  SearchPage,
  SearchRecord,
  SearchRequest,
  VersionDiffPage,
  VersionId,
} from "../ports/engine.ts";
import { NotImplementedError } from "../domain/errors.ts";
import type { ChangeLog } from "../ports/change-log.ts";
import type { Replica } from "./replica.ts";

export function replicatedEngine(inner: SearchEngine, replica: Replica, log: ChangeLog): SearchEngine {
  if (!inner.segmentFiles || !inner.holdSegmentFiles || !inner.importMajor || !inner.has || !inner.changesSince) {
    throw new Error(`replication needs an engine that stores majors as files; "${inner.name}" does not`);
  }
  return new ReplicatedEngine(inner, replica, log);
}

/** Where the files of one major are published: unique per index and major, never reused. */
const filesName = (indexKey: string, major: number) => `segments/${indexKey}/${major}`;

class ReplicatedEngine implements SearchEngine {
  readonly name: string;
  private readonly inner: SearchEngine;
  private readonly replica: Replica;
  private readonly log: ChangeLog;

  constructor(inner: SearchEngine, replica: Replica, log: ChangeLog) {
    this.inner = inner;
    this.replica = replica;
    this.log = log;
    this.name = `${inner.name}+replicated`;
  }

  open(): Promise<void> {
    return this.inner.open();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  /** The engine alone: a log out of reach shows as replication not caught up (Replica.status). */
  ping(): Promise<boolean> {
    return this.inner.ping();
  }

  async createIndex(indexKey: string): Promise<void> {
    await this.replica.commit({ op: "create", index: indexKey });
  }

  async dropIndex(indexKey: string): Promise<void> {
    // Whatever was written to the index meanwhile, deleting it wins: no compare-and-set.
    await this.replica.commit({ op: "drop-index", index: indexKey }, { compareAndSet: false });
  }

  async bulkWriter(indexKey: string, major: number): Promise<BulkWriter> {
    const writer = await this.inner.bulkWriter(indexKey, major);
    return {
      add: (records: SearchRecord[]) => writer.add(records),
      abort: () => writer.abort(),
      commit: async () => {
        const result = await writer.commit();
        // Built once, here; every other node downloads the files and opens them. The major's id
        // is unique already (drawn from the store), so its entry needs no compare-and-set.
        const files = filesName(indexKey, major);
        await this.log.putFiles(files, await this.inner.segmentFiles!(indexKey, major));
        await this.replica.commit(
          { op: "bulk", index: indexKey, major, records: result.records, files },
          { compareAndSet: false },
        );
        return result;
      },
    };
  }

  // A record write always has a client waiting for it (D-318).
  async applyChange(indexKey: string, change: RecordChange): Promise<void> {
    await this.replica.commit({ op: "change", index: indexKey, change }, { clientWaits: true });
  }

  async applyChanges(indexKey: string, changes: RecordChange[]): Promise<void> {
    await this.replica.commit({ op: "changes", index: indexKey, changes }, { clientWaits: true });
  }

  async checkpoint(indexKey: string, from: VersionId, major: number): Promise<{ records: number }> {
    return (await this.replica.commit({ op: "checkpoint", index: indexKey, from, major })) as { records: number };
  }

  /**
   * Built once, here, while writes go on, and published; other nodes download the files when
   * the checkpoint is adopted (D-231), instead of each building it inside the index's chain.
   */
  async buildCheckpoint(
    indexKey: string,
    from: VersionId,
    major: number,
    options: { clientWaits?: boolean } = {},
  ): Promise<{ records: number }> {
    const built = await this.inner.checkpoint(indexKey, from, major);
    // A layered checkpoint travels without its base: every node following the log holds it (D-353).
    const files = await this.inner.segmentFiles!(indexKey, major, { withoutBase: true });
    await this.log.putFiles(filesName(indexKey, major), files, {
      background: true,
      clientWaits: options.clientWaits === true,
    });
    return built;
  }

  changesSince(indexKey: string, from: VersionId, to: VersionId): Promise<NetChange | null> {
    return this.inner.changesSince!(indexKey, from, to);
  }

  async adoptCheckpoint(indexKey: string, c: AdoptedCheckpoint): Promise<void> {
    await this.replica.commit(
      {
        op: "checkpoint",
        index: indexKey,
        from: c.from,
        major: c.major,
        files: filesName(indexKey, c.major),
        records: c.records,
        expectActive: c.expectActive,
        ...(c.carry ? { carry: c.carry } : {}),
        ...(c.live ? {} : { live: false }),
      },
      { clientWaits: c.clientWaits ?? false },
    );
  }

  async activate(
    indexKey: string,
    version: VersionId,
    options: { ifActive?: VersionId; clientWaits?: boolean } = {},
  ): Promise<void> {
    await this.replica.commit(
      {
        op: "activate",
        index: indexKey,
        version,
        ...(options.ifActive === undefined ? {} : { expectActive: options.ifActive }),
      },
      { clientWaits: options.clientWaits === true },
    );
  }

  async dropVersion(indexKey: string, version: VersionId): Promise<void> {
    // The published files of a dropped major stay until a truncation has removed the entries that
    // open it: a node replaying the log opens the major before it reaches the drop (D-221).
    await this.replica.commit({ op: "drop-version", index: indexKey, version });
  }

  async dropVersions(indexKey: string, versions: VersionId[]): Promise<void> {
    if (versions.length) await this.replica.commit({ op: "drop-versions", index: indexKey, versions });
  }

  async purge(indexKey: string, id: string): Promise<PurgeResult> {
    return (await this.replica.commit({ op: "purge", index: indexKey, id })) as PurgeResult;
  }

  versions(indexKey: string): Promise<EngineVersionInfo[]> {
    return this.inner.versions(indexKey);
  }
  search(indexKey: string, version: VersionId, request: SearchRequest): Promise<SearchPage> {
    return this.inner.search(indexKey, version, request);
  }
  diff(
    indexKey: string,
    base: VersionId | null,
    version: VersionId,
    page: { after?: string | undefined; limit: number },
  ): Promise<VersionDiffPage> {
    // A read, of this node's copy; the service waits for both versions to be applied first.
    if (!this.inner.diff) throw new NotImplementedError(`the ${this.inner.name} engine does not compare versions`);
    return this.inner.diff(indexKey, base, version, page);
  }
  get(indexKey: string, version: VersionId, id: string): Promise<SearchRecord | null> {
    return this.inner.get(indexKey, version, id);
  }
  count(indexKey: string, version: VersionId): Promise<number> {
    return this.inner.count(indexKey, version);
  }
}
