// A router of a dozen lines: paths under /dashboard, pushed with the History API, so every
// screen has a URL that can be bookmarked and reloaded (the server answers index.html for them).
import { useEffect, useState } from "preact/hooks";

export const BASE = "/dashboard";
const listeners = new Set<() => void>();

export function navigate(path: string, replace = false): void {
  const url = `${BASE}${path === "/" ? "" : path}`;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  for (const l of listeners) l();
}

/** The path after /dashboard ("/" for the overview). */
export function currentPath(): string {
  const rest = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "/";
  return rest === "" ? "/" : rest.replace(/\/+$/, "") || "/";
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      removeEventListener("popstate", update);
    };
  }, []);
  return path;
}

/** For <a onClick>: follow the link inside the app unless a modifier asks for a new tab. */
export function linkTo(path: string) {
  return {
    href: `${BASE}${path === "/" ? "" : path}`,
    onClick: (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(path);
    },
  };
}
