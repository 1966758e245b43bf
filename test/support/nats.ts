// Private NATS JetStream clusters for replication tests: servers on free loopback ports with
// their own store directories, started and stopped (by pid) by the test, never the machine's 4222.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { type DelayProxy, delayProxy } from "./delay-proxy.ts";
import { freePort, waitForHttp, waitForTcp } from "./ports.ts";

export const NATS_SERVER = "/usr/sbin/nats-server";
export const natsAvailable = existsSync(NATS_SERVER);

export interface NatsServer {
  name: string;
  url: string;
  /** The server's HTTP monitoring endpoint (/jsz tells what a stream holds). */
  monitor: string;
  /**
   * SIGKILL by default: the server dies mid-whatever, its store directory stays. SIGTERM shuts
   * it down cleanly, telling the others it is gone.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: the server hangs, its connections open and silent (a machine frozen, a partition). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
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

/** One nats-server process, started with `args` each time, on ports that stay its own. */
function natsServer(name: string, port: number, monitor: number, args: string[]): NatsServer {
  let child: ChildProcess | undefined;
  let output = "";
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  return {
    name,
    url: `nats://127.0.0.1:${port}`,
    monitor: `http://127.0.0.1:${monitor}`,
    running,
    async start() {
      child = spawn(NATS_SERVER, args, { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout!.on("data", (d) => (output += d));
      child.stderr!.on("data", (d) => (output += d));
      // Its monitoring port answers before it listens for clients, which can still fail.
      await waitForHttp(`http://127.0.0.1:${monitor}/healthz`, 20_000)
        .then(() => waitForTcp(port, () => !running()))
        .catch((error: Error) => {
          throw new Error(`${error.message}\n${output}`);
        });
    },
    pause: () => void child?.kill("SIGSTOP"),
    resume: () => void child?.kill("SIGCONT"),
    kill: (signal = "SIGKILL") =>
      new Promise<void>((done) => {
        if (!running()) return done();
        child!.once("exit", () => done());
        child!.kill(signal);
      }),
  };
}

function natsCluster(servers: NatsServer[], stop: () => Promise<void>): NatsCluster {
  return { servers, urls: servers.map((s) => s.url).join(","), stop };
}

async function killAll(servers: NatsServer[]): Promise<void> {
  await Promise.all(servers.map((s) => s.kill()));
}

export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), "sift-nats-"));
  const nodes: { name: string; port: number; cluster: number; monitor: number }[] = [];
  for (let i = 0; i < size; i++) {
    nodes.push({ name: `n${i + 1}`, port: await freePort(), cluster: await freePort(), monitor: await freePort() });
  }
  const servers = nodes.map((node) => {
    const routes = nodes
      .filter((n) => n !== node)
      .map((n) => `nats://127.0.0.1:${n.cluster}`)
      .join(",");
    const args = ["-a", "127.0.0.1", "-p", String(node.port), "-m", String(node.monitor), "-js"];
    args.push("-sd", join(dir, node.name), "-n", node.name);
    if (size > 1)
      args.push("--cluster", `nats://127.0.0.1:${node.cluster}`, "--routes", routes, "--cluster_name", "sift");
    return natsServer(node.name, node.port, node.monitor, args);
  });
  await Promise.all(servers.map((s) => s.start()));
  return natsCluster(servers, async () => {
    await killAll(servers);
    rmSync(dir, { recursive: true, force: true });
  });
}

/** NATS clusters joined by gateways, one JetStream across them: what a deployment runs. */
export interface NatsSupercluster extends NatsCluster {
  /** Each cluster by its name; stopping one kills its servers and keeps its store directories. */
  clusters: Record<string, NatsCluster>;
}

/**
 * A supercluster on loopback: a cluster per name (a region's id), each of `size` servers, named
 * `<cluster>-<n>`, every cluster's gateway listing every cluster. Resolves once JetStream can
 * place a stream of `size` replicas in each cluster: the meta leader is elected and has heard
 * from every server, or a stream made meanwhile could be placed in another cluster than asked.
 *
 * The tests use clusters of 3: six servers for two regions, idle but for the tests' writes, ready
 * in 4 to 9 s on this 2-core machine with other work on it. That is a deployment's shape (R3
 * streams and mirrors), and its meta group of 6 keeps a quorum when one server is shut down.
 * Clusters of 1 start too (the route to itself lets a lone server run clustered JetStream), but
 * their meta group of 2 stops whenever either server does.
 */
