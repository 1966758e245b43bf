// Relevance as people type, on the cities data (weight = population, `weighted=true`):
//   npm run bench:relevance
// For the 400 most populous distinct city names, every prefix of 1 to 6 characters is searched and
// the rank of the intended city (the most populous city of that name) is recorded; names of six
// letters or more are also searched with one typo. Reports success@1 and MRR@10 per prefix length
// and success@5 for typos, and writes them to the relevance section of RESULTS.md.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createEmbeddedEngine } from "../server/src/engine/embedded/index.ts";
import { tokenize } from "../server/src/engine/tokenize.ts";
import type { SearchRecord } from "../server/src/ports/engine.ts";
import { cityRecords, prng } from "./datasets.ts";

const INDEX = "cities";
const NAMES = 400;
const PREFIX_LENGTHS = [1, 2, 3, 4, 5, 6];
const TYPO_MIN_LETTERS = 6;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz";
/** Queries whose top results are printed, so a reader sees what a person would. */
const SHOWCASE = ["par", "mos", "lon", "ber", "londn", "amsterdma", "berln", "sao paolo"];

interface Target {
  name: string;
  id: string;
}

interface Cell {
  queries: number;
  atOne: number;
  atFive: number;
  reciprocalRanks: number;
}

const records = cityRecords();
const targets = mostPopulousNames(records, NAMES);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-relevance-"));
const engine = createEmbeddedEngine({ dataDir });
await engine.open();
await engine.createIndex(INDEX);
const writer = await engine.bulkWriter(INDEX, 1);
for (let i = 0; i < records.length; i += 10_000) await writer.add(records.slice(i, i + 10_000));
await writer.commit();

const search = async (query: string): Promise<string[]> =>
  (await engine.search(INDEX, "1", { query, scope: "title", weighted: true, limit: 10 })).hits.map(
    (hit) => hit.record.id,
  );

const prefixCells = new Map<number, Cell>();
for (const length of PREFIX_LENGTHS) {
  const cell = emptyCell();
  for (const target of targets) {
    const chars = [...target.name];
    if (chars.length < length) continue;
    record(cell, await search(chars.slice(0, length).join("")), target.id);
  }
  prefixCells.set(length, cell);
}

const random = prng(14);
const typoCell = emptyCell();
const typoExamples: string[] = [];
for (const target of targets) {
  if (letterCount(target.name) < TYPO_MIN_LETTERS) continue;
  const typo = oneTypo(target.name, random);
  record(typoCell, await search(typo), target.id);
  if (typoExamples.length < 8) typoExamples.push(`${target.name} → ${typo}`);
}

const byId = new Map(records.map((r) => [r.id, r]));
const showcase: string[] = [];
for (const query of SHOWCASE) {
  const top = (await search(query)).slice(0, 3).map((id) => byId.get(id)!.title);
  showcase.push(`| \`${query}\` | ${top.length ? top.join(", ") : "(nothing)"} |`);
}
await engine.close();
fs.rmSync(dataDir, { recursive: true, force: true });

const pct = (n: number, d: number) => (d === 0 ? "–" : `${((100 * n) / d).toFixed(1)}%`);
const mrr = (c: Cell) => (c.queries === 0 ? "–" : (c.reciprocalRanks / c.queries).toFixed(3));
const rows = PREFIX_LENGTHS.map((length) => {
  const c = prefixCells.get(length)!;
  return `| ${length} | ${c.queries} | ${pct(c.atOne, c.queries)} | ${mrr(c)} |`;
});

