// A change log still being opened (docs/replication.md, D-271): a node whose NATS servers are out
// of reach when it starts answers from what it holds instead of exiting, and opens the log in the
// background, trying again until it can. Until then each call waits a while for it, then fails
// like a log that does not answer: a write is a 503, readiness says not caught up, and the
// replica's start tries again.
import type { Logger } from "../log.ts";
import type { AppliedEntry, ChangeLog, EntryTail, LogEntry, PutFilesOptions } from "../ports/change-log.ts";
import type { NodeNotice } from "../ports/node-notices.ts";
import { within } from "../within.ts";

/** How long a call waits for the log to open before it fails (a NATS request's own timeout). */
const WAIT_MS = 10_000;
const RETRY_MS = 2_000;
const UNSENT_KEPT = 1_000;

export class OpeningLog implements ChangeLog {
  private log: ChangeLog | undefined;
  private closed = false;
  private readonly opened: Promise<ChangeLog>;
  /** Notices sent before the log opened (sendNotice). */
  private readonly unsent: NodeNotice[] = [];

  /** `logger`: names the servers (a wrong SIFT_NATS_URL shows here, every RETRY_MS). */
  constructor(open: () => Promise<ChangeLog>, logger: Logger) {
    this.opened = (async () => {
      for (let attempt = 1; ; attempt++) {
        if (this.closed) throw new Error("the change log was closed before it opened");
        try {
          const log = await open();
          if (this.closed) {
            await log.close();
            continue;
          }
          this.log = log;
          for (const notice of this.unsent.splice(0)) log.sendNotice?.(notice);
          if (attempt > 1) logger.info("opened the change log", { attempts: attempt });
          return log;
        } catch (error) {
          if (this.closed) continue;
          const message = (error as Error).message;
          logger.error("cannot open the change log; serving what this node holds, trying again", {
            attempt,
            error: message,
            // Also said for a few seconds while a cluster elects its leaders; for a minute, it is
            // a server started without JetStream.
            ...(/jetstream is not enabled/i.test(message)
              ? { hint: "the NATS servers of SIFT_NATS_URL must run JetStream (nats-server -js)" }
              : {}),
            ...(/authorization violation|authentication/i.test(message)
              ? {
                  hint: "the NATS servers refused this node's credentials: give them in SIFT_NATS_URL (nats://user:password@host:port or nats://token@host:port)",
                }
              : {}),
          });
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
    })();
    // biome-ignore lint/plugin: failing only when closed midway; each caller sees its own failure.
    this.opened.catch(() => undefined);
  }

  /** The open log, waiting up to WAIT_MS for it. */
  private async use(): Promise<ChangeLog> {
    return this.log ?? within(WAIT_MS, "opening the change log (NATS out of reach)", this.opened);
  }

  async append(entry: LogEntry, expectedLast: number | undefined): Promise<number> {
    return (await this.use()).append(entry, expectedLast);
  }
  async lastSeq(): Promise<number> {
    return (await this.use()).lastSeq();
  }
  async lastSeqNearby(): Promise<number> {
    const log = await this.use();
    return log.lastSeqNearby ? log.lastSeqNearby() : log.lastSeq();
  }
  async homeAway(): Promise<boolean> {
    return (await (await this.use()).homeAway?.()) ?? false;
  }
  async lastSeqOf(indexKey: string): Promise<number> {
    return (await this.use()).lastSeqOf(indexKey);
  }
  async lastEntryOf(indexKey: string): Promise<EntryTail | null> {
    return (await this.use()).lastEntryOf(indexKey);
  }
  async firstEntryOf(indexKey: string, fromSeq: number): Promise<AppliedEntry | null> {
    return (await this.use()).firstEntryOf(indexKey, fromSeq);
  }
  async firstSeq(): Promise<number> {
    return (await this.use()).firstSeq();
  }
  async entryTimeFrom(seq: number): Promise<number | undefined> {
    return (await this.use()).entryTimeFrom(seq);
  }
  /** Called once the log answered (the replica reads its end first). */
  follow(fromSeq: number, deliver: (applied: AppliedEntry) => Promise<void>): { stop(): Promise<void> } {
    if (!this.log) throw new Error("the change log is not open yet");
    return this.log.follow(fromSeq, deliver);
  }
  async putFiles(name: string, files: { name: string; path: string }[], options?: PutFilesOptions) {
    return (await this.use()).putFiles(name, files, options);
  }
  async getFiles(name: string, dir: string): Promise<string[]> {
    return (await this.use()).getFiles(name, dir);
  }
  async deleteFiles(name: string): Promise<void> {
    return (await this.use()).deleteFiles(name);
  }
  async listPublished(indexKey: string): Promise<{ name: string; at: number }[]> {
    return (await this.use()).listPublished(indexKey);
  }
  async deleteUnfinished(indexKey: string, at: number): Promise<number> {
    return (await this.use()).deleteUnfinished(indexKey, at);
  }
  async deleteLargeEntries(indexKey: string, at: number, options?: { exceptFrom?: number }): Promise<number> {
    return (await this.use()).deleteLargeEntries(indexKey, at, options);
  }
  async hasFiles(name: string): Promise<boolean> {
    return (await this.use()).hasFiles(name);
  }
  async putDoc(name: string, value: unknown): Promise<void> {
    return (await this.use()).putDoc(name, value);
  }
  async getDoc<T>(name: string, options?: { nearby?: boolean }): Promise<T | null> {
    return (await this.use()).getDoc<T>(name, options);
  }
  async listDocs(prefix: string): Promise<string[]> {
    return (await this.use()).listDocs(prefix);
  }
  async deleteDoc(name: string): Promise<void> {
    return (await this.use()).deleteDoc(name);
  }
  async truncate(indexKey: string, beforeSeq: number): Promise<void> {
    return (await this.use()).truncate(indexKey, beforeSeq);
  }
  /** Sent once the log is open (a few, the newest, while it is not). */
  sendNotice(notice: NodeNotice): void {
    if (this.log) {
      this.log.sendNotice?.(notice);
      return;
    }
    this.unsent.push(notice);
    if (this.unsent.length > UNSENT_KEPT) this.unsent.shift();
  }
  onNotice(listener: (notice: NodeNotice) => void): void {
    // biome-ignore lint/plugin: failing only when closed before it opened: nothing to hear then.
    void this.opened.then((log) => log.onNotice?.(listener)).catch(() => undefined);
  }
  /** Not hearing until the log is open. */
  watchHearing(listener: (hearing: boolean) => void): void {
    if (this.log === undefined) listener(false);
    const heard = (log: ChangeLog) => {
      listener(true);
      log.watchHearing?.(listener);
    };
    // biome-ignore lint/plugin: failing only when closed before it opened: nothing to hear then.
    void this.opened.then(heard).catch(() => undefined);
  }
  async ping(): Promise<boolean> {
    return this.log ? this.log.ping() : false;
  }
  async close(): Promise<void> {
    this.closed = true;
    await this.log?.close();
  }
}
