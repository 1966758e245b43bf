// Test processes run side by side, each handing out loopback ports to the servers it starts; a
// port given to two of them made one's NATS server fail to bind it.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const ports = fileURLToPath(new URL("./ports.ts", import.meta.url));

/** `count` ports handed out by a process of its own, none of them listened on meanwhile. */
async function portsOfAProcess(count: number): Promise<number[]> {
  const code = `const { freePort } = await import(${JSON.stringify(ports)});
    const got = [];
    for (let i = 0; i < ${count}; i++) got.push(await freePort());
    console.log(JSON.stringify(got));`;
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", code]);
  return JSON.parse(stdout) as number[];
}

describe("freePort", () => {
  it("never gives two processes running at once the same port", async () => {
    // 1,500 ports each out of about 12,800: by chance alone, some 175 would be given twice.
    const [a, b] = await Promise.all([portsOfAProcess(1_500), portsOfAProcess(1_500)]);
    expect(new Set(a).size).toBe(1_500);
    expect(new Set(b).size).toBe(1_500);
    expect(a.filter((port) => b.includes(port))).toEqual([]);
  });
});
