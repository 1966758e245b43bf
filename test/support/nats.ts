// Private NATS JetStream clusters for replication tests: servers on free loopback ports with
// their own store directories, started and stopped (by pid) by the test, never the machine's 4222.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitForHttp } from "./ports.ts";

export const NATS_SERVER = "/usr/sbin/nats-server";
export const natsAvailable = existsSync(NATS_SERVER);

export interface NatsServer {
  name: string;
  url: string;
  /** The server's HTTP monitoring endpoint (/jsz tells what a stream holds). */
  monitor: string;
  /** SIGKILL: the server dies mid-whatever, its store directory stays. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and store directory. */
  start(): Promise<void>;
  running(): boolean;
}

export interface NatsCluster {
  servers: NatsServer[];
  /** Every server's client URL, comma-separated: what SIFT_NATS_URL takes. */
  urls: string;
  stop(): Promise<void>;
}

export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), "sift-nats-"));
  const nodes: { name: string; port: number; cluster: number; monitor: number }[] = [];
  for (let i = 0; i < size; i++) {
    nodes.push({ name: `n${i + 1}`, port: await freePort(), cluster: await freePort(), monitor: await freePort() });
  }
  const servers: NatsServer[] = nodes.map((node) => {
    let child: ChildProcess | undefined;
    let output = "";
    const routes = nodes
      .filter((n) => n !== node)
      .map((n) => `nats://127.0.0.1:${n.cluster}`)
      .join(",");
    const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
    return {
      name: node.name,
      url: `nats://127.0.0.1:${node.port}`,
      monitor: `http://127.0.0.1:${node.monitor}`,
      running,
      async start() {
        const args = ["-a", "127.0.0.1", "-p", String(node.port), "-m", String(node.monitor), "-js"];
        args.push("-sd", join(dir, node.name), "-n", node.name);
        if (size > 1)
          args.push("--cluster", `nats://127.0.0.1:${node.cluster}`, "--routes", routes, "--cluster_name", "sift");
        child = spawn(NATS_SERVER, args, { stdio: ["ignore", "pipe", "pipe"] });
        child.stdout!.on("data", (d) => (output += d));
        child.stderr!.on("data", (d) => (output += d));
        await waitForHttp(`http://127.0.0.1:${node.monitor}/healthz`, 20_000).catch((error: Error) => {
          throw new Error(`${error.message}\n${output}`);
        });
      },
      kill: () =>
        new Promise<void>((done) => {
          if (!running()) return done();
          child!.once("exit", () => done());
          child!.kill("SIGKILL");
        }),
    };
  });
  await Promise.all(servers.map((s) => s.start()));
  return {
    servers,
    urls: servers.map((s) => s.url).join(","),
    async stop() {
      await Promise.all(servers.map((s) => s.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface StreamState {
  first_seq: number;
  last_seq: number;
  consumer_count: number;
}

/**
 * A JetStream stream's state and what it mirrors, as the cluster's monitors report it. Each server
 * reports the replica it holds: the positions are the most advanced replica's, and the consumers
 * the most any server counts (one did not count a consumer another held).
 */
export async function streamState(
  cluster: NatsCluster,
  name: string,
): Promise<{ state: StreamState; mirror?: string } | undefined> {
  let found: { state: StreamState; mirror?: string } | undefined;
  for (const server of cluster.servers) {
    if (!server.running()) continue;
    const jsz = await fetch(`${server.monitor}/jsz?streams=true&config=true`).then((reply) => reply.json());
    const detail = jsz.account_details
      .flatMap((a: { stream_detail?: unknown[] }) => a.stream_detail ?? [])
      .find((s: { name: string }) => s.name === name);
    if (!detail) continue;
    const state = detail.state as StreamState;
    const consumers = Math.max(state.consumer_count, found?.state.consumer_count ?? 0);
    if (found === undefined || state.last_seq > found.state.last_seq)
      found = { state, mirror: detail.config?.mirror?.name };
    found.state = { ...found.state, consumer_count: consumers };
  }
  return found;
}
