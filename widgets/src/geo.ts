export interface Position {
  latitude: number;
  longitude: number;
}

/**
 * The caller's position for geo bias, or undefined when geolocation is refused, missing or slow:
 * the widget then simply searches without it. Rounded to about a kilometre, which is all the
 * ranking needs and all a search service should learn.
 */
export function locate(): Promise<Position | undefined> {
  return new Promise((resolve) => {
    if (!("geolocation" in navigator)) return resolve(undefined);
    const round = (n: number) => Math.round(n * 100) / 100;
    navigator.geolocation.getCurrentPosition(
      (p) => resolve({ latitude: round(p.coords.latitude), longitude: round(p.coords.longitude) }),
      () => resolve(undefined),
      { maximumAge: 600_000, timeout: 10_000 },
    );
  });
}
