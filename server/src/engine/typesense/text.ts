// Text is tokenised before it reaches Typesense, on both sides (indexed fields and queries), so
// that "Crème-brûlée" is the tokens "creme" and "brulee" here exactly as in the embedded engine
// (Typesense on its own would glue "creme-brulee" into one token).
import { tokenize } from "../tokenize.ts";

export const searchText = (text: string): string => tokenize(text).join(" ");
