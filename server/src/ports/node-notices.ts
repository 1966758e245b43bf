// Notices between the nodes (docs/replication.md, Several nodes per region; D-343): a node that
// revokes a key or changes an index's row tells every other node of every region at once, so that
// none keeps serving what its cache (or its region's read replica, which may trail the primary)
// says. Best effort and kept nowhere: a node out of reach of NATS when one is sent misses it, and
// its cache entries expire as they would without it. The adapter is NATS core messaging
// (replication/nats/).
export type NodeNotice =
  /** A key was revoked: no node may accept it again, whatever its cache or replica still says. */
  | { kind: "key-revoked"; keyHash: string }
  /**
   * An index's row changed (created, deleted, its visibility set): cached lookups go. With
   * `visibility`, the index has it from `at` (the sender's clock, ms) on, even where the replica
   * does not show it yet.
   */
  | { kind: "index-changed"; indexId: string; visibility?: "PUBLIC" | "PRIVATE"; at?: number }
  /**
   * A node lacks an index the shared store lists, or entries of it the log no longer gives: the
   * nodes that hold it look at once whether the log lost its history, and repair it (D-369).
   * `gap`: it applied the index's entries up to `applied`, then met one that builds on `needs`,
   * which it never got: the log lost what lies between, in the middle of the history (D-374).
   */
  | { kind: "index-lacking"; indexId: string; node: string; gap?: { applied: number; needs: number } };

export interface NodeNotices {
  /** Sends `notice` to every other node (best effort: see above); the sender has applied it itself. */
  send(notice: NodeNotice): void;
  /** Calls `listener` with every notice another node sends (this node's own may come back too). */
  listen(listener: (notice: NodeNotice) => void): void;
  /**
   * Calls `listener(false)` when this node stops hearing the others (its connection to NATS is
   * down, or not made yet: what they send meanwhile is lost), `listener(true)` when it hears them
   * again (D-347).
   */
  watchHearing?(listener: (hearing: boolean) => void): void;
}

/** One process: no other node to tell. */
export const noNotices: NodeNotices = {
  send: () => undefined,
  listen: () => undefined,
};
