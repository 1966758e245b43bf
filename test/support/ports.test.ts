// Test processes run side by side, each handing out loopback ports to the servers it starts; a
// port given to two of them made one's NATS server fail to bind it.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ports = fileURLToPath(new URL("./ports.ts", import.meta.url));

/**
 * A process of its own that asks `count` ports, none of them listened on, and stays until told
 * to end (a port may be handed out again once its process has ended).
 */
function portsOfAProcess(count: number) {
  const code = `const { freePort } = await import(${JSON.stringify(ports)});
    const got = [];
    for (let i = 0; i < ${count}; i++) got.push(await freePort());
    console.log(JSON.stringify(got));
    process.stdin.resume();
    process.stdin.on("end", () => process.exit(0));`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  const given = new Promise<number[]>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk;
      if (out.endsWith("\n")) resolve(JSON.parse(out) as number[]);
    });
    child.once("exit", (code) => reject(new Error(`the process ended (${code}) before it answered`)));
  });
  return {
    given,
    async end() {
      child.stdin.end();
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

describe("freePort", () => {
  it("never gives two processes running at once the same port", async () => {
    // 1,500 ports each out of about 12,800: by chance alone, some 175 would be given twice.
    const processes = [portsOfAProcess(1_500), portsOfAProcess(1_500)];
    try {
      const [a, b] = await Promise.all(processes.map((p) => p.given));
      expect(new Set(a).size).toBe(1_500);
      expect(new Set(b).size).toBe(1_500);
      expect(a!.filter((port) => b!.includes(port))).toEqual([]);
    } finally {
      await Promise.all(processes.map((p) => p.end()));
    }
  });
});
