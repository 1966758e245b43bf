// The HMAC key of upload URLs and OAuth state (auth/signing.ts). Every node that may answer a
// step of one flow must hold the same key: behind a region's load balancer an upload URL made by
// one node may be PUT to another, and an OAuth callback may reach another node than its start.
// Configured (SIFT_SIGNING_SECRET), or generated once: into the data dir with the embedded store,
// and into PostgreSQL, which every node of a deployment shares, when DATABASE_URL is set (D-321).
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type { Logger } from "../log.ts";
import type { Db, Store } from "../store/open.ts";
import { deploymentSecrets } from "../store/schema.ts";

const SHARED_NAME = "signing";

export async function signingSecret(
  config: { signingSecret: string | undefined; dataDir: string },
  store: Pick<Store, "db" | "lookup" | "kind">,
  log: Logger,
): Promise<Buffer> {
  if (config.signingSecret) return Buffer.from(config.signingSecret, "utf8");
  const own = dataDirSecret(config.dataDir);
  // The embedded store is one process's own; PostgreSQL may be shared by several nodes.
  return store.kind === "postgres" ? sharedSecret(store, own, log) : own;
}

/** Kept in the data dir, made on the first start. */
function dataDirSecret(dataDir: string): Buffer {
  const path = join(dataDir, "signing.key");
  try {
    return Buffer.from(readFileSync(path, "utf8").trim(), "base64");
  } catch {
    // No key yet (a first start): make one. `wx` refuses to replace a key written meanwhile.
    const secret = randomBytes(32);
    writeFileSync(path, secret.toString("base64"), { mode: 0o600, flag: "wx" });
    return secret;
  }
}

/**
 * The deployment's key from the store; the first node to ask writes its own there (so a node
 * upgraded into this keeps the URLs it signed). A store that cannot say leaves the node on its
 * own key, with a warning: its URLs then work only on itself until it restarts.
 */
async function sharedSecret(store: Pick<Store, "db" | "lookup">, own: Buffer, log: Logger): Promise<Buffer> {
  const read = (db: Db) =>
    db
      .select({ value: deploymentSecrets.value })
      .from(deploymentSecrets)
      .where(eq(deploymentSecrets.name, SHARED_NAME))
      .then((rows) => rows[0]?.value);
  try {
    // The region's replica first: a node may start while the primary is out of reach (D-276).
    const found = await store.lookup(read);
    if (found !== undefined) return Buffer.from(found, "base64");
    await store.db
      .insert(deploymentSecrets)
      .values({ name: SHARED_NAME, value: own.toString("base64") })
      .onConflictDoNothing();
    const written = await read(store.db);
    if (written !== undefined) return Buffer.from(written, "base64");
  } catch (error) {
    log.warn("the store did not give the deployment's signing key; this node signs with its own until it restarts", {
      error: (error as Error).message,
    });
  }
  return own;
}
