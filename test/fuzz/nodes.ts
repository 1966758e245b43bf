// The Sift processes a fuzzing run talks to: one, or with replication (issue 18) one node per
// region on a private NATS server's log, several sharing one PostgreSQL database. Used by
// `npm run bench:fuzz` and test/replication/fuzz.test.ts.
import { createTempDatabase } from "../../server/test/support/store.ts";
import { type NatsCluster, startNatsCluster } from "../support/nats.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import type { Outcome } from "./fuzzer.ts";
import { FUZZ_SERVER_ENV } from "./world.ts";

const REGIONS = ["frankfurt", "london", "newark"];

export interface FuzzNodes {
  /** The first migrates the database and is where the fuzzer sets the tenant up. */
  nodes: SiftProcess[];
  /** Kills the nodes and removes their data, the shared database and the NATS server. */
  stop(): Promise<void>;
}

/** Starts `count` nodes (more than one needs `replicated` and DATABASE_URL) with `env` on top. */
export async function startFuzzNodes(options: {
  replicated: boolean;
  count: number;
  env: Record<string, string>;
}): Promise<FuzzNodes> {
  const { replicated, count } = options;
  const nats: NatsCluster | undefined = replicated ? await startNatsCluster(1) : undefined;
  const shared = count > 1 ? await createTempDatabase(process.env.DATABASE_URL!) : undefined;
  const nodes: SiftProcess[] = [];
  const stop = async () => {
    for (const node of nodes) await node.destroy();
    await shared?.drop();
    await nats?.stop();
  };
  try {
    for (let i = 0; i < count; i++) {
      const env = {
        ...FUZZ_SERVER_ENV,
        ...(nats ? { SIFT_NATS_URL: nats.urls, SIFT_NATS_REPLICAS: "1" } : {}),
        ...(count > 1 ? { SIFT_REGION: REGIONS[i % REGIONS.length]!, SIFT_NODE_ID: `fuzz-${i}` } : {}),
        ...options.env,
      };
      nodes.push(await siftProcess(env, shared ? { sharedDatabase: shared.url } : {}));
    }
    // The first migrates the shared database; the others then start together.
    await nodes[0]!.start();
    await Promise.all(nodes.slice(1).map((node) => node.start()));
    return { nodes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * A region's answer for an index or version that has not reached it yet: 503 with Retry-After
 * (the client asks another region). Allowed with several nodes, counted apart.
 */
export const notThereYet = (outcome: Outcome): boolean =>
  outcome.response?.status === 503 && outcome.response.headers["retry-after"] !== undefined;
