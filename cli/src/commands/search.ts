// `sift search QUERY --index NAME --service NAME`: the ranked suggestions, as the widget shows them.
import type { SiftClient } from "@sift/sdk";
import { UsageError } from "../output.ts";

export const SEARCH_HELP = `usage: sift search QUERY --index NAME --service NAME [options]

Searches an index as the autocomplete does (the last word is a prefix) and prints the suggestions,
best first: id, title and, with --weighted, weight.

  --index NAME, --service NAME   the index to search (required)
  --limit N                      how many suggestions (1 to 100, default 10)
  --weighted                     rank by record weight among equal matches
  --filter EXPR                  e.g. 'data.price<20 && data.inStock=true'
  --scope all                    match whole words of the title and of data
  --json                         print Sift's answer as JSON`;

export interface SearchArgs {
  query: string | undefined;
  index: string | undefined;
  service: string | undefined;
  limit: string | undefined;
  weighted: boolean;
  filter: string | undefined;
  scope: string | undefined;
  json: boolean;
}

export async function search(sift: SiftClient, args: SearchArgs): Promise<string> {
  if (!args.query || !args.index || !args.service) throw new UsageError(SEARCH_HELP);
  const limit = args.limit === undefined ? undefined : Number(args.limit);
  if (limit !== undefined && !Number.isInteger(limit)) throw new UsageError(`--limit must be a whole number`);
  if (args.scope !== undefined && args.scope !== "title" && args.scope !== "all")
    throw new UsageError(`--scope must be title or all`);
  const answer = await sift.search({
    query: args.query,
    indexName: args.index,
    serviceName: args.service,
    weighted: args.weighted,
    ...(limit === undefined ? {} : { limit }),
    ...(args.filter === undefined ? {} : { filter: args.filter }),
    ...(args.scope === undefined ? {} : { scope: args.scope as "title" | "all" }),
  });
  if (args.json) return `${JSON.stringify(answer, null, 2)}\n`;
  if (answer.suggestions.length === 0) return `no suggestions (version ${answer.indexVersion})\n`;
  const lines = answer.suggestions.map(
    (s, i) =>
      `${String(i + 1).padStart(3)}. ${s.title}  [${s.id}]${args.weighted && s.weight !== undefined ? `  weight ${s.weight}` : ""}`,
  );
  return `${lines.join("\n")}\n(version ${answer.indexVersion})\n`;
}
