// A NATS deployment with decentralised authentication (D-371): the node connects with the user's
// `.creds` file (SIFT_NATS_CREDS), its log's own connection and its file-transfer thread's alike,
// and without it is refused.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/src/log.ts";
import type { ChangeLog } from "../../server/src/ports/change-log.ts";
import { openNatsLog } from "../../server/src/replication/nats/nats-log.ts";
import { appendsFollowsAndMovesFiles } from "../support/log-roundtrip.ts";
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
    await appendsFollowsAndMovesFiles(log, dir, "idx_creds");

    await expect(
      openNatsLog({ servers: [server.url], stream: "CREDS", replicas: 1, log: silent, name: "no-creds" }),
    ).rejects.toThrow(/Authorization Violation/i);
  }, 60_000);
});