const section = `<!-- relevance:start -->
## Relevance as people type (\`npm run bench:relevance\`)

- Date: ${new Date().toISOString().slice(0, 10)}. Embedded engine, in process, on the cities data (${records.length.toLocaleString("en-US")} records, weight = population), \`scope=title\`, \`weighted=true\`, top 10.
- Targets: the ${NAMES} most populous distinct city names (names compared after folding); the intended result of a name is its most populous city.
- Prefixes: the first 1 to 6 characters of each name as typed (a space included); names shorter than the prefix are left out.
- Typos: one edit (a substitution, deletion, insertion or swap of neighbours, never of the first letter) at a random place in each name of ${TYPO_MIN_LETTERS} letters or more, seeded, e.g. ${typoExamples.slice(0, 4).join("; ")}.

| prefix length | queries | success@1 | MRR@10 |
|---|---|---|---|
${rows.join("\n")}

| one typo, names of ${TYPO_MIN_LETTERS}+ letters | queries | success@1 | success@5 | MRR@10 |
|---|---|---|---|---|
| whole name with one edit | ${typoCell.queries} | ${pct(typoCell.atOne, typoCell.queries)} | ${pct(typoCell.atFive, typoCell.queries)} | ${mrr(typoCell)} |

First three results for a few queries:

| query | top 3 |
|---|---|
${showcase.join("\n")}
<!-- relevance:end -->`;

console.log(section);
const resultsFile = path.join(import.meta.dirname, "RESULTS.md");
const current = fs.readFileSync(resultsFile, "utf8");
fs.writeFileSync(
  resultsFile,
  current.includes("<!-- relevance:start -->")
    ? current.replace(/<!-- relevance:start -->[\s\S]*<!-- relevance:end -->/, section)
    : `${current.trimEnd()}\n\n${section}\n`,
);
console.log(`wrote the relevance section of ${resultsFile}`);

function emptyCell(): Cell {
  return { queries: 0, atOne: 0, atFive: 0, reciprocalRanks: 0 };
}

function record(cell: Cell, ids: string[], intended: string): void {
  const rank = ids.indexOf(intended) + 1;
  cell.queries++;
  if (rank === 1) cell.atOne++;
  if (rank >= 1 && rank <= 5) cell.atFive++;
  if (rank >= 1) cell.reciprocalRanks += 1 / rank;
}

/** The most populous city of each distinct (folded) name, most populous names first. */
function mostPopulousNames(all: readonly SearchRecord[], count: number): Target[] {
  const sorted = [...all].sort((a, b) => (b.weight ?? 0) - (a.weight ?? 0));
  const seen = new Set<string>();
  const out: Target[] = [];
  for (const r of sorted) {
    const key = tokenize(r.title).join(" ");
    if (key === "" || seen.has(key)) continue;
    seen.add(key);
    out.push({ name: r.title, id: r.id });
    if (out.length === count) break;
  }
  return out;
}

function letterCount(name: string): number {
  return [...name].filter((ch) => /\p{L}/u.test(ch)).length;
}

/** One edit at a letter other than the first: substitution, deletion, insertion or a swap. */
function oneTypo(name: string, random: () => number): string {
  const chars = [...name];
  const letters = chars.map((ch, i) => (i > 0 && /\p{L}/u.test(ch) ? i : -1)).filter((i) => i > 0);
  const at = letters[Math.floor(random() * letters.length)]!;
  const letter = () => ALPHABET[Math.floor(random() * ALPHABET.length)]!;
  switch (Math.floor(random() * 4)) {
    case 0: {
      // A substitution that changes the letter (folded), or it would not be a typo.
      let replacement = letter();
      while (replacement === tokenize(chars[at]!)[0]) replacement = letter();
      chars[at] = replacement;
      break;
    }
    case 1:
      chars.splice(at, 1);
      break;
    case 2:
      chars.splice(at, 0, letter());
      break;
    default: {
      // Swap with the next letter; at the end of a word, with the previous one.
      const other = /\p{L}/u.test(chars[at + 1] ?? "") ? at + 1 : at - 1;
      if (other < 1 || tokenize(chars[other]!)[0] === tokenize(chars[at]!)[0]) {
        chars.splice(at, 1);
      } else {
        [chars[at], chars[other]] = [chars[other]!, chars[at]!];
      }
    }
  }
  return chars.join("");
}
