// What a node does with its change log, in brief, for the tests of how it connects to NATS
// (credentials, TLS): an entry appended and delivered to its follower, and a segment file put and
// fetched back through the transfer thread's own connection.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { ChangeLog } from "../../server/src/ports/change-log.ts";

export async function appendsFollowsAndMovesFiles(log: ChangeLog, dir: string, index: string): Promise<void> {
  const seq = await log.append({ op: "create", index, node: "test", at: Date.now() }, 0);
  const delivered: number[] = [];
  const following = log.follow(1, async (applied) => {
    delivered.push(applied.seq);
  });
  try {
    await expect.poll(() => delivered, { timeout: 10_000 }).toEqual([seq]);
  } finally {
    await following.stop();
  }
  const file = join(dir, `${index}-postings`);
  writeFileSync(file, "segment bytes");
  await log.putFiles(`segments/${index}/1`, [{ name: "postings", path: file }]);
  expect(await log.getFiles(`segments/${index}/1`, join(dir, `${index}-out`))).toEqual(["postings"]);
}
