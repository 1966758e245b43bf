import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { SearchService } from "../services/search.ts";

export function searchHandlers(search: SearchService): Handlers {
  return {
    Search_search: async (c, { query }) => {
      const outcome = await search.search(c.get("principal"), query);
      const body = { suggestions: outcome.suggestions, indexVersion: outcome.indexVersion };
      return c.json(body satisfies ResponseBody<"Search_search", 200>, 200, { "x-sift-region": outcome.region });
    },
  };
}
