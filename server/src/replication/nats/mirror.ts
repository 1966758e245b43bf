// The log's stream and the region's mirror of it (SIFT_NATS_MIRROR): which one answers, whether
// the mirror keeps up with the stream, and making it again when it does not (D-341, D-355, D-357).
import type { NatsConnection } from "@nats-io/transport-node";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { isStreamNotFound, nextMessage, noMessage } from "./object-copies.ts";
import type { NatsLogOptions } from "./options.ts";
import { SUBJECT_ROOT, stepDown, tryEnsureStream } from "./streams.ts";

export class RegionMirror {
  private readonly nc: NatsConnection;
  private readonly jsm: JetStreamManager;
  private readonly options: NatsLogOptions;
  /** Set while the log's home has not answered since it was out of reach at the open (homeLastSeq). */
  private away: JetStreamManager | undefined;
  /** Asks the log's home with a short timeout, about a gap in the mirror (streamHoldsFrom). */
  private brief: JetStreamManager | undefined;
  /** The home did not answer about a gap: not asked again before this (streamHoldsFrom). */
  private gapsUnaskedUntil = 0;
  /** The region's mirror being made again (remakeMirror), once at a time. */
  private remaking: Promise<void> | undefined;

  constructor(nc: NatsConnection, jsm: JetStreamManager, options: NatsLogOptions) {
    this.nc = nc;
    this.jsm = jsm;
    this.options = options;
  }

  /** The stream the log is read from: the region's mirror, or the stream itself. */
  get followed(): string {
    return this.options.mirror ?? this.options.stream;
  }

  /** The stream's last position, from the log's home. */
  async homeLastSeq(): Promise<number> {
    // The home out of reach as the log opened: asked briefly until it answers, so that a node
    // started during the outage turns to its region's mirror in 2 s, not 10 (D-337).
    const info = await (this.away ?? this.jsm).streams.info(this.options.stream);
    this.away = undefined;
    return info.state.last_seq;
  }

  homeAway(): boolean {
    return this.away !== undefined;
  }

  /** The log's stream did not answer when the log was opened; `brief` asks with a short timeout. */
  homeOutOfReach(brief: JetStreamManager): void {
    this.away = brief;
  }

  /** The log's first entry at or after `seq`, read from the stream itself (null: none yet). */
  async entryAt(seq: number) {
    this.brief ??= await jetstreamManager(this.nc, { timeout: 2_000, checkAPI: false });
    // The first entry at or after `seq` of any index.
    return nextMessage(this.brief, this.options.stream, seq, `${SUBJECT_ROOT}.>`);
  }

  /**
   * Why a consumer of `source` delivered nothing for a while: "stalled" when `source` holds the
   * next entry; when `source` is the region's mirror, "mirror lacks it" when only the stream holds
   * it, or "mirror gone".
   */
  async stalled(source: string, next: number): Promise<"stalled" | "mirror gone" | "mirror lacks it" | "idle"> {
    const mirror = source !== this.options.stream;
    const last = await this.jsm.streams.info(source).then(
      (info) => info.state.last_seq,
      (error: Error) => {
        if (mirror && isStreamNotFound(error)) return -1;
        throw error;
      },
    );
    if (last === -1) return "mirror gone";
    if (last >= next) return "stalled";
    return mirror && (await this.homeLastSeq()) >= next ? "mirror lacks it" : "idle";
  }

  /**
   * Whether the stream holds an entry from `from` up to (not including) `to`. Asked briefly: with
   * the log's home out of reach, the mirror is all there is, and it is read on (false).
   */
  async streamHoldsFrom(from: number, to: number): Promise<boolean> {
    // Known out of reach: a node catching up through the mirror would wait 2 s at every gap.
    if (this.away !== undefined || Date.now() < this.gapsUnaskedUntil) return false;
    this.brief ??= await jetstreamManager(this.nc, { timeout: 2_000, checkAPI: false });
    // The first entry at or after `from` of any index.
    const message = await nextMessage(this.brief, this.options.stream, from, `${SUBJECT_ROOT}.>`).catch(
      (error: Error) => {
        this.gapsUnaskedUntil = Date.now() + 30_000;
        this.options.log.warn("could not ask the log's home about a gap in the region's mirror; reading on", {
          from,
          to,
          error: error.message,
        });
        return null;
      },
    );
    return message !== null && message.seq < to;
  }

