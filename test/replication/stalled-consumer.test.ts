// A node's consumer of the change log that cannot be made again (D-370). After a NATS server was
// killed, JetStream could not make new consumers until its metadata leader was elected again (9 s
// seen with `npm run regions`), and a node whose request for one timed out meanwhile waited 10 s
// more; every write on that node waited as long for its own entry. The node now reads the log
// around its stalled consumer with message gets, which only the stream's leader answers. Shown
// deterministically: a NATS user that may not make consumers at all, against a real server.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/src/log.ts";
import type { ChangeLog, LogEntry } from "../../server/src/ports/change-log.ts";
import { openNatsLog } from "../../server/src/replication/nats/nats-log.ts";
import { OpeningLog } from "../../server/src/replication/opening-log.ts";
import { NATS_SERVER, natsAvailable } from "../support/nats.ts";
import { freePort, waitForHttp, waitForTcp } from "../support/ports.ts";

describe.skipIf(!natsAvailable)("a node whose consumer of the log cannot be made", () => {
  const dir = mkdtempSync(join(tmpdir(), "sift-stalled-consumer-"));
  let server: ReturnType<typeof spawn> | undefined;
  let port = 0;
  const logs: ChangeLog[] = [];

  beforeAll(async () => {
    port = await freePort();
    const monitor = await freePort();
    const conf = join(dir, "nats.conf");
    writeFileSync(
      conf,
      `listen: 127.0.0.1:${port}
http: 127.0.0.1:${monitor}
jetstream { store_dir: "${join(dir, "store")}" }
authorization {
  users = [
    { user: writer, password: pw }
    { user: follower, password: pw, permissions: {
      publish: { allow: [">"], deny: ["$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>"] }
      subscribe: { allow: [">"] }
    } }
  ]
}
`,
    );
    server = spawn(NATS_SERVER, ["-c", conf], { stdio: "ignore" });
    await waitForHttp(`http://127.0.0.1:${monitor}/healthz`, 20_000);
    await waitForTcp(port, () => server!.exitCode !== null);
  });
  afterAll(async () => {
    for (const log of logs) await log.close();
    server?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("applies the log's entries by reading around it, in order, and goes on with new ones", async () => {
    const open = async (user: string, lines: string[] = []) => {
      const log = await openNatsLog({
        servers: [`nats://${user}:pw@127.0.0.1:${port}`],
        stream: "STALLED",
        replicas: 1,
        log: createLogger("info", {}, (line) => lines.push(line)),
        name: user,
      });
      logs.push(log);
      return log;
    };
    const writer = await open("writer");
    const lines: string[] = [];
    const follower = await open("follower", lines);
    const entry = (i: number): LogEntry => ({
      op: "change",
      index: "idx_stalled",
      node: "writer",
      at: Date.now(),
      change: { version: `0.${i}`, parent: `0.${i - 1}`, upserts: [], deletes: [], activate: true },
    });
    const appended: number[] = [];
    for (let i = 1; i <= 3; i++) appended.push(await writer.append(entry(i), undefined));

    const delivered: number[] = [];
    const following = follower.follow(1, async ({ seq }) => {
      delivered.push(seq);
    });
    try {
      // Before D-370 nothing came, ever: the consumer was asked for again and again.
      await expect.poll(() => delivered, { timeout: 20_000 }).toEqual(appended);
      expect(lines.join("\n")).toMatch(/the change log's consumer stalled/);
      // Entries appended while it reads around come too, once each and in order.
      for (let i = 4; i <= 6; i++) appended.push(await writer.append(entry(i), undefined));
      await expect.poll(() => delivered, { timeout: 10_000 }).toEqual(appended);
    } finally {
      await following.stop();
    }
  }, 60_000);

  it("a node with the wrong password says what to set, without the password (D-371)", async () => {
    const lines: string[] = [];
    const logger = createLogger("info", {}, (line) => lines.push(line));
    const servers = [`nats://writer:not-the-password@127.0.0.1:${port}`];
    const log = new OpeningLog(
      () => openNatsLog({ servers, stream: "STALLED", replicas: 1, log: logger, name: "wrong" }),
      logger,
    );
    try {
      await expect.poll(() => lines.join("\n"), { timeout: 10_000 }).toMatch(/Authorization Violation/i);
      expect(lines.join("\n")).toMatch(/give them in SIFT_NATS_URL/);
      expect(lines.join("\n")).not.toContain("not-the-password");
    } finally {
      await log.close();
    }
  });
});
