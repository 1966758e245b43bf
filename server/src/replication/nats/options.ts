// How a node opens the change log on NATS (SIFT_NATS_* in docs/replication.md).
import type { NatsTls } from "../../config.ts";
import type { Logger } from "../../log.ts";

export interface NatsLogOptions {
  /** Server URLs, comma-separated or a list (any member of the cluster will do). */
  servers: string[];
  /** A NATS credentials file to connect with (SIFT_NATS_CREDS, D-371). */
  credsFile?: string;
  /** TLS files (SIFT_NATS_TLS_*, D-371). */
  tls?: NatsTls;
  /** Stream name; the object store is `<stream>_files`. */
  stream: string;
  /**
   * A mirror of the stream in this node's region (made if missing): the node reads the log from
   * it, with the stream's own sequence numbers, and appends to the stream itself.
   */
  mirror?: string;
  /** Replicas of the stream and the object store (3 in a cluster: a quorum of 2 acknowledges). */
  replicas: number;
  /**
   * The region's mirror not moving for this long while it lacks entries the stream holds is
   * nudged: its leader asked to step down, then (twice as long later) the mirror made again, each
   * next time twice as long later (D-357). The region's copies of the object stores are looked at
   * this often, and nudged alike when they did not move between two looks (D-359). 60 s by default.
   */
  mirrorStalledMs?: number;
  /**
   * False: none of the sweeps soon after the opening (FIRST_SWEEPS_MS), only the usual ones and
   * those a leader's change brings; for a test that times the latter. True by default.
   */
  sweepsAfterOpening?: boolean;
  log: Logger;
  /** Names the connection in the server's monitoring. */
  name: string;
  /**
   * Where segment files announced by another node are fetched while it is still publishing
   * them (see prefetch); without it they are fetched when the log entry arrives.
   */
  stagingDir?: string;
  /**
   * Whether this node holds the index whose files are announced (its key is the name's second
   * part: `segments/<index>/<major>`, `snapshots/<index>/...`): those of an index held in other
   * regions are not fetched ahead (D-385). All of them without it.
   */
  holdsIndex?: (index: string) => Promise<boolean>;
}

/** The default of `mirrorStalledMs` (D-357). */
export const MIRROR_STALLED_MS = 60_000;
