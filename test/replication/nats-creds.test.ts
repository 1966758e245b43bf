// A NATS deployment with decentralised authentication (D-371): the node connects with the user's
// `.creds` file (SIFT_NATS_CREDS), its log's own connection and its file-transfer thread's alike,
// and without it is refused.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/src/log.ts";
import type { ChangeLog } from "../../server/src/ports/change-log.ts";
import { openNatsLog } from "../../server/src/replication/nats/nats-log.ts";
import { natsAvailable } from "../support/nats.ts";
import { type OperatorServer, startOperatorServer } from "../support/nats-operator.ts";

const silent = createLogger("silent", {}, () => {});

describe.skipIf(!natsAvailable)("a NATS server that takes .creds files", () => {
  const dir = mkdtempSync(join(tmpdir(), "sift-nats-creds-"));
  let server: OperatorServer;
  const logs: ChangeLog[] = [];
  beforeAll(async () => {
    server = await startOperatorServer(dir);
  });
  afterAll(async () => {
    for (const log of logs) await log.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a node with the file appends, follows and moves files; one without is refused", async () => {
    const log = await openNatsLog({
      servers: [server.url],
      credsFile: server.creds,
      stream: "CREDS",
      replicas: 1,
      log: silent,
      name: "creds",
    });
    logs.push(log);
    const seq = await log.append({ op: "create", index: "idx_creds", node: "creds", at: Date.now() }, 0);
    const delivered: number[] = [];
    const following = log.follow(1, async (applied) => {
      delivered.push(applied.seq);
    });
    try {
      await expect.poll(() => delivered, { timeout: 10_000 }).toEqual([seq]);
    } finally {
      await following.stop();
    }
    // Through the transfer thread's own connection.
    const file = join(dir, "postings");
    writeFileSync(file, "segment bytes");
    await log.putFiles("segments/idx_creds/1", [{ name: "postings", path: file }]);
    const out = join(dir, "out");
    expect(await log.getFiles("segments/idx_creds/1", out)).toEqual(["postings"]);

    await expect(
      openNatsLog({ servers: [server.url], stream: "CREDS", replicas: 1, log: silent, name: "no-creds" }),
    ).rejects.toThrow(/Authorization Violation/i);
  }, 60_000);
});
