// The `sift` CLI (@sift/cli) as a user runs it: a real process against a real server, judged by
// what it prints and its exit code.
import { execFile } from "node:child_process";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createKey, signUp, startWorld, type World } from "../support/world.ts";

const cli = resolve(createRequire(import.meta.url).resolve("@sift/cli/package.json"), "../bin/sift.js");
const exec = promisify(execFile);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let world: World;
let key: string;
let dir: string;

beforeAll(async () => {
  world = await startWorld();
  key = await createKey(world.a.session, "adm", "cli");
  dir = mkdtempSync(join(tmpdir(), "sift-cli-"));
});
afterAll(() => world?.stop());

async function sift(...args: (string | Record<string, string>)[]): Promise<Run> {
  const extra = args.filter((a) => typeof a !== "string");
  const env = { ...process.env, SIFT_BASE_URL: world.server.url, SIFT_API_KEY: key, ...Object.assign({}, ...extra) };
  delete env.SIFT_PASSWORD;
  Object.assign(env, ...extra);
  return exec(process.execPath, [cli, ...args.filter((a) => typeof a === "string")], { env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

let n = 0;
async function freshIndex(): Promise<string> {
  const name = `cli-${++n}`;
  const reply = await world.a.session.post("/v1/indexes", { name, serviceName: world.a.service, visibility: "PUBLIC" });
  expect(reply.status).toBe(201);
  return name;
}

function file(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, lines.join("\n"));
  return path;
}

describe("sift", () => {
  test("--help lists the commands, and each command has its own help", async () => {
    const top = await sift("--help");
    expect(top.code).toBe(0);
    for (const command of ["upload", "status", "search", "keys"]) expect(top.stdout).toContain(`  ${command} `);
    expect(top.stdout).toContain("Exit codes");
    for (const command of ["upload", "status", "search", "keys"]) {
      const help = await sift(command, "--help");
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^usage: sift ${command}`));
    }
  });

  test("uploads a small file with progress in KB, follows the ingest, and the records are found", async () => {
    const index = await freshIndex();
    const path = file("fruit.jsonl", ['{"id":"m1","title":"Mango"}', '{"id":"m2","title":"Melon","weight":3}']);
    const run = await sift("upload", path, "--index", index);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`^${index} version 1: 2 records ingested from jsonl, now active in [\\d.]+ s\\n$`),
    );
    // Not a terminal: plain progress lines, and a small file is shown in bytes, not "0.0 MB".
    const size = statSync(path).size;
    expect(run.stderr).toMatch(new RegExp(`uploading .* ${size} B / ${size} B`));
    expect(run.stderr).not.toContain("0.0 MB");

    const found = await sift("search", "me", "--index", index, "--service", world.a.service, "--weighted");
    expect(found.code).toBe(0);
    expect(found.stdout).toBe("  1. Melon  [m2]  weight 3\n(version 1)\n");
    const json = JSON.parse(
      (await sift("search", "man", "--index", index, "--service", world.a.service, "--json")).stdout,
    );
    expect(json.suggestions.map((s: { id: string }) => s.id)).toEqual(["m1"]);
  });

  test("status shows an ingest, with line-numbered errors, and exits 1 when it failed", async () => {
    const index = await freshIndex();
    const path = file("bad.jsonl", ['{"id":"a","title":"Apple"}', '{"id":"b"}']);
    const upload = await sift("upload", path, "--index", index);
    expect(upload.code).toBe(1);
    expect(upload.stderr).toMatch(/ingest of version 1 failed/);
    expect(upload.stderr).toMatch(/line 2 \(title\): /);

    const status = await sift("status", index, "1");
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(new RegExp(`^${index} version 1: failed\\n`));
    expect(status.stdout).toMatch(/line 2 \(title\): /);

    const skipped = await sift("upload", path, "--index", index, "--skip-invalid", "--no-wait");
    expect(skipped.code).toBe(0);
    expect(skipped.stdout).toContain(`${index} version 2: uploaded, ingest queued`);
    let state = "";
    for (let i = 0; i < 100 && state !== "succeeded"; i++) {
      state = JSON.parse((await sift("status", index, "2", "--json")).stdout).state;
      if (state !== "succeeded") await new Promise((r) => setTimeout(r, 100));
    }
    expect(state).toBe("succeeded");
    const shown = await sift("status", index, "2");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("1 records ingested from jsonl, now active; 1 invalid, skipped");
  });

  test("keys signs in with the account and lists its keys without their secrets", async () => {
    const email = `cli-keys-${process.pid}@example.com`;
    const session = await signUp(world.http, email);
    const secret = await createKey(session, "adm", "cli");
    const noPassword = await sift("keys", "--email", email);
    expect(noPassword).toMatchObject({ code: 2, stderr: expect.stringMatching(/SIFT_PASSWORD/) });
    const wrong = await sift("keys", "--email", email, { SIFT_PASSWORD: "not it" });
    expect(wrong.code).toBe(1);
    const run = await sift("keys", "--email", email, { SIFT_PASSWORD: "correct horse battery staple" });
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^id\s+type\s+name\s+prefix\s+created\s+last used\s+state$/);
    expect(rows.some((r) => /\badm\s+cli\s/.test(r) && r.endsWith("active"))).toBe(true);
    expect(run.stdout).not.toContain(secret);
  });

  test("exit codes tell a refusal, a wrong command line and an unreachable server apart", async () => {
    const refused = await sift("upload", file("one.jsonl", ['{"id":"x","title":"X"}']), "--index", "missing");
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/400: index "missing" does not exist/) });
    expect(await sift("upload")).toMatchObject({ code: 2, stderr: expect.stringMatching(/usage: sift upload/) });
    expect(await sift("frobnicate")).toMatchObject({ code: 2, stderr: expect.stringMatching(/unknown command/) });
    expect(await sift("keys", "--nope")).toMatchObject({ code: 2, stderr: expect.stringMatching(/--nope/) });
    const down = await sift("status", "x", "1", "--base-url", "http://127.0.0.1:9");
    expect(down).toMatchObject({ code: 3, stderr: expect.stringMatching(/no Sift host answered/) });
  });
});
