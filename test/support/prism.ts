// Prism in front of the real server: every response the tests see is validated against the
// contract, and one that breaks it comes back as HTTP 500 with an `sl-violations` header.
// Requests are not judged (`--validate-request false`) so the server's own 400s are tested.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { freePort, waitForHttp } from "./ports.ts";

const require = createRequire(import.meta.url);
const prismCli = require.resolve("@stoplight/prism-cli/dist/index.js");
export const openapiPath = require.resolve("@sift/contract/openapi.yaml");

export interface Prism {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

function launch(args: string[]): Promise<Prism> {
  return (async () => {
    const port = await freePort();
    let output = "";
    const child: ChildProcess = spawn(
      process.execPath,
      [prismCli, ...args.map((a) => (a === "$PORT" ? String(port) : a))],
      {
        env: { ...process.env, SCARF_ANALYTICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(url, 30_000);
    } catch (error) {
      child.kill("SIGKILL");
      throw new Error(`prism did not start: ${(error as Error).message}\n${output}`);
    }
    return {
      url,
      output: () => output,
      stop: () =>
        new Promise<void>((done) => {
          if (child.exitCode !== null) return done();
          child.once("exit", () => done());
          child.kill("SIGTERM");
        }),
    };
  })();
}

export const startPrismProxy = (upstream: string) =>
  launch(["proxy", "-h", "127.0.0.1", "-p", "$PORT", "--errors", "--validate-request", "false", openapiPath, upstream]);

export const startPrismMock = () => launch(["mock", "-h", "127.0.0.1", "-p", "$PORT", openapiPath]);
