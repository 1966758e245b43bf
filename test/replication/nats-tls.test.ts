// NATS servers with TLS certificates from a private CA, verifying the clients' own (mutual TLS),
// as servers reachable between regions should be (D-371): a node given the CA and its client
// certificate (SIFT_NATS_TLS_CA, SIFT_NATS_TLS_CERT, SIFT_NATS_TLS_KEY) appends, follows and moves
// files through its transfer thread; one without the CA is refused. The certificates are made
// with openssl for the test.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/src/log.ts";
import type { ChangeLog } from "../../server/src/ports/change-log.ts";
import { openNatsLog } from "../../server/src/replication/nats/nats-log.ts";
import { type Certificates, certificates, opensslAvailable } from "../support/certificates.ts";
import { appendsFollowsAndMovesFiles } from "../support/log-roundtrip.ts";
import { NATS_SERVER, natsAvailable } from "../support/nats.ts";
import { freePort, waitForHttp, waitForTcp } from "../support/ports.ts";

const silent = createLogger("silent", {}, () => {});

describe.skipIf(!natsAvailable || !opensslAvailable)("NATS servers with a private CA and mutual TLS", () => {
  const dir = mkdtempSync(join(tmpdir(), "sift-nats-tls-"));
  let server: ReturnType<typeof spawn> | undefined;
  let url = "";
  let files: Certificates;
  const logs: ChangeLog[] = [];

  beforeAll(async () => {
    files = certificates(dir);
    const port = await freePort();
    const monitor = await freePort();
    const conf = join(dir, "nats.conf");
    writeFileSync(
      conf,
      [
        `listen: 127.0.0.1:${port}`,
        `http: 127.0.0.1:${monitor}`,
        `jetstream { store_dir: "${join(dir, "store")}" }`,
        `tls { cert_file: "${files.server.cert}", key_file: "${files.server.key}", ca_file: "${files.ca}", verify: true }`,
        "",
      ].join("\n"),
    );
    server = spawn(NATS_SERVER, ["-c", conf], { stdio: "ignore" });
    await waitForHttp(`http://127.0.0.1:${monitor}/healthz`, 20_000);
    await waitForTcp(port, () => server!.exitCode !== null);
    url = `tls://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    for (const log of logs) await log.close();
    server?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("a node with the CA and its certificate appends, follows and moves files; one without the CA is refused", async () => {
    const log = await openNatsLog({
      servers: [url],
      tls: { caFile: files.ca, certFile: files.client.cert, keyFile: files.client.key },
      stream: "TLS",
      replicas: 1,
      log: silent,
      name: "tls",
    });
    logs.push(log);
    await appendsFollowsAndMovesFiles(log, dir, "idx_tls");

    await expect(
      openNatsLog({
        servers: [url],
        tls: { certFile: files.client.cert, keyFile: files.client.key },
        stream: "TLS",
        replicas: 1,
        log: silent,
        name: "no-ca",
      }),
    ).rejects.toThrow();
  }, 60_000);
});
