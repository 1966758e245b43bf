// Many rows in one statement as one array parameter per column (`unnest($1::text[], …)`), rather
// than a parameter per value: the statement's text then does not depend on the row count, so it
// is prepared once (D-286), and the query builder walks a few parameters instead of thousands.
import { type SQL, sql } from "drizzle-orm";

/** A JS array as one parameter (the query builder would otherwise spread it into a list). */
export const array = (values: unknown[]): SQL => sql`${sql.param(values)}`;
