// The change-log port in memory, for tests of the replica without NATS: one array shared by the
// "nodes" of a test, delivered in order to every follower. `hold` stops delivery (a node that
// lags), `release` resumes it. The compare-and-set can be turned off, as NATS 2.9 clusters
// effectively do under concurrency, to show the replica decides on its own.
import { cpSync, mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import type { AppliedEntry, ChangeLog, LogEntry } from "../../src/ports/change-log.ts";
import { StaleAppendError, newestVersionOf } from "../../src/ports/change-log.ts";
import type { NodeNotice } from "../../src/ports/node-notices.ts";

export class MemoryLog {
  /** null: truncated away. */
  readonly entries: (LogEntry | null)[] = [];
  readonly docs = new Map<string, unknown>();
  readonly files = new Map<string, { name: string; path: string }[]>();
  /** When each name's files were published (ms). */
  readonly publishedAt = new Map<string, number>();
  private readonly wakers = new Set<() => void>();
  /** Every client's notice listeners: a notice reaches all of them, the sender's own too (as NATS's). */
  private readonly listeners = new Set<(notice: NodeNotice) => void>();
  enforceCompareAndSet = true;

  /**
   * Loses the index's entries from its `start`-th to before its `end`-th (all by default), as a log
   * that lost them some other way than a truncation (D-369).
   */
  loseEntries(indexKey: string, start = 0, end?: number): void {
    const own = this.entries.flatMap((e, i) => (e?.index === indexKey ? [i] : []));
    for (const i of own.slice(start, end)) this.entries[i] = null;
  }

  /** A client of the log for one node. */
  client(): ChangeLog & { hold(): void; release(): void } {
    let held = false;
    let wake: (() => void) | undefined;
    const listening = new Set<(notice: NodeNotice) => void>();
    const log = this;
    return {
      hold: () => {
        held = true;
      },
      release: () => {
        held = false;
        wake?.();
      },
      async append(entry: LogEntry, expectedLast: number | undefined) {
        if (log.enforceCompareAndSet && expectedLast !== undefined) {
          const last = log.entries.reduce((at, e, i) => (e?.index === entry.index ? i + 1 : at), 0);
          if (last !== expectedLast) throw new StaleAppendError("stale");
        }
        log.entries.push(structuredClone(entry));
        for (const w of log.wakers) w();
        return log.entries.length;
      },
      sendNotice: (notice: NodeNotice) => {
        for (const listener of log.listeners) listener(structuredClone(notice));
      },
      onNotice: (listener: (notice: NodeNotice) => void) => {
        listening.add(listener);
        log.listeners.add(listener);
      },
      lastSeq: async () => log.entries.length,
      lastSeqOf: async (indexKey: string) => log.entries.reduce((at, e, i) => (e?.index === indexKey ? i + 1 : at), 0),
      lastEntryOf: async (indexKey: string) => {
        const seq = log.entries.reduce((at, e, i) => (e?.index === indexKey ? i + 1 : at), 0);
        if (seq === 0) return null;
        const entry = log.entries[seq - 1]!;
        return { seq, at: entry.at, version: newestVersionOf(entry) };
      },
      firstEntryOf: async (indexKey: string, fromSeq: number) => {
        const i = log.entries.findIndex((e, i) => i + 1 >= fromSeq && e?.index === indexKey);
        return i < 0 ? null : { seq: i + 1, entry: structuredClone(log.entries[i]!) };
      },
      firstSeq: async () => Math.max(1, log.entries.findIndex((e) => e !== null) + 1),
      entryTimeFrom: async (seq: number) => log.entries.slice(Math.max(0, seq - 1)).find((e) => e !== null)?.at,
      follow(fromSeq: number, deliver: (applied: AppliedEntry) => Promise<void>) {
        let stopped = false;
        const done = (async () => {
          for (let seq = fromSeq; !stopped; ) {
            if (held || seq > log.entries.length) {
              await new Promise<void>((resolve) => {
                wake = resolve;
                log.wakers.add(resolve);
                setTimeout(resolve, 50);
              });
              continue;
            }
            const entry = log.entries[seq - 1];
            if (entry) await deliver({ seq, entry: structuredClone(entry) });
            seq++;
          }
        })();
        return {
          stop: async () => {
            stopped = true;
            await done;
          },
        };
      },
      async putFiles(name: string, files: { name: string; path: string }[]) {
        const kept = `${process.env.TMPDIR ?? "/tmp"}/sift-memory-log-${process.pid}/${name.replaceAll("/", "_")}`;
        mkdirSync(kept, { recursive: true });
        for (const f of files) cpSync(f.path, join(kept, f.name));
        log.files.set(
          name,
          files.map((f) => ({ name: f.name, path: join(kept, basename(f.path)) })),
        );
        log.publishedAt.set(name, Date.now());
      },
      async getFiles(name: string, dir: string) {
        const files = log.files.get(name);
        if (!files) throw new Error(`no files published as ${name}`);
        mkdirSync(dir, { recursive: true });
        for (const f of files) cpSync(f.path, join(dir, f.name));
        return files.map((f) => f.name);
      },
      deleteFiles: async (name: string) => {
        log.files.delete(name);
        log.publishedAt.delete(name);
      },
      listPublished: async (indexKey: string) =>
        [...log.publishedAt]
          .filter(([n]) => n.startsWith(`segments/${indexKey}/`) || n.startsWith(`snapshots/${indexKey}/`))
          .map(([name, at]) => ({ name, at })),
      // Entries here are never too large for a message, and files are published in one step.
      deleteLargeEntries: async () => 0,
      deleteUnfinished: async () => 0,
      hasFiles: async (name: string) => log.files.has(name),
      putDoc: async (name: string, value: unknown) => {
        log.docs.set(name, structuredClone(value));
      },
      getDoc: async <T>(name: string) => (log.docs.has(name) ? (structuredClone(log.docs.get(name)) as T) : null),
      listDocs: async (prefix: string) => [...log.docs.keys()].filter((n) => n.startsWith(prefix)),
      deleteDoc: async (name: string) => {
        log.docs.delete(name);
      },
      truncate: async (indexKey: string, beforeSeq: number) => {
        log.entries.forEach((e, i) => {
          if (e !== null && e.index === indexKey && i + 1 < beforeSeq) log.entries[i] = null;
        });
      },
      ping: async () => true,
      close: async () => {
        for (const listener of listening) log.listeners.delete(listener);
      },
    };
  }
}