  /**
   * Whether the region's mirror holds every entry through `seq` at the stream's positions, and
   * its end; a mirror that is gone, or holds other entries there (D-355), is made again.
   */
  async mirrorHas(seq: number): Promise<{ caughtUp: boolean; last: number | undefined }> {
    const mirror = this.options.mirror!;
    try {
      const last = (await this.jsm.streams.info(mirror)).state.last_seq;
      // Compared where both hold an entry: a renumbered mirror stays behind the stream for good.
      const at = Math.min(last, seq);
      if (at > 0 && (await this.mirrorMatches(at)) === false) {
        await this.remakeRenumberedMirror(at);
        return { caughtUp: false, last: undefined };
      }
      return { caughtUp: last >= seq, last };
    } catch (error) {
      if (!isStreamNotFound(error)) throw error;
      this.options.log.warn("making the region's mirror again", { mirror });
      await tryEnsureStream(this.jsm, this.options, this.nc.info?.cluster);
      return { caughtUp: false, last: undefined };
    }
  }

  /**
   * A mirror that stopped while behind the stream (D-357): the first time its leader is asked to
   * step down (a new leader starts its copying afresh), after that it is made again.
   */
  async nudgeMirror(nudge: number, last: number, seq: number): Promise<void> {
    const mirror = this.options.mirror!;
    if (nudge === 1 && this.options.replicas > 1) {
      this.options.log.warn("the region's mirror has stopped behind the stream; asking its leader to step down", {
        mirror,
        last,
        seq,
      });
      await stepDown(this.nc, this.options.log, mirror);
      return;
    }
    await this.remakeMirror("the region's mirror has stopped behind the stream", {
      // Another node of the region may have made it again meanwhile: it moves then.
      unless: async () => (await this.jsm.streams.info(mirror)).state.last_seq !== last,
      seq,
    });
  }

  /** Makes the mirror again once it holds another entry than the stream's at `seq` (D-355). */
  remakeRenumberedMirror(seq: number): Promise<void> {
    return this.remakeMirror("the region's mirror holds other entries than the stream at its positions", {
      // Asked again just before: another node of the region may have made it again already.
      unless: async () => (await this.mirrorMatches(seq)) !== false,
      seq,
    });
  }

  /**
   * Whether the region's mirror holds the stream's entry at `seq` (`held`: the mirror's, already
   * read). Undefined when either lacks it (truncated, or not there yet) or the stream is out of
   * reach: the mirror is what the region has then.
   *
   * NATS 2.9's mirror goes on under other numbers after its store refused entries (a limit, a
   * full disk): lifted, it takes the stream's next entry at its own next position, without the
   * ones it refused (seen on 2.9.10, test/replication/mirror.test.ts).
   */
  async mirrorMatches(seq: number, held?: Uint8Array): Promise<boolean | undefined> {
    if (this.away !== undefined || Date.now() < this.gapsUnaskedUntil) return undefined;
    this.brief ??= await jetstreamManager(this.nc, { timeout: 2_000, checkAPI: false });
    const brief = this.brief;
    const read = (stream: string) =>
      brief.streams.getMessage(stream, { seq }).then(
        (m) => m?.data,
        (error: Error) => {
          if (noMessage(error)) return undefined;
          throw error;
        },
      );
    try {
      const [mine, home] = await Promise.all([held ?? read(this.options.mirror!), read(this.options.stream)]);
      if (mine === undefined || home === undefined) return undefined;
      return Buffer.compare(mine, home) === 0;
    } catch (error) {
      this.gapsUnaskedUntil = Date.now() + 30_000;
      this.options.log.warn("could not compare the region's mirror with the log's home; reading on", {
        seq,
        error: (error as Error).message,
      });
      return undefined;
    }
  }

  /**
   * Makes the region's mirror again, `why`, unless `unless` finds (just before) that another node
   * of the region did so already.
   */
  private async remakeMirror(why: string, options: { unless: () => Promise<boolean>; seq: number }): Promise<void> {
    if (this.remaking !== undefined) return this.remaking;
    const mirror = this.options.mirror!;
    this.remaking = (async () => {
      if (await options.unless()) return;
      this.options.log.warn(`${why}; making it again`, { mirror, seq: options.seq });
      await this.jsm.streams.delete(mirror).catch((error: Error) => {
        if (!isStreamNotFound(error)) throw error;
      });
      await tryEnsureStream(this.jsm, this.options, this.nc.info?.cluster);
    })()
      .catch((error: Error) =>
        this.options.log.warn("could not make the region's mirror again", { mirror, error: error.message }),
      )
      .finally(() => {
        this.remaking = undefined;
      });
    return this.remaking;
  }
}
