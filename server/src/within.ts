/**
 * `work`, or an error naming `what` once it has taken longer than `ms`: a wait with a bound.
 * `error`: the error to reject with instead, made when the bound runs out.
 */
export function within<T>(
  ms: number,
  what: string,
  work: Promise<T>,
  options: { code?: string; error?: () => Error } = {},
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (options.error) return reject(options.error());
      const error = new Error(`${what} took longer than ${ms / 1000} s`);
      reject(options.code === undefined ? error : Object.assign(error, { code: options.code }));
    }, ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
