// A data dir made before a migration must open with the current code: the store's migrations
// run on it, and what it held keeps working (the api_keys restriction columns, 0001).
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { afterAll, expect, test } from "vitest";
import { sha256 } from "../../src/auth/secrets.ts";
import { createLogger } from "../../src/log.ts";
import { ApiKeyService } from "../../src/services/api-keys.ts";
import { openStore } from "../../src/store/open.ts";

const migrations = fileURLToPath(new URL("../../src/store/migrations", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sift-upgrade-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The migrations folder as it stood at `tag`: its SQL files up to it, and a journal ending there. */
function migrationsUpTo(tag: string): string {
  const folder = join(dir, "migrations-old");
  mkdirSync(join(folder, "meta"), { recursive: true });
  const journal = JSON.parse(readFileSync(join(migrations, "meta/_journal.json"), "utf8"));
  const last = journal.entries.findIndex((e: { tag: string }) => e.tag === tag);
  journal.entries = journal.entries.slice(0, last + 1);
  for (const e of journal.entries) cpSync(join(migrations, `${e.tag}.sql`), join(folder, `${e.tag}.sql`));
  writeFileSync(join(folder, "meta/_journal.json"), JSON.stringify(journal));
  return folder;
}

test("a store made by 0000_init opens with today's migrations; its keys work, unrestricted", async () => {
  const key = `sk-sift-adm-${"a".repeat(40)}`;
  const old = await PGlite.create(join(dir, "pglite"));
  await migrate(drizzle({ client: old }), { migrationsFolder: migrationsUpTo("0000_init") });
  await old.exec(`
    insert into tenants (id, name, created_at) values ('ten_old', 'old', 1);
    insert into api_keys (id, tenant_id, type, name, key_hash, display_prefix, created_at)
      values ('key_old', 'ten_old', 'adm', 'before restrictions', '${sha256(key)}', '${key.slice(0, 16)}', 1);
  `);
  await old.close();

  const store = await openStore({ dataDir: dir });
  try {
    const keys = new ApiKeyService(store.db, createLogger("silent"));
    expect(await keys.authenticate(key)).toMatchObject({ keyId: "key_old", expiresAt: null, indexes: null });
    expect(await keys.list("ten_old")).toMatchObject([
      { id: "key_old", expiresAt: null, indexes: null, referrers: null },
    ]);
  } finally {
    await store.close();
  }
});
