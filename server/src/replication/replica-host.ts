// What the parts of a node's replica (history.ts, erasure.ts, set-aside.ts, elsewhere.ts) use of
// it in common; each part's own host interface adds the steps it calls.
import type { Logger } from "../log.ts";
import type { ReplicaState } from "./replica-state.ts";
import type { Snapshots } from "./snapshots.ts";

export interface ReplicaHost {
  node: string;
  state: ReplicaState;
  snapshots: Snapshots;
  logger: Logger;
  stopping(): boolean;
}

/** The outcome of applying one of this node's own entries, for its writer. */
export interface Verdict {
  /** False: another entry of the index was accepted after the one its writer had seen. */
  accepted: boolean;
  result?: unknown;
  error?: Error;
}
