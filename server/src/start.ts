// Starts Sift (loaded by main.ts): configuration from the environment, the composition root, the
// HTTP server, and a graceful shutdown on SIGTERM/SIGINT (stop accepting, finish in-flight
// requests, close).
import module from "node:module";
import { ConfigError, loadConfig, type Config } from "./config.ts";
import { composeSift } from "./compose.ts";
import { listen } from "./http/listen.ts";
import { createLogger } from "./log.ts";
import { surviveDroppedStoreRejections } from "./store/errors.ts";

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`sift: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}
const log = createLogger(config.logLevel, { service: "sift", region: config.region });
surviveDroppedStoreRejections(log);

const sift = await composeSift(config, log).catch((error: Error) => {
  process.stderr.write(`sift: cannot start: ${error.message}\n`);
  process.exit(1);
});

const server = listen(sift.app, config, (info) => {
  const base =
    config.publicUrl ?? `http://${info.address.includes(":") ? `[${info.address}]` : info.address}:${info.port}`;
  log.info("listening", { url: base });
  const lines = [
    `Sift is running at ${base}`,
    `  Dashboard       ${base}/dashboard`,
    `  API reference   ${base}/docs`,
    `  OpenAPI         ${base}/openapi.yaml`,
    `  Health          ${base}/healthz`,
    ...(sift.demoHint ? sift.demoHint(base) : []),
  ];
  process.stderr.write(`${lines.join("\n")}\n`);
  // The modules loaded so far go to the compile cache now (main.ts): a node that is killed, not
  // stopped, would otherwise never write it.
  setImmediate(() => module.flushCompileCache?.());
});
// A port taken is said plainly, instead of an unhandled 'error' event's trace (D-368).
server.once("error", (error: NodeJS.ErrnoException) => {
  if (server.listening) throw error;
  const where = `${config.host}:${config.port}`;
  process.stderr.write(
    error.code === "EADDRINUSE"
      ? `sift: cannot start: ${where} is in use by another process; stop it, or set PORT (or HOST)\n`
      : `sift: cannot start: cannot listen on ${where}: ${error.message}\n`,
  );
  // The data directory's lock and the store's lease go with the process.
  process.exit(1);
});

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info("shutting down", { signal });
  const force = setTimeout(() => {
    log.warn("shutdown grace period over; exiting with requests in flight");
    process.exit(1);
  }, config.shutdownGraceMs).unref();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
  });
  try {
    await sift.close();
  } catch (error) {
    // Said once, plainly, instead of an unhandled rejection's trace.
    log.error("shutdown did not finish cleanly", { error: (error as Error).message });
    process.exit(1);
  }
  clearTimeout(force);
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
