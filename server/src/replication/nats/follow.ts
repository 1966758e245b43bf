// Following the change log: an ordered consumer of the region's mirror or of the stream, watched
// for stalls, read around while it is made again (D-370), and moved off a mirror that lost or
// renumbered entries (D-341, D-355, D-357).
import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import type { AppliedEntry } from "../../ports/change-log.ts";
import type { LargeEntries } from "./large-entries.ts";
import type { RegionMirror } from "./mirror.ts";
import { isStreamNotFound } from "./object-copies.ts";
import { MIRROR_STALLED_MS, type NatsLogOptions } from "./options.ts";
import { SUBJECT_ROOT } from "./streams.ts";

/** A consumer silent this long while the log holds more is started again (see followLog). */
const STALL_MS = 3_000;
/**
 * A stalled consumer's entries are read around it by message gets for at most this long, until it
 * delivers again: after a NATS server was killed, new consumers could not be made until JetStream's
 * metadata leader was elected again (9 s seen), nor for 10 s more where the request for one timed
 * out meanwhile, and every write waited that long for its own entry (D-370).
 */
const READ_AROUND_MS = 30_000;
/** While the stream is read instead of the region's mirror, the mirror is looked at this often. */
const MIRROR_RETRY_MS = 5_000;
/** While the region's mirror is read, its entries are compared with the stream's this often (D-355). */
const MIRROR_CHECK_MS = 10_000;

/** What following the log needs of it. */
export interface FollowedLog {
  js: JetStreamClient;
  options: NatsLogOptions;
  mirror: RegionMirror;
  entries: LargeEntries;
}

