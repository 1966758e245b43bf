// The peer libraries, each indexing titles for prefix search. None can return the top 10 by
// weight or distance directly (Orama sorts by weight internally but not by distance), so each
// returns every match and the harness ranks them: what an application built on them would do.
//
// Typo queries use each library's own typo option; exact queries keep the settings they have
// always had, so their figures compare with earlier runs:
// - MiniSearch: `fuzzy`, as many edits as Sift allows the term (server/src/engine/typos.ts), with
//   prefix search on the last term as for exact queries. Its distance is Levenshtein, where a swap
//   of neighbours costs two edits.
// - FlexSearch 0.8 has no typo option at query time (its search options are limit, offset,
//   suggest, resolution, context, cache and resolve; `suggest` drops query terms that match
//   nothing rather than matching them with typos). Its fuzziness is chosen when indexing: the
//   encoder (`Charset.LatinBalance` to `Charset.LatinSoundex`, phonetic codes) or the "tolerant"
//   tokenizer (swapped or missing letters, but whole words only, no prefixes). Typo queries go to a
//   second index, "forward" (prefixes, as the exact one) with `Charset.LatinSoundex`: on the
//   cities' typo queries it found the intended word most often of those choices.
// - Orama: `tolerance`, one Levenshtein bound for every term of the query: the most Sift allows
//   any of its tokens.
import FlexSearch from "flexsearch";
import MiniSearch from "minisearch";
import { create, insertMultiple, search, type Orama } from "@orama/orama";
import { tokenize } from "../server/src/engine/tokenize.ts";
import { allowedTypos } from "../server/src/engine/typos.ts";

export interface PeerDoc {
  i: number;
  title: string;
  weight: number;
}

export interface Peer {
  readonly name: string;
  /** The library's typo option as the typo queries use it, for the report. */
  readonly typoOption: string;
  add(docs: PeerDoc[]): Promise<void>;
  /**
   * Only when the library fixes its fuzziness when indexing (FlexSearch): adds the docs to the
   * index typo queries use. Called after the exact queries were timed, so their memory and build
   * figures stay those of the exact index alone.
   */
  addForTypos?(docs: PeerDoc[]): Promise<void>;
  /**
   * Internal numbers of every record matching the query (all tokens; the last as a prefix); at
   * most `max`. With `typos`, through the library's typo option.
   */
  matches(query: string, max: number, typos: boolean): Promise<number[]>;
  /** Only when the library ranks by weight itself: the top `limit` by weight, and how many matched. */
  topByWeight?(query: string, limit: number, typos: boolean): Promise<{ ids: number[]; count: number }>;
}

export function createPeer(name: string): Peer {
  switch (name) {
    case "minisearch":
      return miniSearch();
    case "flexsearch":
      return flexSearch();
    case "orama":
      return orama();
  }
  throw new Error(`unknown peer ${name}`);
}

function miniSearch(): Peer {
  const index = new MiniSearch<PeerDoc>({ fields: ["title"], idField: "i" });
  const options = {
    prefix: (_term: string, i: number, terms: string[]) => i === terms.length - 1,
    combineWith: "AND" as const,
  };
  // 0 (MiniSearch: no fuzzy search) for short terms and digits, then 1 or 2 edits.
  const fuzzyOptions = { ...options, fuzzy: (term: string) => allowedTypos(term) };
  return {
    name: "MiniSearch 7.2",
    typoOption: "`fuzzy`: 1 edit from 4 letters, 2 from 8 (Levenshtein), prefix on the last term",
    add: async (docs) => index.addAll(docs),
    matches: async (query, _max, typos) =>
      index.search(query, typos ? fuzzyOptions : options).map((r) => r.id as number),
  };
}

function flexSearch(): Peer {
  // "forward" indexes every prefix of every word, FlexSearch's autocomplete mode.
  const index = new FlexSearch.Index({ tokenize: "forward" });
  const typoIndex = new FlexSearch.Index({ tokenize: "forward", encoder: FlexSearch.Charset.LatinSoundex });
  return {
    name: "FlexSearch 0.8",
    typoOption: 'a second index: `tokenize: "forward"`, `encoder: Charset.LatinSoundex`',
    add: async (docs) => {
      for (const d of docs) index.add(d.i, d.title);
    },
    addForTypos: async (docs) => {
      for (const d of docs) typoIndex.add(d.i, d.title);
    },
    matches: async (query, max, typos) => (typos ? typoIndex : index).search(query, { limit: max }) as number[],
  };
}

function orama(): Peer {
  const schema = { title: "string", weight: "number" } as const;
  const db: Orama<typeof schema> = create({ schema });
  const tolerance = (query: string) => Math.max(0, ...tokenize(query).map((t) => allowedTypos(t)));
  return {
    name: "Orama 3.1",
    typoOption: "`tolerance`: the most edits Sift allows any term of the query, for every term",
    add: async (docs) => {
      await insertMultiple(
        db,
        docs.map((d) => ({ id: String(d.i), title: d.title, weight: d.weight })),
        10_000,
      );
    },
    matches: async (query, max, typos) => {
      const r = await search(db, {
        term: query,
        properties: ["title"],
        threshold: 0,
        limit: max,
        ...(typos ? { tolerance: tolerance(query) } : {}),
      });
      return r.hits.map((h) => Number(h.id));
    },
    topByWeight: async (query, limit, typos) => {
      const r = await search(db, {
        term: query,
        properties: ["title"],
        threshold: 0,
        limit,
        sortBy: { property: "weight", order: "DESC" },
        ...(typos ? { tolerance: tolerance(query) } : {}),
      });
      return { ids: r.hits.map((h) => Number(h.id)), count: r.count };
    },
  };
}
