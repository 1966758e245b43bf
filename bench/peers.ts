// The peer libraries, each indexing titles for prefix search. None can return the top 10 by
// weight or distance directly (Orama sorts by weight internally but not by distance), so each
// returns every match and the harness ranks them: what an application built on them would do.
import FlexSearch from "flexsearch";
import MiniSearch from "minisearch";
import { create, insertMultiple, search, type Orama } from "@orama/orama";

export interface PeerDoc {
  i: number;
  title: string;
  weight: number;
}

export interface Peer {
  readonly name: string;
  add(docs: PeerDoc[]): Promise<void>;
  /** Internal numbers of every record matching the query (all tokens; the last as a prefix); at most `max`. */
  matches(query: string, max: number): Promise<number[]>;
  /** Only when the library ranks by weight itself: the top `limit` by weight. */
  topByWeight?(query: string, limit: number): Promise<number[]>;
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
  return {
    name: "MiniSearch 7.2",
    add: async (docs) => index.addAll(docs),
    matches: async (query) => index.search(query, options).map((r) => r.id as number),
  };
}

function flexSearch(): Peer {
  // "forward" indexes every prefix of every word, FlexSearch's autocomplete mode.
  const index = new FlexSearch.Index({ tokenize: "forward" });
  return {
    name: "FlexSearch 0.8",
    add: async (docs) => {
      for (const d of docs) index.add(d.i, d.title);
    },
    matches: async (query, max) => index.search(query, { limit: max }) as number[],
  };
}

function orama(): Peer {
  const schema = { title: "string", weight: "number" } as const;
  const db: Orama<typeof schema> = create({ schema });
  return {
    name: "Orama 3.1",
    add: async (docs) => {
      await insertMultiple(
        db,
        docs.map((d) => ({ id: String(d.i), title: d.title, weight: d.weight })),
        10_000,
      );
    },
    matches: async (query, max) => {
      const r = await search(db, { term: query, properties: ["title"], threshold: 0, limit: max });
      return r.hits.map((h) => Number(h.id));
    },
    topByWeight: async (query, limit) => {
      const r = await search(db, {
        term: query,
        properties: ["title"],
        threshold: 0,
        limit,
        sortBy: { property: "weight", order: "DESC" },
      });
      return r.hits.map((h) => Number(h.id));
    },
  };
}
