// replica.json names the log position a node restarts from. With replication the engine does not
// flush each change (D-292): the file must never name a position whose effects the engine had not
// flushed when it was written, or a power loss would leave entries applied in the file only.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ReplicaState } from "../../src/replication/replica-state.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function stateFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "sift-replica-state-"));
  dirs.push(dir);
  return join(dir, "replica.json");
}

const saved = (file: string) =>
  JSON.parse(readFileSync(file, "utf8")) as { position: number; indexes: Record<string, { last: number }> };

describe("replica.json", () => {
  it("is written after the engine's flush, with what was applied before the flush began", async () => {
    const file = stateFile();
    const order: string[] = [];
    const state = new ReplicaState(file, async () => {
      order.push("flush");
      // An entry applied while the engine flushes: not covered by this flush.
      state.position = 9;
      state.index("x").last = 9;
    });
    state.position = 5;
    state.index("x").last = 5;
    await state.save();
    order.push("saved");
    expect(order).toEqual(["flush", "saved"]);
    expect(saved(file)).toMatchObject({ position: 5, indexes: { x: { last: 5 } } });
    expect(state.savedPosition).toBe(5);
    // Read back by a restart: it replays from 5, so entry 9 is applied again.
    expect(new ReplicaState(file).position).toBe(5);
  });

  it("is not written when the engine could not flush", async () => {
    const file = stateFile();
    let fail = false;
    const state = new ReplicaState(file, async () => {
      if (fail) throw new Error("disk full");
    });
    state.position = 3;
    await state.save();
    fail = true;
    state.position = 4;
    await expect(state.save()).rejects.toThrow(/disk full/);
    expect(saved(file).position).toBe(3);
    expect(state.savedPosition).toBe(3);
  });

  it("keeps the purges still to be removed, this node's and others', for a restart", async () => {
    const file = stateFile();
    const state = new ReplicaState(file);
    state.erasing.add("mine");
    state.watching.set("theirs", { seq: 12, writer: "frankfurt" });
    await state.save();
    const restarted = new ReplicaState(file);
    expect([...restarted.erasing]).toEqual(["mine"]);
    expect(restarted.watching.get("theirs")).toEqual({ seq: 12, writer: "frankfurt" });
  });
});
