// A NATS server in operator mode (decentralised authentication, as Synadia Cloud and most
// multi-region NATS deployments run): an operator, a system account and one account with
// JetStream, and a user of it whose `.creds` file Sift is given (SIFT_NATS_CREDS). The JWTs are
// made here with NKeys, as `nsc` would make them.
import { createHash } from "node:crypto";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { createAccount, createOperator, createUser, type KeyPair } from "@nats-io/nkeys";
import { NATS_SERVER } from "./nats.ts";
import { freePort, waitForHttp, waitForTcp } from "./ports.ts";

const text = (v: string | Uint8Array) => (typeof v === "string" ? v : new TextDecoder().decode(v));
const publicKey = (kp: KeyPair) => text(kp.getPublicKey());
const base64url = (v: string | Uint8Array) => Buffer.from(v).toString("base64url");

/** A JWT of NATS's format: claims signed with the issuer's NKey (ed25519). */
function jwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const claims: Record<string, unknown> = {
    iat: Math.floor(Date.now() / 1000),
    iss: publicKey(issuer),
    name,
    sub: subject,
    nats: { ...nats, version: 2 },
  };
  claims.jti = createHash("sha256").update(JSON.stringify(claims)).digest("hex").slice(0, 52).toUpperCase();
  const signed = `${base64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }))}.${base64url(JSON.stringify(claims))}`;
  return `${signed}.${base64url(issuer.sign(new TextEncoder().encode(signed)))}`;
}

export interface OperatorServer {
  url: string;
  /** The path of a `.creds` file of a user of the JetStream account. */
  creds: string;
  stop(): Promise<void>;
}

/** Starts one NATS server in operator mode, its store and files under `dir`. */
export async function startOperatorServer(dir: string): Promise<OperatorServer> {
  const operator = createOperator();
  const system = createAccount();
  const account = createAccount();
  const user = createUser();
  const limits = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };
  const jetstream = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
  const operatorJwt = jwt(operator, publicKey(operator), "operator", {
    type: "operator",
    system_account: publicKey(system),
  });
  const systemJwt = jwt(operator, publicKey(system), "SYS", { type: "account", limits });
  const accountJwt = jwt(operator, publicKey(account), "SIFT", {
    type: "account",
    limits: { ...limits, ...jetstream },
  });
  const userJwt = jwt(account, publicKey(user), "sift", {
    type: "user",
    pub: {},
    sub: {},
    subs: -1,
    data: -1,
    payload: -1,
  });
  const creds = join(dir, "sift.creds");
  writeFileSync(
    creds,
    `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n` +
      `-----BEGIN USER NKEY SEED-----\n${text(user.getSeed())}\n------END USER NKEY SEED------\n`,
  );
  const port = await freePort();
  const monitor = await freePort();
  const conf = join(dir, "operator.conf");
  writeFileSync(
    conf,
    [
      `listen: 127.0.0.1:${port}`,
      `http: 127.0.0.1:${monitor}`,
      `jetstream { store_dir: "${join(dir, "store")}" }`,
      `operator: ${operatorJwt}`,
      `system_account: ${publicKey(system)}`,
      "resolver: MEMORY",
      `resolver_preload: {\n  ${publicKey(system)}: ${systemJwt}\n  ${publicKey(account)}: ${accountJwt}\n}`,
      "",
    ].join("\n"),
  );
  const server = spawn(NATS_SERVER, ["-c", conf], { stdio: "ignore" });
  await waitForHttp(`http://127.0.0.1:${monitor}/healthz`, 20_000);
  await waitForTcp(port, () => server.exitCode !== null);
  return {
    url: `nats://127.0.0.1:${port}`,
    creds,
    stop: () =>
      new Promise<void>((done) => {
        if (server.exitCode !== null) return done();
        server.once("exit", () => done());
        server.kill("SIGKILL");
      }),
  };
}