/** Delivers the log's entries from `fromSeq` on, in order, each once, until stopped. */
export function followLog(
  log: FollowedLog,
  fromSeq: number,
  deliver: (applied: AppliedEntry) => Promise<void>,
): { stop(): Promise<void> } {
  const { js, options, mirror, entries } = log;
  let stopped = false;
  let close: (() => Promise<void>) | undefined;
  let next = Math.max(1, fromSeq);
  let delivering = false;
  let progressAt = Date.now();
  // The region's mirror, or the stream itself while the mirror does not follow it (below).
  let source = mirror.followed;
  let sourceSince = Date.now();
  /** The next entry the mirror lacked at the last stall check, while the stream held it. */
  let lackedAt = 0;
  let comparedAt = Date.now();
  /**
   * The mirror's end while the stream is read around it (undefined: not looked at yet, or made
   * again), since when it has not moved, and how often it was nudged (D-357).
   */
  let mirrorEnd: { last: number | undefined; since: number; nudges: number } = {
    last: undefined,
    since: Date.now(),
    nudges: 0,
  };
  /** The read-around below while it runs, and how many messages the consumer has received. */
  let around: Promise<void> | undefined;
  let consumed = 0;
  // While the consumer is made again, the stream's entries are read by message gets, which only
  // the stream's leader answers (D-370); it stops as soon as the consumer receives a message.
  const readAround = () => {
    if (around !== undefined || stopped) return;
    const seen = consumed;
    const until = Date.now() + READ_AROUND_MS;
    around = (async () => {
      let waitMs = 50;
      while (!stopped && consumed === seen && Date.now() < until) {
        const message = await mirror.entryAt(next);
        if (stopped || consumed !== seen) return;
        if (message === null) {
          await new Promise((resolve) => setTimeout(resolve, waitMs));
          waitMs = Math.min(500, waitMs * 2);
          continue;
        }
        waitMs = 50;
        delivering = true;
        try {
          await deliver({ seq: message.seq, entry: await entries.entryOf(message) });
          next = message.seq + 1;
        } finally {
          delivering = false;
          progressAt = Date.now();
        }
      }
    })()
      .catch((error: Error) =>
        options.log.warn("could not read the change log around its stalled consumer", {
          from: next,
          error: error.message,
        }),
      )
      .finally(() => {
        around = undefined;
      });
  };
  const readFrom = (stream: string, why: string) => {
    options.log.warn(why, { from: next, stream });
    if (stream === options.stream && source !== stream)
      mirrorEnd = { last: undefined, since: Date.now(), nudges: mirrorEnd.nudges };
    source = stream;
    sourceSince = Date.now();
    progressAt = Date.now();
    return close?.();
  };
  // A mirror under other sequence numbers than the stream's: applied by them, entries would be
  // skipped or taken for others (D-355). The stream is read from `next` on (entries applied
  // twice are skipped by their versions) and the mirror made again.
  const renumbered = (seq: number) => {
    // Not awaited: a consumer closes once its loop has left it; the remake logs its own failure.
    void readFrom(
      options.stream,
      "the region's mirror holds other entries than the stream at its positions; reading the stream",
    );
    void mirror.remakeRenumberedMirror(seq);
  };
  // A consumer that went quiet while the log holds entries it has not delivered is started
  // again from the next one: after a NATS server was killed one stayed silent for minutes
  // (test/replication/ingest-kill.test.ts), holding up every write waiting for its own entry.
  const watchdog = setInterval(() => {
    if (stopped || delivering) return;
    if (source !== options.stream && next > 1 && Date.now() - comparedAt >= MIRROR_CHECK_MS) {
      comparedAt = Date.now();
      const at = next - 1;
      // biome-ignore lint/plugin: a mirror or stream that does not answer is compared at the next check.
      void mirror
        .mirrorMatches(at)
        .then((same) => {
          if (same === false && !stopped && source !== options.stream) return renumbered(at);
        })
        .catch(() => undefined);
    }
    if (source !== mirror.followed && Date.now() - sourceSince >= MIRROR_RETRY_MS) {
      // biome-ignore lint/plugin: a mirror still behind or out of reach is asked again later.
      void mirror
        .mirrorHas(next - 1)
        .then(({ caughtUp, last }) => {
          sourceSince = Date.now();
          if (caughtUp && !stopped && source !== mirror.followed) {
            mirrorEnd = { last: undefined, since: Date.now(), nudges: 0 };
            return readFrom(mirror.followed, "the region's mirror follows the stream again; reading it");
          }
          // Behind, and not moving: stalled (NATS's mirrors have stopped for hours, D-357).
          if (last === undefined || last !== mirrorEnd.last) {
            mirrorEnd = { last, since: Date.now(), nudges: last === undefined ? mirrorEnd.nudges : 0 };
            return;
          }
          const stalledMs = options.mirrorStalledMs ?? MIRROR_STALLED_MS;
          if (Date.now() - mirrorEnd.since < stalledMs * 2 ** mirrorEnd.nudges || stopped) return;
          mirrorEnd = { ...mirrorEnd, since: Date.now(), nudges: mirrorEnd.nudges + 1 };
          return mirror.nudgeMirror(mirrorEnd.nudges, last, next - 1);
        })
        .catch(() => undefined);
      return;
    }
    if (Date.now() - progressAt < STALL_MS) return;
    // biome-ignore lint/plugin: a log that does not answer now is asked again at the next tick.
    void mirror
      .stalled(source, next)
      .then((verdict) => {
        if (stopped || delivering || Date.now() - progressAt < STALL_MS) return;
        // An append may land between the two questions: lacking only if it did a tick ago too.
        const lacks = verdict === "mirror lacks it" && lackedAt === next;
        lackedAt = verdict === "mirror lacks it" ? next : 0;
        // The same sequence numbers in both: the stream takes over where the mirror stopped.
        if (verdict === "mirror gone" || lacks)
          return readFrom(
            options.stream,
            `the region's mirror ${verdict === "mirror gone" ? "is gone" : "does not follow the stream"}; reading the stream`,
          );
        if (verdict === "stalled") {
          options.log.warn("the change log's consumer stalled; starting it again", { from: next });
          progressAt = Date.now();
          readAround();
          return close?.();
        }
      })
      .catch(() => undefined);
  }, 1_000);
  watchdog.unref();
  const done = (async () => {
    while (!stopped) {
      try {
        // An ordered consumer: the client recreates it after a server or leader change, from
        // the last sequence it delivered, so nothing is skipped or repeated.
        const consumer = await js.consumers.get(source, {
          filter_subjects: `${SUBJECT_ROOT}.>`,
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: next,
        });
        // Short pull requests and heartbeats: a server that dies under the consumer is noticed
        // in a second or two (with the defaults a write waited up to 80 s for its own entry).
        const messages = await consumer.consume({ max_messages: 256, expires: 5_000, idle_heartbeat: 1_000 });
        close = async () => {
          await messages.close();
        };
        if (stopped) await messages.close();
        progressAt = Date.now();
        let first = true;
        for await (const m of messages) {
          // The read-around ends at its next step; what it delivered meanwhile is not again.
          consumed++;
          if (around !== undefined) await around;
          if (m.seq < next) continue;
          // The mirror keeps the stream's sequence numbers, and is truncated as the stream is:
          // a gap the stream does not have is an entry the mirror lost (D-341).
          if (m.seq > next && source !== options.stream && (await mirror.streamHoldsFrom(next, m.seq))) {
            // Not awaited: the consumer closes once this loop has left it.
            void readFrom(options.stream, "the region's mirror lacks entries the stream holds; reading the stream");
            break;
          }
          // A consumer of the mirror starts where the stream's numbers say: its first entry must
          // be the stream's there (a node restarted after the mirror was renumbered, D-355).
          if (first && source !== options.stream && (await mirror.mirrorMatches(m.seq, m.data)) === false) {
            renumbered(m.seq);
            break;
          }
          first = false;
          delivering = true;
          try {
            const entry = await entries.entryOf(m);
            // No entry builds on one at or after its own position: the mirror's numbers are
            // behind, if the stream holds another entry there.
            if (
              source !== options.stream &&
              entry.after !== undefined &&
              entry.after >= m.seq &&
              (await mirror.mirrorMatches(m.seq, m.data)) === false
            ) {
              renumbered(m.seq);
              break;
            }
            await deliver({ seq: m.seq, entry });
            next = m.seq + 1;
          } finally {
            delivering = false;
            progressAt = Date.now();
          }
          if (stopped) break;
        }
      } catch (error) {
        if (stopped) break;
        if (source !== options.stream && isStreamNotFound(error)) {
          await readFrom(options.stream, "the region's mirror is gone; reading the stream");
          continue;
        }
        options.log.warn("following the change log failed; starting again", {
          from: next,
          error: (error as Error).message,
        });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(watchdog);
      await close?.();
      await done;
    },
  };
}