export async function startNatsSupercluster(
  names: string[],
  size: number,
  /**
   * The name of one more cluster, of a single server and no region: a tie-breaker that keeps the
   * JetStream meta group's majority when one region's cluster is down (docs/replication.md).
   */
  tieBreaker?: string,
  /**
   * Each message between clusters is this late, each way: every server's gateway is reached
   * through a delaying proxy (delay-proxy.ts), which it advertises, so that the URLs the servers
   * tell each other lead through it too. Within a cluster, and to clients, nothing is delayed.
   */
  gatewayDelayMs = 0,
): Promise<NatsSupercluster> {
  const dir = mkdtempSync(join(tmpdir(), "sift-natssc-"));
  const plan: {
    cluster: string;
    name: string;
    port: number;
    monitor: number;
    route: number;
    gateway: number;
    /** Where the other clusters reach its gateway. */
    reached: number;
  }[] = [];
  const proxies: DelayProxy[] = [];
  const sizes = new Map(names.map((name) => [name, size]));
  if (tieBreaker !== undefined) sizes.set(tieBreaker, 1);
  for (const [cluster, members] of sizes) {
    for (let i = 1; i <= members; i++) {
      const [port, monitor, route, gateway] = [await freePort(), await freePort(), await freePort(), await freePort()];
      const proxy = gatewayDelayMs > 0 ? await delayProxy(gateway, gatewayDelayMs) : undefined;
      if (proxy) proxies.push(proxy);
      plan.push({ cluster, name: `${cluster}-${i}`, port, monitor, route, gateway, reached: proxy?.port ?? gateway });
    }
  }
  const list = (ports: number[]) => ports.map((p) => `"nats://127.0.0.1:${p}"`).join(", ");
  const gateways = [...sizes.keys()]
    .map((cluster) => {
      const members = plan.filter((n) => n.cluster === cluster);
      return `{ name: "${cluster}", urls: [${list(members.map((n) => n.reached))}] }`;
    })
    .join(", ");
  const servers = plan.map((node) => {
    // Routes to every member, itself included (a route to itself is ignored): a new JetStream
    // server expects as many meta group peers as it has routes and other clusters' gateway
    // URLs. Without its own, each expected 5 of 6, so a cluster of 3 was a quorum on its own:
    // both elected a meta leader before the gateways were up, and the two fought for minutes.
    const routes = plan.filter((n) => n.cluster === node.cluster).map((n) => n.route);
    const config = join(dir, `${node.name}.conf`);
    writeFileSync(
      config,
      [
        `server_name: "${node.name}"`,
        `listen: "127.0.0.1:${node.port}"`,
        `http: "127.0.0.1:${node.monitor}"`,
        `jetstream { store_dir: "${join(dir, node.name)}" }`,
        `cluster { name: "${node.cluster}", listen: "127.0.0.1:${node.route}", routes: [${list(routes)}] }`,
        `gateway { name: "${node.cluster}", listen: "127.0.0.1:${node.gateway}", advertise: "127.0.0.1:${node.reached}", gateways: [${gateways}] }`,
        "",
      ].join("\n"),
    );
    return { cluster: node.cluster, server: natsServer(node.name, node.port, node.monitor, ["-c", config]) };
  });
  const all = servers.map((s) => s.server);
  const stop = async () => {
    await killAll(all);
    await Promise.all(proxies.map((proxy) => proxy.close()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(all.map((s) => s.start()));
    const clusters = Object.fromEntries(
      [...sizes.keys()].map((cluster) => {
        const own = servers.filter((s) => s.cluster === cluster).map((s) => s.server);
        return [cluster, natsCluster(own, () => killAll(own))];
      }),
    );
    for (const cluster of names) await untilPlaceable(clusters[cluster]!, cluster, size);
    return { ...natsCluster(all, stop), clusters };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Makes and removes a stream of `replicas` pinned to `cluster`, through its servers, until both
 * succeed: while the meta group settles, a create can time out yet be done, or be acknowledged by
 * one leader and unknown to the next when asked to remove it.
 */
async function untilPlaceable(cluster: NatsCluster, name: string, replicas: number): Promise<void> {
  const nc = await connect({ servers: cluster.urls.split(","), maxReconnectAttempts: -1 });
  const api = async (subject: string, body: unknown) => {
    const reply = await nc
      .request(`$JS.API.${subject}`, JSON.stringify(body), { timeout: 2_000 })
      .then((m) => m.json<{ error?: { description: string } }>())
      .catch((error: Error) => ({ error: { description: error.message } }));
    return reply.error?.description;
  };
  const probe = `placement_probe_${name}`;
  const config = { name: probe, subjects: [`probe.${name}`], num_replicas: replicas, placement: { cluster: name } };
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      const failed = (await api(`STREAM.CREATE.${probe}`, config)) ?? (await api(`STREAM.DELETE.${probe}`, {}));
      if (failed === undefined) return;
      if (Date.now() > deadline) throw new Error(`JetStream never placed a stream in cluster ${name}: ${failed}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await nc.close();
  }
}

export interface StreamState {
  first_seq: number;
  last_seq: number;
  consumer_count: number;
}

/**
 * A JetStream stream's state, what it mirrors and the cluster holding it, as the cluster's
 * monitors report it. Each server reports the replica it holds: the positions are the most
 * advanced replica's, and the consumers the most any server counts (one did not count a consumer
 * another held).
 */
export async function streamState(
  cluster: NatsCluster,
  name: string,
): Promise<{ state: StreamState; mirror?: string; cluster?: string } | undefined> {
  let found: { state: StreamState; mirror?: string; cluster?: string } | undefined;
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
      found = { state, mirror: detail.config?.mirror?.name, cluster: detail.cluster?.name };
    found.state = { ...found.state, consumer_count: consumers };
  }
  return found;
}
